"""Notifications in the controller: events written with the job's change, delivered later.

The harness's clock is fake and its loop does not run: a test ticks the
scheduler and runs the delivery worker's rounds itself
(``ctl.notifier.run_once``), with a ``RecordingSender`` in place of SMTP.
"""

from __future__ import annotations

from sqlalchemy import select

from controller.notify.senders import RecordingSender
from controller.notify.worker import backoff
from controller.store.models_notify import OutboxRow
from slurmlite.protocol import JobCompletion
from tests.api.conftest import ROOT


def outbox(h) -> list[tuple[int, str, str, float | None]]:  # type: ignore[no-untyped-def]
    """(job, event, recipient, delivered) of every outbox row, oldest first."""
    with h.ctl.db.read() as s:
        rows = s.scalars(select(OutboxRow).order_by(OutboxRow.id))
        return [(r.job_id, r.event, r.recipient, r.delivered) for r in rows]


def finish(h, jid: int, status: int = 0) -> None:  # type: ignore[no-untyped-def]
    end = JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=status)
    h.ctl.jobs.complete(h.job(jid)["batch_host"], end)


def test_begin_and_end_are_recorded_with_the_change_and_sent_by_the_worker(harness):
    h = harness
    sender = h.ctl.notify_sender = RecordingSender()
    jid = h.submit(name="train", mail_type="BEGIN,END")["job_id"]
    assert h.job(jid)["mail_user"] == "alice"  # the submitting user by default
    assert outbox(h) == []  # nothing happened yet
    h.tick()  # starts: the BEGIN row is committed with RUNNING
    assert h.job(jid)["state"] == "RUNNING"
    assert outbox(h) == [(jid, "BEGIN", "alice", None)]
    h.pass_time(62)
    finish(h, jid)
    assert [e for _, e, _, _ in outbox(h)] == ["BEGIN", "END"]
    assert sender.sent == []  # recording is not sending: the worker does that
    assert h.ctl.notifier.run_once() == 2
    assert [m.subject for m in sender.sent] == [
        f"Slurm Job_id={jid} Name=train Began, Queued time 00:00:00",
        f"Slurm Job_id={jid} Name=train Ended, Run time 00:01:02, COMPLETED, ExitCode 0",
    ]
    assert sender.sent[0].body == ""
    assert "Job ID: " in sender.sent[1].body  # the seff summary
    assert all(d is not None for *_, d in outbox(h))
    assert h.ctl.notifier.run_once() == 0  # delivered once


