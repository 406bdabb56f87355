"""Notifications end to end: a real cluster mails a local SMTP server and posts to a webhook.

One cluster of its own (ml1, ml2) whose slurm.conf names a mail server
started by the test (``tests.receivers.SmtpSink``, ``SlurmliteMailServer``).
The stories, as a user sees them:

* ``--mail-type=BEGIN,END``: two mails with Slurm's subjects, the END one
  carrying the job's seff summary; ``scontrol show job`` shows
  ``MailUser=``/``MailType=``;
* a failing job with ``--mail-user=http://...``: the webhook gets the FAIL
  event as JSON;
* the mail server is down when the job ends: the controller keeps the event,
  retries, and the mail arrives once the server is back;
* ``MailProg=`` (applied with ``scontrol reconfigure``): the program is run
  as Slurm runs it, ``MailProg -s SUBJECT RECIPIENT``;
* ``afterok`` on a job that fails, with ``--kill-on-invalid-dep=yes``: the
  dependent job's ``Invalid dependency`` mail, then its END (cancelled).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from controller.store.db import Database
from controller.store.models_notify import OutboxRow
from slurmlite.config import load_config
from tests.e2e.conftest import Cluster, local_cluster, wait_for
from tests.receivers import HttpSink, SmtpSink


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpSink]:
    sink = SmtpSink().start()
    yield sink
    sink.stop()


@pytest.fixture(scope="module")
def hook() -> Iterator[HttpSink]:
    sink = HttpSink()
    yield sink
    sink.stop()


@pytest.fixture(scope="module")
def mail_cluster(smtp: SmtpSink) -> Iterator[Cluster]:
    with local_cluster(
        "slurmlite-mail-",
        nodelist="ml[1-2]",
        cpus_per_node=1,
        mem_per_node=1000,
        extra_conf=(
            f"SlurmliteMailServer=127.0.0.1:{smtp.port}",
            "SlurmliteMailFrom=slurm@cluster.test",
            "SlurmliteUserWebhooks=http://127.0.0.1:",  # the test's receiver, on loopback
        ),
    ) as c:
        yield c


def mails_to(smtp: SmtpSink, jid: int) -> list[str]:
    return [s for s in smtp.subjects() if re.search(rf"Job_id={jid}\b", s)]


def attempts(c: Cluster, jid: int) -> int:
    """Failed tries of the job's outbox rows so far (the store, read as slurmlite check does)."""
    db = Database(load_config(str(c.conf)).store_url)
    try:
        with db.read() as s:
            return sum(s.scalars(select(OutboxRow.attempts).where(OutboxRow.job_id == jid)))
    finally:
        db.close()


def test_begin_and_end_mails_with_slurms_subjects(mail_cluster: Cluster, smtp: SmtpSink) -> None:
    c = mail_cluster
    jid = c.submit("-J train --mail-type=BEGIN,END --mail-user=alice@lab.test --wrap 'sleep 1'")
    shown = c.run(f"scontrol show job {jid}").stdout
    assert "   MailUser=alice@lab.test MailType=BEGIN,END\n" in shown
    assert c.wait_done(jid) == "COMPLETED"
    got = wait_for(lambda: len(mails_to(smtp, jid)) == 2 and mails_to(smtp, jid), what="2 mails")
    assert re.fullmatch(rf"Slurm Job_id={jid} Name=train Began, Queued time \d\d:\d\d:\d\d", got[0])
    assert re.fullmatch(
        rf"Slurm Job_id={jid} Name=train Ended, Run time 00:00:0\d, COMPLETED, ExitCode 0", got[1]
    )
    rcpt, end = next((r, m) for r, m in smtp.received if str(m["Subject"]) == got[1])
    assert rcpt == ["alice@lab.test"] and end["From"] == "slurm@cluster.test"
    assert f"Job ID: {jid}" in end.get_content()  # the seff summary


