"""The senders against real local receivers: SMTP, a MailProg script, a webhook."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.notify.senders import (
    DeliveryError,
    MailProgSender,
    Message,
    RecordingSender,
    Router,
    SmtpSender,
    WebhookSender,
)
from tests.receivers import HttpSink, SmtpSink, free_port

END = Message(7, "END", "alice", "Slurm Job_id=7 Name=x Ended", "Job ID: 7\n", {"user": "alice"})


def test_smtp_delivers_subject_body_and_envelope():
    sink = SmtpSink().start()
    try:
        SmtpSender(f"127.0.0.1:{sink.port}", "slurm@test").send(END)
    finally:
        sink.stop()
    [(rcpt, mail)] = sink.received
    assert rcpt == ["alice"]
    assert (mail["Subject"], mail["From"], mail.get_content()) == (
        "Slurm Job_id=7 Name=x Ended",
        "slurm@test",
        "Job ID: 7\n",
    )


def test_smtp_down_is_a_delivery_error_naming_the_server():
    port = free_port()
    with pytest.raises(DeliveryError, match=f"SMTP 127.0.0.1:{port}"):
        SmtpSender(f"127.0.0.1:{port}", "slurm@test").send(END)


def test_mailprog_gets_slurms_arguments_and_a_failure_is_reported(tmp_path: Path):
    calls = tmp_path / "calls"
    prog = tmp_path / "mail"
    prog.write_text(f'#!/bin/sh\necho "$@" > {calls}\ncat >> {calls}\nexit "${{FAIL:-0}}"\n')
    prog.chmod(0o755)
    MailProgSender(str(prog)).send(END)
    assert calls.read_text() == "-s Slurm Job_id=7 Name=x Ended alice\nJob ID: 7\n"
    bad = tmp_path / "bad"
    bad.write_text("#!/bin/sh\necho no relay >&2\nexit 3\n")
    bad.chmod(0o755)
    with pytest.raises(DeliveryError, match="exited 3: no relay"):
        MailProgSender(str(bad)).send(END)


def test_webhook_posts_json_and_an_error_answer_is_a_failure():
    sink = HttpSink()
    try:
        to_hook = Message(7, "END", sink.url("/h"), "s", "", {"state": "COMPLETED"})
        WebhookSender().send(to_hook)
        assert sink.received == [
            (
                "/h",
                {
                    "message_id": "",  # none given here; the worker gives every row one
                    "job_id": 7,
                    "event": "END",
                    "subject": "s",
                    "body": "",
                    "state": "COMPLETED",
                },
            )
        ]
        with pytest.raises(DeliveryError, match="webhook unreachable"):
            WebhookSender().send(Message(7, "END", f"http://127.0.0.1:{free_port()}/", "s", ""))
    finally:
        sink.stop()


def test_router_sends_urls_to_the_webhook_and_completes_bare_names():
    mail, hook = RecordingSender(), RecordingSender()
    router = Router(mail, hook, domain="lab.test")
    router.send(END)
    router.send(Message(7, "END", "https://h.test/x", "s", ""))
    router.send(Message(7, "END", "bob@else.test", "s", ""))
    assert [m.recipient for m in mail.sent] == ["alice@lab.test", "bob@else.test"]
    assert [m.recipient for m in hook.sent] == ["https://h.test/x"]
