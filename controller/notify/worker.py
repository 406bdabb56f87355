"""The delivery worker: the outbox's due rows sent, retried, marked, off the loop.

A daemon thread owned by the controller (``Controller.start``/``stop``); it
never holds the store's write lock while it talks to a mail server.  Each
round (every ``interval`` seconds, or at once when woken):

1. the time-limit warnings now due are recorded
   (``controller.notify.outbox.record_warnings``, one short transaction);
2. up to ``BATCH`` due rows (``delivered`` NULL, ``next_try`` passed, oldest
   first) are read with their jobs; each message's body is made then: for
   END and FAIL the job's ``seff`` summary (``slurmlite.seff.seff_text``
   over ``controller.accounting.usage.usage_of``), so the usage the agents
   reported at the end is in it;
3. each is sent (``controller.notify.senders``); the outcome is written in
   its own short transaction: ``delivered = now``, or ``attempts + 1`` and
   ``next_try = now + backoff`` with the error kept in ``last_error``.

Delivery is at least once: a controller that dies between a send and its
``delivered`` mark sends the message again after its restart.  Every try of
one row carries the same :meth:`DeliveryWorker.message_id` (the webhook's
``message_id`` and ``Idempotency-Key``, the mail's ``Message-ID``), so a
receiver can drop the copy.

Backoff doubles from ``BASE`` up to ``CAP``: after tries 1, 2, 3, 4 a row
waits 1, 2, 4, 8 s ... then 600 s between tries, for as long as it takes
(an event is never dropped; ``slurmlite check`` style tools see the row).
Every failure logs one ``event=notify_failed`` line with the job, the
destination, the try and what to fix.  Delivered rows older than
``KEEP`` seconds are deleted.

The worker's clock is a parameter (tests pass a fake one and call
:meth:`DeliveryWorker.run_once`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from controller.accounting.usage import usage_of
from controller.notify.outbox import Destinations, record_warnings, warnings_possible
from controller.notify.senders import DeliveryError, Message, Sender
from controller.store.db import Database
from controller.store.models import JobRow, StepRow
from controller.store.models_notify import OutboxRow
from controller.store.rows import job_info
from slurmlite.seff import seff_text

log = logging.getLogger("slurmctld.notify")

BATCH = 50
BASE, CAP = 1.0, 600.0
KEEP = 7 * 86400.0
WITH_SUMMARY = ("END", "FAIL")


def backoff(attempts: int) -> float:
    """Seconds before try ``attempts + 1``: 1, 2, 4, ... capped at ``CAP``."""
    return min(CAP, BASE * 2 ** max(0, attempts - 1))


class DeliveryWorker:
    def __init__(
        self,
        db: Database,
        sender: Callable[[], Sender],
        where: Destinations,
        clock: Callable[[], float] = time.time,
        cluster: Callable[[], str] = lambda: "",
        interval: float = 1.0,
    ) -> None:
        self.db, self.sender, self.where, self.clock = db, sender, where, clock
        self.cluster, self.interval = cluster, interval
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._cleaned = 0.0

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="notify", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """Stop after the current send (each try is bounded by the senders' timeout)."""
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.run_once()
            except Exception:  # the store busy or gone for a moment: the next round retries
                log.exception("event=notify_round_failed")
            self._wake.wait(self.interval)
            self._wake.clear()

    def run_once(self) -> int:
        """One round (see the module docstring); how many messages were delivered."""
        now = self.clock()
        with self.db.read() as s:
            warn = warnings_possible(s)
        if warn:  # the write lock only when a running job asked for a warning
            with self.db.write() as s:
                record_warnings(s, now, self.where)
        delivered = 0
        for row_id, message in self._due(now):
            if self._stopped.is_set() and self._thread is not None:
                break
            delivered += self._try(row_id, message)
        if now - self._cleaned > 3600.0:  # hourly: delivered rows past KEEP go
            self._cleaned = now
            with self.db.write() as s:
                s.execute(delete(OutboxRow).where(OutboxRow.delivered < now - KEEP))
        return delivered

    def _due(self, now: float) -> list[tuple[int, Message]]:
        with self.db.read() as s:
            q = (
                select(OutboxRow)
                .where(OutboxRow.delivered.is_(None), OutboxRow.next_try <= now)
                .order_by(OutboxRow.id)
                .limit(BATCH)
            )
            rows = list(s.scalars(q))
            return [(r.id, self._message(s, r, now)) for r in rows]

    def _message(self, s: Session, row: OutboxRow, now: float) -> Message:
        job = s.get(JobRow, row.job_id)
        facts: dict[str, object] = {}
        body = ""
        if job is not None:
            facts = {
                "name": job.name,
                "user": job.user,
                "state": job.state,
                "exit_code": job.exit_code,
                "array_job_id": job.array_job_id,
                "array_task_id": job.array_task_id,
            }
            if row.event in WITH_SUMMARY:
                body = self._summary(s, job, now)
        return Message(
            row.job_id, row.event, row.recipient, row.subject, body, facts, self.message_id(row)
        )

    def message_id(self, row: OutboxRow) -> str:
        """The row's stable id, the same at every try: cluster, row id, and when it was
        recorded in ms (a row id the store reuses after a purge still gives a new id)."""
        return f"{self.cluster() or 'slurmlite'}-{row.id}-{int(row.created * 1000)}"

    def _summary(self, s: Session, job: JobRow, now: float) -> str:
        try:
            steps = list(s.scalars(select(StepRow).where(StepRow.job_id == job.id)))
            usage = usage_of(s, [job.id]).get(job.id)
            return seff_text(job_info(job, steps), usage, self.cluster(), now)
        except Exception:  # a summary that cannot be made never holds the mail back
            log.exception("event=notify_summary_failed job=%s", job.id)
            return ""

    def _try(self, row_id: int, message: Message) -> int:
        try:
            self.sender().send(message)
            error = None
        except DeliveryError as exc:
            error = str(exc)
        except Exception as exc:  # a sender's bug: counted and backed off like a refusal
            log.exception("event=notify_sender_error job=%s", message.job_id)
            error = f"{type(exc).__name__}: {exc}"
        now = self.clock()
        with self.db.write() as s:
            row = s.get(OutboxRow, row_id)
            if row is None:
                return 0
            if error is None:
                row.delivered, row.last_error = now, None
                log.info(
                    "event=notify_sent job=%s what=%s to=%s", row.job_id, row.event, row.recipient
                )
                return 1
            row.attempts += 1
            row.last_error = error
            row.next_try = now + backoff(row.attempts)
            log.warning(
                "event=notify_failed job=%s what=%s to=%s try=%s retry_in=%.0fs error=%r",
                row.job_id,
                row.event,
                row.recipient,
                row.attempts,
                backoff(row.attempts),
                error,
            )
        return 0
