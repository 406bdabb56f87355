"""Job dependencies and begin times through the API and the scheduler pass (spec §1.8).

The harness cluster has two 2-CPU nodes; a job asks one CPU unless a test
says otherwise, so a dependent job would start at once but for its dependency.
"""

from __future__ import annotations

from slurmlite import errors
from slurmlite.protocol import CancelRequest, JobCompletion
from tests.api.conftest import ALICE


def end(h, jid: int, exit_code: int = 0) -> None:  # type: ignore[no-untyped-def]
    msg = JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=exit_code)
    h.ctl.jobs.complete(h.job(jid)["batch_host"], msg)


def seen(h, jid: int) -> tuple[str, str, str | None]:  # type: ignore[no-untyped-def]
    job = h.job(jid)
    return job["state"], job["reason"], job["dependency"]


def test_afterok_waits_for_the_target_then_runs(harness):
    h = harness
    first = h.submit()["job_id"]
    h.tick()
    second = h.submit(dependency=f"afterok:{first}")["job_id"]
    assert seen(h, second) == ("PENDING", "Dependency", f"afterok:{first}(unfulfilled)")
    h.tick()
    assert seen(h, second) == ("PENDING", "Dependency", f"afterok:{first}(unfulfilled)")
    end(h, first)
    h.tick()
    assert seen(h, second)[::2] == ("RUNNING", None)


def test_afterok_on_a_failed_job_is_never_satisfied(harness):
    h = harness
    first = h.submit()["job_id"]
    h.tick()
    second = h.submit(dependency=f"afterok:{first}")["job_id"]
    end(h, first, exit_code=1 << 8)
    h.tick()
    assert seen(h, second) == ("PENDING", "DependencyNeverSatisfied", f"afterok:{first}(failed)")
    h.tick()
    assert seen(h, second)[:2] == ("PENDING", "DependencyNeverSatisfied")


def test_afternotok_runs_after_a_failure_only(harness):
    h = harness
    bad, good = h.submit()["job_id"], h.submit()["job_id"]
    h.tick()
    after_bad = h.submit(dependency=f"afternotok:{bad}")["job_id"]
    after_good = h.submit(dependency=f"afternotok:{good}")["job_id"]
    end(h, bad, exit_code=1 << 8)
    end(h, good)
    h.tick()
    assert seen(h, after_bad)[:1] == ("RUNNING",)
    assert seen(h, after_good)[:2] == ("PENDING", "DependencyNeverSatisfied")


def test_kill_on_invalid_dep_cancels_the_job(harness):
    h = harness
    first = h.submit()["job_id"]
    h.tick()
    second = h.submit(dependency=f"afterok:{first}", kill_invalid_dep=True)["job_id"]
    end(h, first, exit_code=1 << 8)
    h.tick()
    assert seen(h, second)[:2] == ("CANCELLED", "DependencyNeverSatisfied")


def test_kill_invalid_depend_in_the_config(harness):
    h = harness
    h.ctl.loop.parts.cfg.dependency_parameters["kill_invalid_depend"] = ""
    first = h.submit()["job_id"]
    h.tick()
    kept = h.submit(dependency=f"afterok:{first}", kill_invalid_dep=False)["job_id"]
    killed = h.submit(dependency=f"afterok:{first}")["job_id"]
    end(h, first, exit_code=1 << 8)
    h.tick()
    assert seen(h, killed)[0] == "CANCELLED"
    assert seen(h, kept)[:2] == ("PENDING", "DependencyNeverSatisfied")


def test_an_unknown_target_counts_as_ended(harness):
    h = harness
    jid = h.submit(dependency="afterok:999999")["job_id"]
    h.tick()
    assert seen(h, jid)[::2] == ("RUNNING", None)


def test_bad_dependency_syntax_is_a_dependency_problem(harness):
    r = harness.post_job(dependency="afterwards:1")
    assert r.status_code != 500
    assert r.json()["errno"] == errors.ESLURM_DEPENDENCY


def test_any_of_and_all_of(harness):
    h = harness
    a, b = h.submit()["job_id"], h.submit()["job_id"]
    h.tick()
    either = h.submit(dependency=f"afterany:{a}?afterany:{b}")["job_id"]
    both = h.submit(dependency=f"afterany:{a}:{b}")["job_id"]
    end(h, a)
    h.tick()
    assert seen(h, either)[0] == "RUNNING"
    assert seen(h, both) == ("PENDING", "Dependency", f"afterany:{b}(unfulfilled)")


