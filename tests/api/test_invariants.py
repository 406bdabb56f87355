"""The store's invariants (``controller.sched.invariants``): each rule on crafted bad rows.

Each test breaks one invariant by writing the store directly, then checks
that the rule names it, that a repair mends it, and that the store is clean
afterwards; the first tests show that a store the controller wrote itself,
mid-transition included, is clean.  The harness config: KillWait 2,
heartbeat 1 s, so the report window is report_grace 2 + 2 x 1 + 10 = 14 s
plus SETTLE 5 s = 19 s.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import event

from controller.context import Controller
from controller.sched.invariants import ALL_RULES, Report, check
from controller.store.db import Database
from controller.store.models import JobRow, NodeRow, StepRow
from slurmlite import errors
from slurmlite.config import parse_config
from slurmlite.protocol import CancelRequest, JobCompletion
from tests.api.conftest import ALICE, KEY, ROOT
from tests.recording_agents import RecordingAgentClient

WINDOW = 19.0


def run_check(h, repair: bool = False) -> Report:  # type: ignore[no-untyped-def]
    return check(h.ctl.db, h.ctl.cfg, h.clock(), repair)


def rules(report: Report) -> list[tuple[str, int]]:
    return [(v.rule, v.job) for v in report.violations]


def running(h, **fields) -> int:  # type: ignore[no-untyped-def]
    jid = h.submit(**fields)["job_id"]
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    return jid


def edit(h, jid: int, **values) -> None:  # type: ignore[no-untyped-def]
    with h.ctl.db.write() as s:
        row = s.get(JobRow, jid)
        for k, v in values.items():
            setattr(row, k, v)


def batch_step(h, jid: int) -> dict:  # type: ignore[no-untyped-def]
    return next(s for s in h.job(jid)["steps"] if s["step_id"] == "batch")


def test_every_rule_has_a_name_an_invariant_and_a_repair():
    names = [r.name for r in ALL_RULES]
    assert len(set(names)) == len(names) == 8
    assert all(r.says and r.repair for r in ALL_RULES)


def test_no_rule_scans_the_job_history_on_sqlite(tmp_path):
    """A lab keeps a million finished jobs: every rule reads jobs and steps by an index
    (SQLite's plan says SEARCH, never SCAN, for both tables), so a start stays fast."""
    db = Database(f"sqlite:///{tmp_path}/s.db")
    cfg = parse_config("NodeName=n1 CPUs=1\nPartitionName=p Nodes=n1\n", path=str(tmp_path))
    selects: list[tuple[str, object]] = []

    def grab(conn, cursor, statement, parameters, context, executemany):  # type: ignore[no-untyped-def]
        if statement.lstrip().upper().startswith("SELECT"):
            selects.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", grab)
    check(db, cfg, 1_800_000_000.0)
    event.remove(db.engine, "before_cursor_execute", grab)
    with db.engine.connect() as c:
        plans = [
            " | ".join(r[-1] for r in c.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params))
            for sql, params in selects
        ]
    db.close()
    assert len(plans) == 12
    assert not [p for p in plans if "SCAN jobs" in p or "SCAN steps" in p], plans


def test_what_the_controller_writes_is_clean_even_mid_transition(harness):
    h = harness
    done = running(h)
    h.ctl.jobs.complete("n1", JobCompletion("n1", done, 0, "batch", 0))
    cancelled = running(h)
    h.ctl.jobs.cancel(ALICE, CancelRequest(job_ids=[cancelled]))  # CANCELLED+COMPLETING
    live = running(h, time_limit=10)
    waiting = h.submit(nodes_min=2, ntasks_per_node=2)["job_id"]  # PENDING: n1, n2 are busy
    h.tick()
    assert h.job(cancelled)["state"] == "CANCELLED" and h.job(live)["state"] == "RUNNING"
    assert h.job(waiting)["state"] == "PENDING"
    assert run_check(h).violations == []
    h.pass_time(WINDOW + 60)  # still COMPLETING: it waits for n1, which is up
    assert run_check(h).violations == []
    assert batch_step(h, cancelled)["state"] == "RUNNING"  # n1 has not reported yet
    h.agents.take("launch", 3)
    h.agents.assert_nothing_else()


