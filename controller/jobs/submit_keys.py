"""The store's side of "a lost reply never makes a second job": keys and deadlines.

``slurmlite.idempotency`` states the protocol; this module is what
``JobService.submit_many`` does with it, batch by batch:

1. a key already stored *for the same uid* is answered with its first
   answer and stores nothing.  It is found by its primary key ``(key,
   uid)``: the batch's key insert (step 3) fails, the batch is rolled back
   and tried one request at a time, and the request whose insert fails
   again is answered from the store (one ``SELECT`` by key).  So first
   attempts, nearly all submissions, pay no lookup; a retry pays a
   rollback.  A keyed request that validation refused is looked up too (its
   own first job may now fill the user's limits); a key repeated within the
   batch gets the answer of its first occurrence;
2. inside the write transaction, a request whose command has given up, or
   is about to (``now >= deadline - COMMIT_MARGIN``), is refused with
   ``Socket timed out on send/recv operation`` unless its key is stored
   (looked up, under the write lock: only for such late requests);
3. the keys of the new jobs are inserted in the same transaction as the
   jobs: a job and its key are committed together or not at all.  A key
   stored by another writer in between makes the insert fail on the primary
   key; the batch is retried one request at a time, and the culprit finds
   the key and gets its answer.

Keys are kept :data:`~slurmlite.idempotency.KEY_TTL` (a day); at most
every :data:`PURGE_EVERY` seconds a submission's transaction also deletes
the older ones (one range delete on the ``created`` index).

Worked example: alice submits with key ``k1`` and the answer is lost; her
sbatch retries with ``k1``; step 1 finds ``(alice, k1) -> job 7`` and
answers ``{"job_id": 7}`` again, nothing stored.  Bob sending ``k1`` gets
a job of his own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, delete, select

from controller.store.models import SubmitKeyRow
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.idempotency import COMMIT_MARGIN, KEY_TTL

PURGE_EVERY = 600.0  # seconds between purges of old keys
_KEYS = SubmitKeyRow.__table__
_FIND = select(
    _KEYS.c.key, _KEYS.c.uid, _KEYS.c.job_id, _KEYS.c.error_code, _KEYS.c.error_detail
).where(_KEYS.c.key.in_(bindparam("keys", expanding=True)))

Answer = tuple[int, str | None] | SlurmError  # what a repeated key is answered
Owner = tuple[int, str]  # (uid, key)


@dataclass(frozen=True)
class Attempt:
    """What a submission says about its delivery: its key and its command's deadline
    (Unix time), each None when not sent.  ``with_job``: more rows to store in the
    job's own transaction, given the new job's id (a workload run's row,
    ``controller.runs.service``)."""

    key: str | None = None
    deadline: float | None = None
    with_job: Callable[[Connection, int], None] | None = None


def with_jobs(conn: Connection, numbered: list[Any], tries: list[Attempt | None]) -> None:
    """Write the extra rows of each job just stored (``Attempt.with_job``) in its
    transaction; ``numbered``: ``JobService``'s (index, job id, request, plan, values)."""
    for i, job_id, req, plan, _values in numbered:
        attempt = tries[i]
        if attempt is not None and attempt.with_job is not None:
            if plan.error is None and not req.test_only:
                attempt.with_job(conn, job_id)


def find(conn: Connection, owners: set[Owner]) -> dict[Owner, Answer]:
    """The stored answers of these ``(uid, key)`` pairs (absent: not stored)."""
    if not owners:
        return {}
    rows = conn.execute(_FIND, {"keys": sorted({key for _, key in owners})})
    found: dict[Owner, Answer] = {}
    for key, uid, job_id, code, detail in rows:
        if (uid, key) in owners:  # another user's key of the same text is none of ours
            found[(uid, key)] = (job_id, None) if code is None else SlurmError(code, detail)
    return found


def answer_or(conn: Connection, uid: int, key: str | None, other: Exception) -> Answer | Exception:
    """The stored answer of ``(uid, key)``, else ``other``."""
    if not key:
        return other
    found = find(conn, {(uid, key)})
    return replay(found[(uid, key)]) if (uid, key) in found else other


def replay(answer: Answer) -> Answer:
    """A stored answer for one more caller (an error is a fresh exception each time)."""
    if isinstance(answer, SlurmError):
        return SlurmError(answer.code, answer.detail)
    return answer


def too_late(attempt: Attempt | None, now: float) -> bool:
    """May a new job for this attempt no longer be committed at ``now``?"""
    return (
        attempt is not None
        and attempt.deadline is not None
        and (now >= attempt.deadline - COMMIT_MARGIN)
    )


def late_refusal() -> SlurmError:
    """The answer to a submission that came too late: nothing was stored."""
    return SlurmError(errors.SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT)


def key_row(uid: int, key: str, job_id: int, now: float, error: SlurmError | None) -> dict:  # type: ignore[type-arg]
    return {
        "key": key,
        "uid": uid,
        "job_id": job_id,
        "created": now,
        "error_code": None if error is None else error.code,
        "error_detail": None if error is None else error.detail,
    }


def insert(conn: Connection, rows: list[dict]) -> None:  # type: ignore[type-arg]
    if rows:
        conn.execute(_KEYS.insert(), rows)


class Purger:
    """Deletes keys older than a day, at most once every :data:`PURGE_EVERY` seconds."""

    def __init__(self) -> None:
        self.last = float("-inf")

    def maybe(self, conn: Connection, now: float) -> None:
        if now - self.last < PURGE_EVERY:
            return
        self.last = now
        conn.execute(delete(_KEYS).where(_KEYS.c.created < now - KEY_TTL))