def test_a_job_without_mail_type_records_nothing(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    finish(h, jid, 1 << 8)
    assert outbox(h) == []
    assert h.job(jid)["mail_type"] is None


def test_fail_goes_to_mail_user_and_the_cluster_webhook(harness):
    h = harness
    h.ctl.cfg.webhook = "http://127.0.0.1:9/hook"
    sender = h.ctl.notify_sender = RecordingSender()
    jid = h.submit(mail_type="FAIL", mail_user="ops@example.org")["job_id"]
    h.tick()
    finish(h, jid, 2 << 8)  # exit 2
    assert outbox(h) == [
        (jid, "FAIL", "ops@example.org", None),
        (jid, "FAIL", "http://127.0.0.1:9/hook", None),
    ]
    h.ctl.notifier.run_once()
    assert {m.recipient for m in sender.sent} == {"ops@example.org", "http://127.0.0.1:9/hook"}
    assert sender.sent[0].payload()["state"] == "FAILED"


def test_a_failed_send_is_retried_with_backoff_and_never_lost(harness):
    h = harness
    sender = h.ctl.notify_sender = RecordingSender(failures=2)
    jid = h.submit(mail_type="BEGIN")["job_id"]
    h.tick()
    assert h.ctl.notifier.run_once() == 0  # try 1 fails: next in backoff(1) = 1 s
    assert h.ctl.notifier.run_once() == 0  # not due yet: no try
    assert sender.tries == 1
    h.pass_time(backoff(1))
    assert h.ctl.notifier.run_once() == 0  # try 2 fails: next in 2 s
    h.pass_time(backoff(2))
    assert h.ctl.notifier.run_once() == 1  # try 3 goes through
    assert sender.tries == 3 and len(sender.sent) == 1
    with h.ctl.db.read() as s:
        row = s.scalars(select(OutboxRow)).one()
    assert (row.job_id, row.attempts, row.last_error) == (jid, 2, None)


def test_a_rolled_back_change_leaves_no_event(harness):
    h = harness
    jid = h.submit(mail_type="BEGIN")["job_id"]
    try:
        with h.ctl.db.write() as s:
            from controller.store.models import JobRow

            s.get(JobRow, jid).state = "RUNNING"
            s.flush()  # the hook has added the row ...
            raise RuntimeError("crash before commit")
    except RuntimeError:
        pass
    assert outbox(h) == []  # ... and the rollback took it away with the change


def test_requeue_and_time_limit_warnings_once_per_run(harness):
    h = harness
    h.ctl.notify_sender = RecordingSender()
    # 10 minutes: 80 % is 480 s after the start, 90 % 540 s
    jid = h.submit(mail_type="REQUEUE,TIME_LIMIT_80,TIME_LIMIT_90", time_limit=10)["job_id"]
    h.tick()
    h.pass_time(479)
    h.ctl.notifier.run_once()
    assert outbox(h) == []
    h.pass_time(2)
    h.ctl.notifier.run_once()
    h.ctl.notifier.run_once()
    assert [e for _, e, _, _ in outbox(h)] == ["TIME_LIMIT_80"]
    h.pass_time(60)
    h.ctl.notifier.run_once()
    assert [e for _, e, _, _ in outbox(h)] == ["TIME_LIMIT_80", "TIME_LIMIT_90"]
    h.as_user(ROOT)
    assert h.client.post("/v1/jobs/requeue", json={"job_ids": [jid]}).status_code == 200
    assert [e for _, e, _, _ in outbox(h)][-1] == "REQUEUE"


def test_a_bad_mail_type_from_a_client_is_a_400_not_a_500(harness):
    h = harness
    r = h.post_job(mail_type="sometimes")
    assert r.status_code == 400
    assert "Invalid --mail-type specification" in r.text
    r = h.post_job(mail_type="END", mail_user="x" * 2000)
    assert r.status_code == 400
    assert "the mail user is 2000 bytes, more than the limit of 1024" in r.text


def end_task(h, jid: int, status: int = 0) -> None:  # type: ignore[no-untyped-def]
    from controller.store.models import JobRow

    with h.ctl.db.read() as s:
        host = s.get(JobRow, jid).batch_host
    end = JobCompletion(node=host, job_id=jid, restarts=0, step_id="batch", exit_code=status)
    h.ctl.jobs.complete(host, end)


def test_an_array_notifies_once_as_a_whole(harness):
    h = harness
    sender = h.ctl.notify_sender = RecordingSender()
    jid = h.submit(name="sweep", array="0-1", mail_type="BEGIN,END")["job_id"]
    h.tick()  # both tasks start: task 0 as a new row jid + 1, task 1 in the master's row
    assert [(j, e) for j, e, _, _ in outbox(h)] == [(jid, "BEGIN")]
    end_task(h, jid + 1)
    assert [e for _, e, _, _ in outbox(h)] == ["BEGIN"]  # task 1 still runs
    end_task(h, jid)
    assert [(j, e) for j, e, _, _ in outbox(h)] == [(jid, "BEGIN"), (jid, "END")]
    h.ctl.notifier.run_once()
    assert sender.sent[1].subject.startswith(
        f"Slurm Array Summary Job_id={jid}_* ({jid}) Name=sweep Ended"
    )


def test_array_tasks_notifies_each_task(harness):
    h = harness
    sender = h.ctl.notify_sender = RecordingSender()
    jid = h.submit(name="sweep", array="0-1", mail_type="BEGIN,ARRAY_TASKS")["job_id"]
    h.tick()
    h.ctl.notifier.run_once()
    assert sorted(m.subject for m in sender.sent) == [
        f"Slurm Array Task Job_id={jid}_0 ({jid + 1}) Name=sweep Began, Queued time 00:00:00",
        f"Slurm Array Task Job_id={jid}_1 ({jid}) Name=sweep Began, Queued time 00:00:00",
    ]


def test_cancelling_a_running_job_mails_end_with_cancelled(harness):
    h = harness
    h.ctl.notify_sender = RecordingSender()
    jid = h.submit(name="c", mail_type="END")["job_id"]
    h.tick()
    h.pass_time(5)
    assert h.client.post("/v1/jobs/cancel", json={"job_ids": [jid]}).status_code == 200
    with h.ctl.db.read() as s:
        [row] = s.scalars(select(OutboxRow))
    assert row.subject.startswith(f"Slurm Job_id={jid} Name=c Ended, Run time 00:00:05, CANCELLED")


def test_array_tasks_ending_in_one_report_give_one_summary(harness):
    h = harness
    jid = h.submit(array="0-1", mail_type="END")["job_id"]
    h.tick()
    hosts = {}
    from controller.store.models import JobRow

    with h.ctl.db.read() as s:
        for task in (jid, jid + 1):
            hosts[task] = s.get(JobRow, task).batch_host
    for host in set(hosts.values()):  # each node reports its tasks' ends in one batch
        ends = [
            JobCompletion(node=host, job_id=t, restarts=0, step_id="batch", exit_code=0)
            for t, on in hosts.items()
            if on == host
        ]
        h.ctl.jobs.complete_many(host, ends)
    assert [(j, e) for j, e, _, _ in outbox(h)] == [(jid, "END")]


def test_a_users_webhook_must_start_with_an_allowed_prefix(harness):
    h = harness
    h.ctl.cfg.user_webhooks = []  # the default: no user may make the controller POST anywhere
    r = h.post_job(mail_type="END", mail_user="http://169.254.169.254/latest")
    assert r.status_code == 403
    assert "webhooks of users are limited to SlurmliteUserWebhooks (none allowed)" in r.text
    h.ctl.cfg.user_webhooks = ["https://hooks.lab.example/"]
    r = h.post_job(mail_type="END", mail_user="https://evil.example/hooks.lab.example/")
    assert r.status_code == 403
    jid = h.submit(mail_type="END", mail_user="https://hooks.lab.example/alice")["job_id"]
    assert h.job(jid)["mail_user"] == "https://hooks.lab.example/alice"
    # without --mail-type nothing is ever sent, so nothing is refused
    assert h.post_job(mail_user="http://169.254.169.254/").status_code == 200