def test_after_plus_minutes(harness):
    h = harness
    first = h.submit(time_limit=60)["job_id"]
    h.tick()
    second = h.submit(dependency=f"after:{first}+2")["job_id"]
    h.pass_time(60)
    h.tick()
    assert seen(h, second)[:2] == ("PENDING", "Dependency")
    h.pass_time(61)
    h.tick()
    assert seen(h, second)[0] == "RUNNING"


def test_singleton_waits_for_the_same_name_and_user(harness):
    h = harness
    first = h.submit(name="solo")["job_id"]
    h.tick()
    second = h.submit(name="solo", dependency="singleton")["job_id"]
    other = h.submit(name="other", dependency="singleton")["job_id"]
    h.tick()
    assert seen(h, second)[:2] == ("PENDING", "Dependency")
    assert seen(h, other)[0] == "RUNNING"
    end(h, first)
    h.tick()
    assert seen(h, second)[0] == "RUNNING"


def test_begin_time_in_the_future_waits(harness):
    h = harness
    now = h.clock()
    jid = h.submit(begin_time=now + 120)["job_id"]
    assert seen(h, jid)[:2] == ("PENDING", "BeginTime")
    h.tick()
    assert seen(h, jid)[:2] == ("PENDING", "BeginTime")
    h.pass_time(121)
    h.tick()
    assert seen(h, jid)[0] == "RUNNING"


def update(h, jid: int, **body) -> int:  # type: ignore[no-untyped-def]
    r = h.client.post("/v1/jobs/update", json={"job_ids": [jid], **body})
    assert r.status_code == 200, r.text
    return r.json()["results"][0]["errno"]


def test_update_dependency_begin_time_and_node_count_while_pending(harness):
    h = harness
    first = h.submit(time_limit=60)["job_id"]
    h.tick()
    jid = h.submit(dependency=f"afterok:{first}")["job_id"]
    assert update(h, jid, dependency="afterok:x") == errors.ESLURM_DEPENDENCY
    assert update(h, jid, dependency=f"afterany:{first}") == 0
    assert seen(h, jid) == ("PENDING", "Dependency", f"afterany:{first}(unfulfilled)")
    assert update(h, jid, dependency="", begin_time=h.clock() + 300, nodes_min=2, nodes_max=2) == 0
    job = h.job(jid)
    assert (job["reason"], job["dependency"], job["num_nodes"]) == ("BeginTime", None, 2)
    h.tick()
    assert seen(h, jid)[:2] == ("PENDING", "BeginTime")
    assert update(h, first, dependency="singleton") == errors.ESLURM_JOB_NOT_PENDING


def test_another_user_cannot_change_the_dependency(harness):
    from tests.api.conftest import ALICE, BOB

    h = harness
    jid = h.submit(dependency="afterok:999999", hold=True)["job_id"]
    h.as_user(BOB)
    assert update(h, jid, dependency="") == errors.ESLURM_USER_ID_MISSING
    h.as_user(ALICE)


def test_eligible_time_is_unknown_until_the_dependency_holds(harness):
    h = harness
    first = h.submit()["job_id"]
    h.tick()
    jid = h.submit(dependency=f"afterany:{first}")["job_id"]
    assert h.job(jid)["eligible_time"] is None
    end(h, first)
    h.tick()
    assert h.job(jid)["eligible_time"] == h.clock()


def test_invariants_catch_a_start_despite_a_dependency_or_begin_time(harness):
    from controller.sched.invariants import check
    from controller.store.models import JobRow

    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    assert not check(h.ctl.db, h.ctl.cfg, h.clock()).violations
    with h.ctl.db.write() as s:
        row = s.get(JobRow, jid)
        row.dependency, row.eligible_time = "afterok:99", row.start_time + 60
    found = {v.rule for v in check(h.ctl.db, h.ctl.cfg, h.clock()).violations}
    assert found == {"started_with_dependency", "started_before_begin"}
    check(h.ctl.db, h.ctl.cfg, h.clock(), repair=True)
    assert not check(h.ctl.db, h.ctl.cfg, h.clock()).violations