def test_a_failed_job_posts_json_to_the_users_webhook(
    mail_cluster: Cluster, hook: HttpSink, smtp: SmtpSink
) -> None:
    c = mail_cluster
    jid = c.submit(f"-J bad --mail-type=FAIL --mail-user={hook.url()} --wrap 'exit 3'")
    assert c.wait_done(jid) == "FAILED"
    path, doc = wait_for(lambda: hook.received and hook.received[-1], what="the webhook")
    assert path == "/hook"
    assert (doc["job_id"], doc["event"], doc["state"], doc["name"]) == (
        jid,
        "FAIL",
        "FAILED",
        "bad",
    )
    assert re.fullmatch(
        rf"Slurm Job_id={jid} Name=bad Failed, Run time \d\d:\d\d:\d\d, FAILED, ExitCode 3",
        doc["subject"],
    )
    assert mails_to(smtp, jid) == []  # the URL was the only destination


def test_a_mail_server_down_at_first_gets_the_mail_after_a_retry(
    mail_cluster: Cluster, smtp: SmtpSink
) -> None:
    c = mail_cluster
    smtp.stop()
    try:
        jid = c.submit("--mail-type=END --wrap true")
        assert c.wait_done(jid) == "COMPLETED"
        wait_for(lambda: attempts(c, jid) >= 1, what="a failed try")
        assert mails_to(smtp, jid) == []
    finally:
        smtp.start()  # the same port: the server is back
    got = wait_for(lambda: mails_to(smtp, jid), timeout=30, what="the retried mail")
    assert len(got) == 1 and "Ended" in got[0]


def test_mailprog_is_run_as_slurm_runs_it(
    mail_cluster: Cluster, smtp: SmtpSink, tmp_path: Path
) -> None:
    c = mail_cluster
    record = tmp_path / "calls"
    prog = tmp_path / "mailprog.sh"
    prog.write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do printf "%s\\n" "$a"; done >> {shlex.quote(str(record))}\n'
        f'echo "env=$SLURM_JOB_ID:$SLURM_JOB_MAIL_TYPE" >> {shlex.quote(str(record))}\n'
    )
    prog.chmod(0o755)
    original = c.conf.read_text()
    c.conf.write_text(original + f"MailProg={prog}\n")
    try:
        assert c.run("scontrol reconfigure").returncode == 0
        jid = c.submit("-J mp --mail-type=END --wrap true")
        assert c.wait_done(jid) == "COMPLETED"
        wait_for(record.exists, what="MailProg's call")
        lines = record.read_text().splitlines()
        assert lines[0] == "-s"
        assert re.fullmatch(rf"Slurm Job_id={jid} Name=mp Ended, .*ExitCode 0", lines[1])
        assert lines[2:] == ["root", f"env={jid}:Ended"]  # --mail-user defaults to the submitter
        assert mails_to(smtp, jid) == []  # MailProg, not SMTP
    finally:
        c.conf.write_text(original)
        c.run("scontrol reconfigure")


def test_afterok_on_a_failing_job_mails_invalid_dependency_then_end(
    mail_cluster: Cluster, smtp: SmtpSink
) -> None:
    c = mail_cluster
    first = c.submit("-J pre --wrap 'exit 1'")
    post = c.submit(
        f"-J post --dependency=afterok:{first} --kill-on-invalid-dep=yes "
        "--mail-type=INVALID_DEPEND,END --mail-user=carol@lab.test --wrap true"
    )
    assert c.wait_done(first) == "FAILED"
    assert c.wait_done(post) == "CANCELLED"
    got = wait_for(lambda: len(mails_to(smtp, post)) == 2 and mails_to(smtp, post), what="2 mails")
    assert got == [
        f"Slurm Job_id={post} Name=post Invalid dependency",
        f"Slurm Job_id={post} Name=post Ended, CANCELLED, ExitCode 0",
    ]
    assert all(r == ["carol@lab.test"] for r, m in smtp.received if f"={post} " in m["Subject"])
