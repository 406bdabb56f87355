"""Prolog and epilog outcomes on the controller's side, and the restart causes they leave.

Node scripts: an agent reports a failed Prolog or Epilog in the run's
completion (``failed_script``); the controller drains the node and, for a
prolog, requeues the job held (``controller.jobs.node_scripts``).
Controller scripts: ``PrologSlurmctld``/``EpilogSlurmctld`` run from the loop
(``controller.sched.ctld_scripts``), here as small shell scripts; ``tick()``
waits for them as it waits for any delivery.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from slurmlite.protocol import JobCompletion
from tests.api.conftest import ROOT


def nodes(h) -> dict:  # type: ignore[no-untyped-def]
    return {n["name"]: n for n in h.client.get("/v1/nodes").json()["nodes"]}


def prolog_failure(jid: int, node: str, restarts: int = 0) -> JobCompletion:
    """What an agent reports when its Prolog failed (agent.scripts)."""
    return JobCompletion(
        node=node,
        job_id=jid,
        restarts=restarts,
        step_id="batch",
        exit_code=53,
        launch_failed=True,
        reason="JobLaunchFailure",
        detail="Prolog error: exit status 1",
        failed_script="prolog",
    )


def script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_a_failed_prolog_drains_the_node_and_requeues_the_job_held(harness):
    h = harness
    jid = h.submit(std_out="/tmp/out-%j-%r.txt", open_mode="append")["job_id"]
    h.tick()
    assert h.agents.take("launch", 1)[0].spec.std_out == f"/tmp/out-{jid}-0.txt"
    assert h.job(jid)["nodes"] == ["n1"]
    assert h.ctl.jobs.complete("n1", prolog_failure(jid, "n1")) is True
    job = h.job(jid)
    assert (job["state"], job["reason"], job["restarts"]) == ("PENDING", "JobHeldAdmin", 1)
    assert job["restart_causes"] == "prolog:n1"
    assert job["state_desc"] == "launch failed requeued held"
    assert job["steps"] == []  # nothing of the run ever started
    n1 = nodes(h)["n1"]
    assert "DRAIN" in n1["flags"] and n1["reason"] == "Prolog error"
    assert h.ctl.jobs.complete("n1", prolog_failure(jid, "n1")) is False  # a duplicate
    # only an operator releases it; then it runs elsewhere: n1 is drained
    h.as_user(ROOT)
    r = h.client.post("/v1/jobs/release", json={"job_ids": [jid]})
    assert r.json()["results"][0]["errno"] == 0
    h.pass_time(6)  # past requeue_delay=5 + 1
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["nodes"], job["restarts"]) == ("RUNNING", ["n2"], 1)
    [launch] = h.agents.take("launch", 1)
    assert launch.spec.environment["SLURM_RESTART_COUNT"] == "1"
    # file patterns see the restart count; the open mode travels with every run
    assert (launch.spec.std_out, launch.spec.open_mode) == (f"/tmp/out-{jid}-1.txt", "append")


def test_max_batch_requeue_failed_prologs_end_the_job_failed(harness):
    h = harness
    h.ctl.cfg.max_batch_requeue = 1
    jid = h.submit()["job_id"]
    h.tick()
    h.ctl.jobs.complete("n1", prolog_failure(jid, "n1"))  # the one failure allowed
    h.as_user(ROOT)
    h.client.post("/v1/jobs/release", json={"job_ids": [jid]})
    h.pass_time(6)
    h.tick()
    assert h.job(jid)["nodes"] == ["n2"]
    h.ctl.jobs.complete("n2", prolog_failure(jid, "n2", restarts=1))
    job = h.job(jid)
    assert (job["state"], job["reason"], job["restarts"]) == ("FAILED", "JobLaunchFailure", 1)
    assert job["state_desc"] == "Prolog error on n2, MaxBatchRequeue=1 reached"
    assert all("DRAIN" in n["flags"] for n in nodes(h).values())


def test_a_failed_epilog_keeps_the_jobs_end_and_drains_the_node(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    end = JobCompletion(
        node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=0, failed_script="epilog"
    )
    assert h.ctl.jobs.complete("n1", end) is True
    assert (h.job(jid)["state"], h.job(jid)["restarts"]) == ("COMPLETED", 0)
    n1 = nodes(h)["n1"]
    assert "DRAIN" in n1["flags"] and n1["reason"] == "Epilog error"


def test_a_user_requeue_and_a_node_failure_are_causes_too(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    assert h.client.post("/v1/jobs/requeue", json={"job_ids": [jid]}).status_code == 200
    assert h.job(jid)["restart_causes"] == "requeue:alice"
    h.pass_time(6)
    h.tick()
    node = h.job(jid)["nodes"][0]
    h.clock.advance(11)  # past SlurmdTimeout=10 without a word from that node
    h.ctl.nodes.heartbeat("n2" if node == "n1" else "n1")
    h.tick()
    job = h.job(jid)
    assert (job["restarts"], job["restart_causes"]) == (2, f"requeue:alice,node_fail:{node}")


def test_prolog_slurmctld_runs_before_the_launch_and_a_failure_requeues_held(harness, tmp_path):
    h = harness
    seen = tmp_path / "ctld.env"
    h.ctl.cfg.prolog_slurmctld = script(tmp_path / "ok", f"env > {seen}\n")
    jid = h.submit(name="train")["job_id"]
    h.tick()  # the pass starts it CONFIGURING; the prolog runs; then the launch goes
    [launch] = h.agents.take("launch", 1)
    assert launch.spec.job_id == jid
    job = h.job(jid)
    assert (job["state"], job["flags"]) == ("RUNNING", [])
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert (env["SLURM_SCRIPT_CONTEXT"], env["SLURM_JOB_ID"]) == ("prolog_slurmctld", str(jid))
    assert (env["SLURM_JOB_NAME"], env["SLURM_JOB_NODELIST"]) == ("train", "n1")
    assert (env["SLURM_JOB_USER"], env["SLURM_JOB_PARTITION"]) == ("alice", "debug")

    h.ctl.cfg.prolog_slurmctld = script(tmp_path / "bad", "exit 1\n")
    other = h.submit()["job_id"]
    h.tick()
    job = h.job(other)
    assert (job["state"], job["reason"], job["restart_causes"]) == (
        "PENDING",
        "JobHeldAdmin",
        "prolog_slurmctld",
    )
    h.agents.assert_nothing_else()  # it was never launched
    assert not any("DRAIN" in n["flags"] for n in nodes(h).values())  # no node's fault


def test_a_job_stays_configuring_while_prolog_slurmctld_runs(harness, tmp_path):
    h = harness
    h.ctl.cfg.prolog_slurmctld = script(tmp_path / "ok", "true\n")
    jid = h.submit()["job_id"]
    # the pass alone (no deliveries): committed RUNNING, flagged CONFIGURING, nothing sent
    started = h.ctl.loop._schedule()
    assert h.ctl.loop.scripts.hold_launches(started) == []
    job = h.job(jid)
    assert (job["state"], job["flags"]) == ("RUNNING", ["CONFIGURING"])
    # a controller restarted meanwhile finds it and configures it again
    assert h.ctl.loop.scripts.leftovers() == [(jid, 0)]
    # its node does not list it (no launch yet): that is no sign the job vanished
    for _ in range(3):
        h.ctl.nodes.heartbeat(job["nodes"][0], [])
        h.pass_time(4)  # 12 s > the reconciler's grace of 5 s
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["flags"], job["restarts"]) == ("RUNNING", ["CONFIGURING"], 0)


def test_epilog_slurmctld_runs_once_the_job_ended_and_a_failure_is_only_logged(
    harness, tmp_path, caplog
):
    h = harness
    seen = tmp_path / "ctld.env"
    h.ctl.cfg.epilog_slurmctld = script(tmp_path / "epi", f"env > {seen}\nexit 7\n")
    jid = h.submit()["job_id"]
    h.tick()
    end = JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=3 << 8)
    h.ctl.jobs.complete("n1", end)
    with caplog.at_level(logging.ERROR, logger="slurmctld.scripts"):
        h.tick()
    env = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert env["SLURM_SCRIPT_CONTEXT"] == "epilog_slurmctld"
    assert (env["SLURM_JOB_EXIT_CODE"], env["SLURM_JOB_EXIT_CODE2"]) == ("768", "3:0")
    assert "event=epilog_slurmctld_failed" in caplog.text and "exit status 7" in caplog.text
    job = h.job(jid)
    assert (job["state"], job["flags"]) == ("FAILED", [])  # as it ended; not COMPLETING
    seen.unlink()
    h.tick()
    assert not seen.exists()  # once per run


def test_a_job_cancelled_while_prolog_slurmctld_runs_is_never_launched(harness, tmp_path):
    h = harness
    h.ctl.cfg.prolog_slurmctld = script(tmp_path / "ok", "true\n")
    jid = h.submit()["job_id"]
    scripts = h.ctl.loop.scripts
    assert scripts.hold_launches(h.ctl.loop._schedule()) == []  # CONFIGURING, not launched
    h.client.post("/v1/jobs/cancel", json={"job_ids": [jid]})
    assert asyncio.run(scripts.configure(jid, 0)) is None  # the prolog ends: no launch
    job = h.job(jid)
    assert job["state"] == "CANCELLED" and "CONFIGURING" not in job["flags"]
    assert not [o for o in h.agents.sent if o.kind == "launch"]


def test_an_epilog_slurmctld_cut_short_by_a_restart_runs_again(harness, tmp_path):
    from controller.sched.ctld_scripts import RUNNING, CtldScripts
    from controller.store.models import JobRow

    h = harness
    h.ctl.cfg.epilog_slurmctld = script(tmp_path / "epi", "true\n")
    jid = h.submit()["job_id"]
    h.tick()
    h.ctl.jobs.complete("n1", JobCompletion("n1", jid, 0, "batch", 0))
    with h.ctl.db.write() as s:  # the previous controller died while the script ran
        s.get(JobRow, jid).ctld_epilog = RUNNING
    fresh = CtldScripts(h.ctl.sched)
    assert [due[0] for due in fresh.owed_epilogs()] == [jid]
    assert fresh.owed_epilogs() == []  # and only once