def test_a_job_cancelled_while_it_waits_keeps_its_dependency_and_reason(harness):
    from controller.sched.invariants import check

    h = harness
    first = h.submit(time_limit=10)["job_id"]
    h.tick()
    waiting = h.submit(dependency=f"afterok:{first}")["job_id"]
    h.tick()
    doomed = h.submit(dependency=f"afterok:{first}")["job_id"]
    h.ctl.jobs.cancel(ALICE, CancelRequest(job_ids=[waiting]))
    assert seen(h, waiting) == ("CANCELLED", "Dependency", f"afterok:{first}(unfulfilled)")
    end(h, first, exit_code=1 << 8)
    h.tick()
    h.ctl.jobs.cancel(ALICE, CancelRequest(job_ids=[doomed]))
    # sacct's Reason: what each waited for (and neither is in sacct's default window)
    assert seen(h, doomed)[:2] == ("CANCELLED", "DependencyNeverSatisfied")
    assert h.job(doomed)["eligible_time"] is None
    assert not check(h.ctl.db, h.ctl.cfg, h.clock()).violations  # neither started


def test_aftercorr_lets_each_task_go_when_its_own_target_task_ends(harness):
    from sqlalchemy import select

    from controller.store.models import JobRow

    h = harness
    target = h.submit(array="0-2", time_limit=10)["job_id"]
    for _ in range(3):
        h.tick()  # target's three tasks run (one CPU each)
    corr = h.submit(array="0-2", dependency=f"aftercorr:{target}")["job_id"]
    h.tick()

    def tasks() -> dict[int | None, tuple[int, str, str | None]]:
        with h.ctl.jobs.db.read() as s:
            q = select(JobRow).where(JobRow.array_job_id == corr)
            return {r.array_task_id: (r.id, r.state, r.array_pending) for r in s.scalars(q)}

    assert tasks() == {None: (corr, "PENDING", "0-2")}  # nothing of target has ended

    def end_task(index: int) -> None:
        with h.ctl.jobs.db.read() as s:
            q = select(JobRow).where(JobRow.array_job_id == target, JobRow.array_task_id == index)
            row = s.scalars(q).one()
            job_id, host = row.id, row.batch_host
        msg = JobCompletion(node=host, job_id=job_id, restarts=0, step_id="batch", exit_code=0)
        h.ctl.jobs.complete(host, msg)

    end_task(1)
    for _ in range(3):
        h.tick()
    got = tasks()
    # task 1 went ahead (split off from the remainder); 0 and 2 wait for their own
    assert got[1][1] == "RUNNING" and got[None][1:] == ("PENDING", "0,2"), got
    end_task(0)
    for _ in range(3):
        h.tick()
    got = tasks()
    # task 0 went ahead too while target's task 2 still runs; task 2 waits for it
    assert got[0][1] == "RUNNING" and got[1][1] == "RUNNING", got
    assert got[None] == (corr, "PENDING", "2"), got
    end_task(2)
    for _ in range(3):
        h.tick()
    assert tasks()[2][1] == "RUNNING", tasks()


def test_aftercorr_on_a_failed_target_task_fails_that_task_only(harness):
    from sqlalchemy import select

    from controller.store.models import JobRow

    h = harness
    target = h.submit(array="0-1", time_limit=10)["job_id"]
    for _ in range(2):
        h.tick()
    corr = h.submit(array="0-1", dependency=f"aftercorr:{target}")["job_id"]
    with h.ctl.jobs.db.read() as s:
        ran = {r.array_task_id: (r.id, r.batch_host) for r in s.scalars(
            select(JobRow).where(JobRow.array_job_id == target))}  # fmt: skip
    for index, code in ((0, 1 << 8), (1, 0)):  # task 0 fails, task 1 completes
        job_id, host = ran[index]
        msg = JobCompletion(node=host, job_id=job_id, restarts=0, step_id="batch", exit_code=code)
        h.ctl.jobs.complete(host, msg)
    for _ in range(3):
        h.tick()
    with h.ctl.jobs.db.read() as s:
        q = select(JobRow).where(JobRow.array_job_id == corr)
        got = {r.array_task_id: (r.state, r.reason) for r in s.scalars(q)}
    assert got[0] == ("PENDING", "DependencyNeverSatisfied") and got[1][0] == "RUNNING", got
