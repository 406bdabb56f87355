"""Every failure records its cause on the job (SystemComment), and explain says the fix.

On the in-process controller with a fake clock: a time limit, a silent node,
an OOM kill and a launch failure, as the agents would report them.
"""

from __future__ import annotations

from slurmlite.protocol import JobCompletion
from slurmlite.usage import UsageSummary


def explained(h, jid: int) -> str:  # type: ignore[no-untyped-def]
    r = h.client.get(f"/v1/jobs/{jid}/explain")
    assert r.status_code == 200, r.text
    return r.json()["message"]


def test_a_time_limit_records_the_limit_and_the_run_time(harness):
    h = harness
    jid = h.submit(time_limit=1)["job_id"]
    h.tick()
    h.pass_time(61)
    h.tick()
    job = h.job(jid)
    assert job["state"] == "TIMEOUT"
    assert job["system_comment"] == "time limit 00:01:00 reached after 00:01:01 of run time"
    text = explained(h, jid)
    assert "why: time limit 00:01:00 reached after 00:01:01 of run time" in text
    assert "fix: ask for more --time than 00:01:00" in text


def test_a_silent_node_records_when_it_stopped_and_the_requeue_until_the_next_end(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    lost = h.job(jid)["batch_host"]
    other = "n2" if lost == "n1" else "n1"
    h.clock.advance(11)  # silent 11 s > SlurmdTimeout=10
    h.ctl.nodes.heartbeat(other)
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["restarts"]) == ("PENDING", 1)
    comment = job["system_comment"]
    assert comment.startswith(f"node {lost} stopped answering at ")
    assert comment.endswith(" (no heartbeat for 00:00:11); job requeued")
    # the next run keeps it while it runs, and a clean end drops it
    h.clock.advance(7)  # past requeue_delay=5
    h.ctl.nodes.heartbeat(other)
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["batch_host"], job["system_comment"]) == ("RUNNING", other, comment)
    assert f"last run: {comment}" in explained(h, jid)
    done = JobCompletion(node=other, job_id=jid, restarts=1, step_id="batch", exit_code=0)
    assert h.ctl.jobs.complete(other, done)
    job = h.job(jid)
    assert (job["state"], job["system_comment"]) == ("COMPLETED", None)
    assert "why: it completed: the batch script exited with status 0" in explained(h, jid)


def test_a_node_failure_of_a_job_that_may_not_be_requeued_says_it_failed(harness):
    h = harness
    jid = h.submit(req_nodes=["n2"], requeue=False)["job_id"]
    h.tick()
    h.clock.advance(11)
    h.ctl.nodes.heartbeat("n1")
    h.tick()
    job = h.job(jid)
    assert job["state"] == "NODE_FAIL"
    assert job["system_comment"].endswith("(no heartbeat for 00:00:11); job failed")
    assert "fix: the node failed, not the job: resubmit it" in explained(h, jid)


def test_an_oom_kill_records_what_was_used_of_what_was_asked(harness):
    h = harness
    jid = h.submit(mem_per_node=2048)["job_id"]
    h.tick()
    node = h.job(jid)["batch_host"]
    usage = UsageSummary(job_id=jid, restarts=0, samples=1, max_rss_bytes=2048 << 20)
    oom = JobCompletion(node, jid, 0, "batch", 253, usage=usage)  # the cgroup's OOM marker
    assert h.ctl.jobs.complete(node, oom)
    job = h.job(jid)
    assert job["state"] == "OUT_OF_MEMORY"
    assert job["system_comment"] == f"out of memory on {node}: used 2048M of --mem=2G"
    assert "fix: ask for more --mem (it used 2048M)" in explained(h, jid)


def test_a_launch_failure_keeps_slurms_reason_and_records_the_agents_sentence(harness):
    h = harness
    jid = h.submit(work_dir="/home/u", std_out="nosuchdir/slurm-%j.out")["job_id"]
    h.tick()
    node = h.job(jid)["batch_host"]
    path = f"/home/u/nosuchdir/slurm-{jid}.out"
    cause = f"launch failed on {node}: cannot open --output file {path}: No such file or directory"
    failed = JobCompletion(node, jid, 0, "batch", 53, launch_failed=True, cause=cause)
    assert h.ctl.jobs.complete(node, failed)
    job = h.job(jid)
    assert (job["state"], job["reason"], job["state_desc"]) == ("FAILED", "JobLaunchFailure", None)
    assert job["system_comment"] == cause
    text = explained(h, jid)
    assert f"why: {cause}" in text
    fix = f"fix: the directory `nosuchdir` does not exist on {node}; create it or point --output at one that does"  # fmt: skip
    assert fix in text


def test_a_failed_exit_and_a_cancel_are_explained_without_a_comment(harness):
    h = harness
    bad, gone = h.submit()["job_id"], h.submit()["job_id"]
    h.tick()
    node = h.job(bad)["batch_host"]
    assert h.ctl.jobs.complete(node, JobCompletion(node, bad, 0, "batch", 3 << 8))
    assert h.job(bad)["system_comment"] is None
    assert "why: the batch script exited with status 3" in explained(h, bad)
    [res] = h.client.post("/v1/jobs/cancel", json={"job_ids": [gone]}).json()["results"]
    assert res["errno"] == 0, res
    assert "why: cancelled by its owner alice" in explained(h, gone)


def test_cancelling_the_run_after_a_requeue_drops_the_earlier_runs_cause(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    other = "n2" if h.job(jid)["batch_host"] == "n1" else "n1"
    h.clock.advance(11)  # its node silent past SlurmdTimeout: requeued
    h.ctl.nodes.heartbeat(other)
    h.tick()
    assert h.job(jid)["system_comment"].endswith("; job requeued")
    h.clock.advance(7)
    h.ctl.nodes.heartbeat(other)
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    [res] = h.client.post("/v1/jobs/cancel", json={"job_ids": [jid]}).json()["results"]
    assert res["errno"] == 0, res
    job = h.job(jid)
    assert (job["state"], job["system_comment"]) == ("CANCELLED", None)
    assert "why: cancelled by its owner alice" in explained(h, jid)
