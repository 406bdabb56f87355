"""``sbatch --signal=[B:]SIG@secs`` in the controller: when the signal goes, to whom, how often.

The harness's clock is fake; a job starts at the first tick.  SIGUSR2 is 12 and
SIGUSR1 10 on Linux (``slurmlite.states.parse_signal``).
"""

from __future__ import annotations

from slurmlite.protocol import JobCompletion
from tests.api.conftest import ROOT


def warnings_sent(h) -> list[tuple[str, int, bool, bool]]:  # type: ignore[no-untyped-def]
    """(node, signal, batch_only, full) of every signal order carrying a signal so far."""
    return [
        (node, spec.signal, spec.batch_only, spec.full)
        for kind, node, spec in h.agents.sent
        if kind == "signal" and spec.signal is not None
    ]


def test_the_steps_get_the_signal_once_secs_before_the_limit(harness):
    h = harness
    # 2 minutes, USR2 90 s before the end: due 120 - 90 = 30 s after the start
    jid = h.submit(nodes_min=2, time_limit=2, warn_signal=12, warn_time=90)["job_id"]
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    h.pass_time(29)
    h.tick()
    assert warnings_sent(h) == []  # 29 s < 30 s
    h.pass_time(2)
    h.tick()
    # every node of the job, to the steps (not batch_only, not full): Slurm's default target
    assert sorted(warnings_sent(h)) == [("n1", 12, False, False), ("n2", 12, False, False)]
    h.pass_time(30)
    h.tick()
    assert len(warnings_sent(h)) == 2  # once per run
    assert h.job(jid)["state"] == "RUNNING"  # a warning, not a kill
    h.agents.take("launch", 1)
    h.agents.take("signal", 2)
    h.agents.assert_nothing_else()


def test_b_sends_it_to_the_batch_shell_only(harness):
    h = harness
    jid = h.submit(nodes_min=2, time_limit=1, warn_signal=10, warn_time=60, warn_batch=True)
    h.tick()
    h.tick()  # due at once: 60 s - 60 s = 0 s after the start
    batch_host = h.job(jid["job_id"])["batch_host"]
    assert warnings_sent(h) == [(batch_host, 10, True, False)]
    h.agents.take("launch", 1)
    h.agents.take("signal", 1)
    h.agents.assert_nothing_else()


def test_a_requeued_job_is_warned_again_in_its_new_run(harness):
    h = harness
    jid = h.submit(time_limit=1, warn_signal=12, warn_time=50)["job_id"]
    h.tick()
    h.pass_time(11)  # 11 s > 60 s - 50 s
    h.tick()
    assert len(warnings_sent(h)) == 1
    h.as_user(ROOT)
    assert h.client.post("/v1/jobs/requeue", json={"job_ids": [jid]}).status_code == 200
    old_run = JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=15)
    h.ctl.jobs.complete("n1", old_run)
    h.pass_time(6)  # requeue_delay=5 in the test config
    h.tick()
    assert (h.job(jid)["state"], h.job(jid)["restarts"]) == ("RUNNING", 1)
    h.tick()
    assert len(warnings_sent(h)) == 1  # the new run has its own 10 s to go
    h.pass_time(11)
    h.tick()
    assert len(warnings_sent(h)) == 2


def test_no_time_limit_no_warning(harness):
    h = harness
    h.submit(warn_signal=12, warn_time=65535)  # the debug partition has no MaxTime
    h.tick()
    h.pass_time(3600)
    h.tick()
    assert warnings_sent(h) == []
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_out_of_range_values_are_refused(harness):
    h = harness
    assert h.post_job(time_limit=1, warn_signal=65).status_code == 400
    assert h.post_job(time_limit=1, warn_signal=12, warn_time=65536).status_code == 400