def test_a_batch_step_left_open_in_a_finished_job_is_ended_cancelled(harness):
    h = harness
    jid = running(h)
    end = h.clock() + 3
    edit(h, jid, state="COMPLETED", end_time=end, exit_code=0)  # the step was never ended
    h.clock.advance(WINDOW)  # 16 s after the end: inside the window
    assert run_check(h).violations == []
    h.clock.advance(4)  # 20 s after the end
    report = run_check(h)
    assert [(v.rule, v.job, v.step) for v in report.violations] == [
        ("finished_job_open_step", jid, f"{jid}.batch")
    ]
    assert report.violations[0].what == f"step {jid}.batch RUNNING, job COMPLETED 20 s ago"
    assert batch_step(h, jid)["state"] == "RUNNING"  # a check alone changes nothing
    fixed = run_check(h, repair=True)
    assert [v.what for v in fixed.repairs] == [f"step {jid}.batch ended CANCELLED at the job's end"]
    step = batch_step(h, jid)
    assert (step["state"], step["end_time"]) == ("CANCELLED", end)
    assert run_check(h).violations == []


def test_a_step_of_a_job_that_no_longer_exists_is_closed(harness):
    h = harness
    with h.ctl.db.write() as s:
        s.add(StepRow(job_id=999, step_id="0", name="x", state="RUNNING", start_time=h.clock()))
    assert rules(run_check(h)) == [("finished_job_open_step", 999)]
    run_check(h, repair=True)
    assert run_check(h).violations == []


def test_a_pending_job_holding_an_allocation_is_released(harness):
    h = harness
    jid = running(h)
    edit(h, jid, state="PENDING", start_time=None, end_time=None, flags="COMPLETING")
    report = run_check(h)
    assert rules(report) == [("idle_job_holds_nodes", jid)]
    assert report.violations[0].what.startswith("PENDING but holds an allocation and nodes n")
    run_check(h, repair=True)
    job = h.job(jid)
    assert (job["nodes"], job["batch_host"], job["state"]) == ([], None, "PENDING")
    assert run_check(h).violations == []
    h.tick()  # and it can run again: nothing is held twice
    assert h.job(jid)["state"] == "RUNNING"
    h.agents.take("launch", 2)
    h.agents.assert_nothing_else()


def test_a_completing_job_whose_batch_host_is_gone_or_long_down_is_released(harness):
    h = harness
    gone, down = running(h, req_nodes=["n1"]), running(h, req_nodes=["n2"])
    edit(h, gone, state="CANCELLED", end_time=h.clock(), flags="COMPLETING", batch_host="n7")
    edit(h, down, state="CANCELLED", end_time=h.clock(), flags="COMPLETING")
    with h.ctl.db.write() as s:
        n2 = s.get(NodeRow, "n2")
        n2.down, n2.reason, n2.reason_time = True, "test", h.clock()
    assert rules(run_check(h)) == [("completing_nobody_reports", gone)]  # n2: just DOWN
    h.clock.advance(WINDOW + 1)
    report = run_check(h, repair=True)
    assert [(v.rule, v.job) for v in report.repairs][:2] == [
        ("completing_nobody_reports", gone),
        ("completing_nobody_reports", down),
    ]
    # the next rule saw the repair: their batch steps, open past the window, are closed
    assert [v.rule for v in report.repairs[2:]] == ["finished_job_open_step"] * 2
    assert "COMPLETING" not in h.job(gone)["flags"] + h.job(down)["flags"]
    assert run_check(h).violations == []
    h.agents.take("launch", 2)


def test_a_finished_allocation_completing_without_a_running_step(harness):
    h = harness
    jid = running(h, allocation=True)
    edit(h, jid, state="COMPLETED", end_time=h.clock(), flags="COMPLETING")
    assert rules(run_check(h)) == [("completing_nobody_reports", jid)]
    run_check(h, repair=True)
    assert run_check(h).violations == []


def test_a_running_job_on_an_unknown_node_takes_the_node_failure_path(harness):
    h = harness
    requeued = running(h, nodes_min=2, ntasks_per_node=1)  # on n1 and n2
    failed = running(h, requeue=False, req_nodes=["n1"], ntasks=1)
    edit(h, requeued, nodes="n1,n9")
    edit(h, failed, nodes="n8", batch_host="n8")
    report = run_check(h)
    assert rules(report) == [
        ("running_job_missing_node", requeued),
        ("running_job_missing_node", failed),
    ]
    assert report.violations[1].what == "RUNNING on n8, a node the store does not know"
    h.agents.take("launch", 2)
    fixed = run_check(h, repair=True)
    assert [o.node for o in fixed.orders] == ["n1"]  # the node it still has is told to stop
    job = h.job(requeued)
    assert (job["state"], job["reason"], job["restarts"]) == ("PENDING", "BeginTime", 1)
    job = h.job(failed)
    assert (job["state"], job["reason"]) == ("NODE_FAIL", "NodeDown")
    assert batch_step(h, failed)["state"] == "CANCELLED"  # no node will report it
    assert run_check(h).violations == []


