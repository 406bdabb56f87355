"""Notifications the state-change hook used to miss, and delivery that may repeat.

* a dependency that can never be satisfied: INVALID_DEPEND (Slurm's
  ``Invalid dependency``), then, when the job is cancelled for it
  (``--kill-on-invalid-dep=yes``), the cancel's END -- in the pass that
  found it, each once;
* an array's one END/FAIL summarizes its tasks' exit codes as Slurm does
  (``ExitCode [0-3]``, ``Mixed``, ``MaxExitCode``);
* at-least-once delivery: every try of one outbox row carries the same
  ``message_id`` / ``Idempotency-Key``, so a receiver can drop the copy a
  restarted controller sends again.

The harness's clock is fake and its loop does not run (``h.tick``); the
delivery worker's rounds are run by the test.
"""

from __future__ import annotations

from sqlalchemy import select, update

from controller.notify.senders import RecordingSender, sender_for
from controller.store.models import JobRow
from controller.store.models_notify import OutboxRow
from slurmlite.protocol import JobCompletion
from tests.receivers import HttpSink


def subjects(h) -> list[tuple[int, str, str]]:  # type: ignore[no-untyped-def]
    """(job, event, subject) of every outbox row, oldest first."""
    with h.ctl.db.read() as s:
        rows = s.scalars(select(OutboxRow).order_by(OutboxRow.id))
        return [(r.job_id, r.event, r.subject) for r in rows]


def end(h, jid: int, status: int = 0) -> None:  # type: ignore[no-untyped-def]
    with h.ctl.db.read() as s:
        host = s.get(JobRow, jid).batch_host
    msg = JobCompletion(node=host, job_id=jid, restarts=0, step_id="batch", exit_code=status)
    h.ctl.jobs.complete(host, msg)


def test_a_killed_invalid_dependency_mails_invalid_depend_then_end(harness):
    h = harness
    first = h.submit(name="pre")["job_id"]
    h.tick()
    post = h.submit(
        name="post",
        dependency=f"afterok:{first}",
        kill_invalid_dep=True,
        mail_type="INVALID_DEPEND,END",
    )["job_id"]
    end(h, first, 1 << 8)  # exit 1: afterok can never hold
    h.tick()
    assert h.job(post)["state"] == "CANCELLED"
    assert subjects(h) == [
        (post, "INVALID_DEPEND", f"Slurm Job_id={post} Name=post Invalid dependency"),
        (post, "END", f"Slurm Job_id={post} Name=post Ended, CANCELLED, ExitCode 0"),
    ]
    h.tick()
    assert len(subjects(h)) == 2  # found once, told once


def test_a_kept_invalid_dependency_mails_invalid_depend_once(harness):
    h = harness
    first = h.submit()["job_id"]
    h.tick()
    post = h.submit(name="post", dependency=f"afterok:{first}", mail_type="ALL")["job_id"]
    end(h, first, 2 << 8)
    for _ in range(3):
        h.tick()
    job = h.job(post)
    assert (job["state"], job["reason"]) == ("PENDING", "DependencyNeverSatisfied")
    assert [(j, e) for j, e, _ in subjects(h)] == [(post, "INVALID_DEPEND")]


def test_invalid_depend_is_not_sent_unless_asked_for(harness):
    h = harness
    first = h.submit()["job_id"]
    h.tick()
    h.submit(dependency=f"afterok:{first}", kill_invalid_dep=True, mail_type="BEGIN")
    end(h, first, 1 << 8)
    h.tick()
    assert subjects(h) == []  # a cancel that never began: no BEGIN, and END was not asked for


def sweep(h, mail_type: str, statuses: tuple[int, int]) -> int:  # type: ignore[no-untyped-def]
    """Array 0-1 started, task 0 (the split row, id + 1) then task 1 (the array's row) ending
    with these raw statuses; the array's id."""
    jid = h.submit(name="sweep", array="0-1", mail_type=mail_type)["job_id"]
    h.tick()
    end(h, jid + 1, statuses[0])
    end(h, jid, statuses[1])
    return jid


def test_an_array_summary_shows_its_tasks_exit_code_range(harness):
    h = harness
    jid = sweep(h, "END,FAIL", (3 << 8, 0))  # task 0 exits 3, the last one 0
    assert subjects(h) == [
        (jid, "FAIL", f"Slurm Array Summary Job_id={jid}_* ({jid}) Name=sweep Failed, Mixed, "
         "ExitCode [0-3]"),
    ]  # fmt: skip


def test_an_array_summary_ending_well_is_end_with_its_range(harness):
    h = harness
    jid = sweep(h, "END", (0, 0))
    assert subjects(h) == [
        (jid, "END", f"Slurm Array Summary Job_id={jid}_* ({jid}) Name=sweep Ended, COMPLETED, "
         "ExitCode [0-0]"),
    ]  # fmt: skip


def test_an_array_summary_with_a_cancelled_task_shows_the_highest_exit(harness):
    h = harness
    jid = h.submit(name="sweep", array="0-1", mail_type="END")["job_id"]
    h.tick()
    end(h, jid, 2 << 8)  # task 1 exits 2
    assert h.client.post("/v1/jobs/cancel", json={"job_ids": [jid + 1]}).status_code == 200
    end(h, jid + 1, 15)  # its shell's end arrives after the cancel: no second summary
    # at the cancel, the last end: the cancelled task counts as status 9 (killed) and
    # the highest status, 2 << 8 = 512, is an exit -> "Mixed, MaxExitCode [2]"
    [(_, event, text)] = subjects(h)
    assert (event, text) == (
        "END",
        f"Slurm Array Summary Job_id={jid}_* ({jid}) Name=sweep Ended, Mixed, MaxExitCode [2]",
    )


def test_every_try_of_one_row_carries_the_same_idempotency_key(harness):
    h = harness
    sink = HttpSink()
    try:
        h.ctl.cfg.user_webhooks = [sink.url("/")]
        h.ctl.notify_sender = sender_for(h.ctl.cfg)  # the real webhook sender
        jid = h.submit(mail_type="BEGIN", mail_user=sink.url("/hook"))["job_id"]
        h.tick()
        assert h.ctl.notifier.run_once() == 1
        # the controller dies after the send, before its mark is committed: the row is due again
        with h.ctl.db.write() as s:
            s.execute(update(OutboxRow).values(delivered=None))
        assert h.ctl.notifier.run_once() == 1
        assert len(sink.received) == 2  # at least once: here, twice
        first, again = (doc for _, doc in sink.received)
        assert first == again and first["job_id"] == jid and first["event"] == "BEGIN"
        key = first["message_id"]
        assert key.startswith("anchor-")  # the cluster's name, then the row
        assert [hd["Idempotency-Key"] for hd in sink.headers] == [key, key]
        # another event is another message: another key
        h.ctl.notify_sender = recorder = RecordingSender()
        other = h.submit(mail_type="BEGIN")["job_id"]
        h.tick()
        h.ctl.notifier.run_once()
        [sent] = recorder.sent
        assert sent.job_id == other and sent.message_id not in ("", key)
    finally:
        sink.stop()
