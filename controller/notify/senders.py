"""Where a notification goes: SMTP, ``MailProg``, a JSON webhook; and a recording fake.

Every sender has one method, ``send(message)``, that returns once the
message is accepted and raises :class:`DeliveryError` (saying what to fix)
when it is not; the worker retries.  :func:`sender_for` picks them from
slurm.conf, for each message by its recipient:

* an ``http://`` or ``https://`` recipient (``--mail-user=https://...``, or
  ``SlurmliteWebhook``) gets the event as JSON by POST; any 2xx answer is
  delivery.  The message's stable id (:attr:`Message.message_id`, one per
  outbox row) is in the JSON (``message_id``) and in an ``Idempotency-Key``
  header, and is the mail's ``Message-ID``: delivery is at least once (a
  controller that dies after a send and before marking it sends it again),
  and a receiver that keeps the ids it has seen drops the second copy;
* any other recipient is a mail: ``MailProg=/path`` set -> that program is
  run as Slurm's slurmctld runs it, ``MailProg -s "SUBJECT" RECIPIENT``,
  with the body on standard input and ``SLURM_JOB_ID``, ``SLURM_JOB_USER``,
  ``SLURM_JOB_MAIL_TYPE`` (the subject's verb, ``Ended``),
  ``SLURM_JOB_STATE`` and ``SLURM_JOB_NAME`` in its environment; exit 0 is
  delivery.  Else ``SlurmliteMailServer=host:port`` -> SMTP from
  ``SlurmliteMailFrom``.  Neither -> an error that says to set one (the
  event waits in the outbox).  ``MailDomain`` completes a bare user name
  (``alice`` -> ``alice@example.org``), as in Slurm.

:class:`RecordingSender` keeps what it was given, and can fail its first N
sends: tests assert exactly what was sent.
"""

from __future__ import annotations

import dataclasses
import json
import os
import smtplib
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.policy import SMTP
from typing import Any, Protocol

from slurmlite.config import Config
from slurmlite.mailtype import VERBS

TIMEOUT = 10.0  # seconds one try may take
# headers on one line up to RFC 5322's 998 characters: a subject is not folded mid-way
_ONE_LINE = SMTP.clone(max_line_length=998)


class DeliveryError(Exception):
    """A message not delivered this time; ``str()`` says why and what to do."""


@dataclass(frozen=True)
class Message:
    job_id: int
    event: str  # BEGIN, END, FAIL, ... (slurmlite.mailtype)
    recipient: str
    subject: str
    body: str
    job: dict[str, Any] = field(default_factory=dict)  # name, user, state, exit_code, ...
    message_id: str = ""  # the same at every try of one outbox row: "anchor-17-1733470000000"

    def payload(self) -> dict[str, Any]:
        """The webhook's JSON document."""
        return {
            "message_id": self.message_id,
            "job_id": self.job_id,
            "event": self.event,
            "subject": self.subject,
            "body": self.body,
            **self.job,
        }


class Sender(Protocol):
    def send(self, message: Message) -> None: ...


def is_url(recipient: str) -> bool:
    return recipient.startswith(("http://", "https://"))


class WebhookSender:
    def send(self, message: Message) -> None:
        data = json.dumps(message.payload()).encode()
        headers = {"Content-Type": "application/json"}
        if message.message_id:
            headers["Idempotency-Key"] = message.message_id
        req = urllib.request.Request(message.recipient, data=data, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as answer:  # noqa: S310 (http(s) only)
                answer.read()
        except urllib.error.HTTPError as exc:
            raise DeliveryError(f"webhook answered {exc.code}") from None
        except (OSError, ValueError) as exc:
            raise DeliveryError(f"webhook unreachable: {exc}") from None


class MailProgSender:
    def __init__(self, program: str) -> None:
        self.program = program

    def send(self, message: Message) -> None:
        job = message.job
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "SLURM_JOB_ID": str(message.job_id),
            "SLURM_JOB_USER": str(job.get("user", "")),
            "SLURM_JOB_MAIL_TYPE": VERBS.get(message.event, message.event),
            "SLURM_JOB_STATE": str(job.get("state", "")),
            "SLURM_JOB_NAME": str(job.get("name", "")),
        }
        argv = [self.program, "-s", message.subject, message.recipient]
        try:
            done = subprocess.run(
                argv, input=message.body.encode(), env=env, capture_output=True, timeout=TIMEOUT
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DeliveryError(f"MailProg {self.program} did not run: {exc}") from None
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip()[:200]
            raise DeliveryError(f"MailProg {self.program} exited {done.returncode}: {why}")


class SmtpSender:
    def __init__(self, server: str, sender: str) -> None:
        host, _, port = server.rpartition(":") if ":" in server else (server, "", "25")
        self.host, self.port, self.sender = host, int(port or 25), sender

    def send(self, message: Message) -> None:
        mail = EmailMessage(policy=_ONE_LINE)
        mail["From"], mail["To"], mail["Subject"] = self.sender, message.recipient, message.subject
        if message.message_id:  # a resent copy carries the same id (mail clients merge them)
            mail["Message-ID"] = f"<{message.message_id}@slurmlite>"
        mail.set_content(message.body)  # BEGIN and the like: no body, as in Slurm
        try:
            with smtplib.SMTP(self.host, self.port, timeout=TIMEOUT) as smtp:
                smtp.send_message(mail)
        except (OSError, smtplib.SMTPException) as exc:
            raise DeliveryError(f"SMTP {self.host}:{self.port}: {exc}") from None


class NoMail:
    def send(self, message: Message) -> None:
        raise DeliveryError("no mail transport: set MailProg or SlurmliteMailServer in slurm.conf")


class Router:
    """A URL to the webhook sender, a mail to the configured mail sender."""

    def __init__(self, mail: Sender, webhook: Sender, domain: str = "") -> None:
        self.mail, self.webhook, self.domain = mail, webhook, domain

    def send(self, message: Message) -> None:
        if is_url(message.recipient):
            self.webhook.send(message)
            return
        if self.domain and "@" not in message.recipient:
            message = _with_recipient(message, f"{message.recipient}@{self.domain}")
        self.mail.send(message)


def _with_recipient(message: Message, recipient: str) -> Message:
    return dataclasses.replace(message, recipient=recipient)


def sender_for(cfg: Config) -> Sender:
    """The senders slurm.conf asks for (see the module docstring)."""
    mail: Sender = NoMail()
    if cfg.mail_prog:
        mail = MailProgSender(cfg.mail_prog)
    elif cfg.mail_server:
        mail = SmtpSender(cfg.mail_server, cfg.mail_from)
    return Router(mail, WebhookSender(), cfg.mail_domain)


class RecordingSender:
    """A fake: records every message; the first ``failures`` sends raise."""

    def __init__(self, failures: int = 0) -> None:
        self.sent: list[Message] = []
        self.tries = 0
        self.failures = failures

    def send(self, message: Message) -> None:
        self.tries += 1
        if self.tries <= self.failures:
            raise DeliveryError("recording sender: told to fail")
        self.sent.append(message)