def test_job_times_end_after_start_and_a_finished_job_has_an_end(harness):
    h = harness
    early = running(h)
    start = h.job(early)["start_time"]
    edit(h, early, state="FAILED", end_time=start - 30, exit_code=256)
    never = h.submit()["job_id"]
    edit(h, never, state="CANCELLED", end_time=None)
    report = run_check(h)
    # early's batch step is open and its (wrong) end 30 s ago: the step rule sees it too
    assert sorted(rules(report)) == [
        ("finished_job_open_step", early),
        ("job_times", early),
        ("job_times", never),
    ]
    assert {v.job: v.what for v in report.violations if v.rule == "job_times"} == {
        early: "FAILED ends 30 s before it started",
        never: "CANCELLED without an end time",
    }
    fixed = run_check(h, repair=True)
    assert h.job(early)["end_time"] == start
    assert h.job(never)["end_time"] == h.job(never)["submit_time"]
    # once mended, early ended just now: its open step is inside the window, left for later
    assert [v.rule for v in fixed.repairs] == ["job_times", "job_times"]
    assert run_check(h).violations == []
    h.clock.advance(WINDOW + 1)  # then the step rule closes it
    assert rules(run_check(h)) == [("finished_job_open_step", early)]
    run_check(h, repair=True)
    assert run_check(h).violations == []
    h.agents.take("launch", 1)


def test_the_check_route_is_for_operators_and_repairs_on_post(harness):
    h = harness
    jid = running(h)
    edit(h, jid, state="PENDING", start_time=None, end_time=None)
    r = h.client.get("/v1/check")  # alice is no operator
    assert r.status_code == 403
    assert r.json()["errno"] == errors.ESLURM_ACCESS_DENIED
    assert r.json()["error"] == "Access/permission denied"
    assert h.client.post("/v1/check/repair").status_code == 403
    h.as_user(ROOT)
    answer = h.client.get("/v1/check").json()
    assert [(v["rule"], v["job"]) for v in answer["violations"]] == [("idle_job_holds_nodes", jid)]
    assert answer["repairs"] == []
    answer = h.client.post("/v1/check/repair").json()
    assert [v["line"] for v in answer["repairs"]] == [
        f'rule=idle_job_holds_nodes job={jid} what="released its allocation"'
    ]
    assert h.client.get("/v1/check").json() == {"violations": [], "repairs": []}
    h.as_user(ALICE)


def test_a_controller_started_on_a_broken_store_repairs_it_first_and_logs_it(
    harness, store_url, caplog
):
    h = harness
    jid = running(h, requeue=False)
    edit(h, jid, nodes="gone1", batch_host="gone1")
    agents = RecordingAgentClient()
    ctl = Controller(h.ctl.cfg, KEY, db=Database(store_url), agents=agents, clock=h.clock)

    async def start_and_stop() -> None:
        await ctl.start()
        await ctl.stop()

    with caplog.at_level(logging.WARNING, logger="slurmctld.check"):
        asyncio.run(start_and_stop())
    lines = [r.getMessage() for r in caplog.records if r.name == "slurmctld.check"]
    assert lines == [
        f"event=invariant_repair rule=running_job_missing_node job={jid} "
        'what="node failure: NODE_FAIL (NodeDown)"'
    ]
    assert h.job(jid)["state"] == "NODE_FAIL"
    agents.assert_nothing_else()  # its one node is unknown: nobody to tell
    h.agents.take("launch", 1)


def test_the_loops_node_failure_ends_the_batch_step_with_the_job(harness):
    """Found by the step rule: a NODE_FAIL job's batch step stayed RUNNING for ever."""
    from tests.api.test_reconcile import registration

    h = harness
    jid = running(h, requeue=False)
    node = h.job(jid)["batch_host"]
    h.ctl.nodes.register(registration(node, []))  # its agent came back without it
    h.clock.advance(6)  # past the 5 s grace
    h.tick()
    assert h.job(jid)["state"] == "NODE_FAIL"
    step = batch_step(h, jid)
    assert (step["state"], step["end_time"]) == ("CANCELLED", h.clock())
    h.clock.advance(WINDOW + 1)
    assert run_check(h).violations == []
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_cancelled_job_whose_node_goes_down_ends_its_batch_step(harness):
    h = harness
    jid = running(h)
    h.ctl.jobs.cancel(ALICE, CancelRequest(job_ids=[jid]))  # CANCELLED+COMPLETING
    h.clock.advance(11)  # no heartbeat for more than SlurmdTimeout (10 s): its node is DOWN
    h.tick()
    job = h.job(jid)
    assert (job["state"], "COMPLETING" in job["flags"]) == ("CANCELLED", False)
    assert batch_step(h, jid)["state"] == "CANCELLED"
    h.clock.advance(WINDOW + 1)
    assert run_check(h).violations == []
    h.agents.take("launch", 1)
