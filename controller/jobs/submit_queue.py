"""Group commit: concurrent submissions share one transaction.

A commit is the expensive part of accepting a job (the store's bookkeeping
and, on PostgreSQL, a round trip), and it costs about as much for sixteen
rows as for one.  So the API does not commit per request: each submission
waits in a queue, and one writer at a time stores everything that is
waiting in ONE transaction (``JobService.submit_many``), then answers every
caller of that batch.  While a batch is being written, the next one
gathers; under load batches grow by themselves, an idle controller writes a
lone request at once (no timer, no added delay).

Invariants:

* an answer is given only after the commit that stored its job: a
  submission is as durable as before;
* ids stay unique and increase in arrival order (one counter reservation
  per batch, numbered in queue order);
* a request refused by validation, or one whose row the database rejects,
  fails alone: ``submit_many`` gives each request its own outcome, and
  retries the others one by one if the batch transaction fails;
* the scheduler is woken once per batch that stored a job;
* a caller cancelled while it waits (shutdown) is dropped from the queue
  and its job never stored; once its batch is being written, the job is
  stored whatever happens to the caller.

Worked example: 16 connections each post a job while batch 1 (ids 1-3) is
being committed; they queue; when batch 1 is answered the writer takes all
16, reserves ids 4-19 in one update of the counter, inserts 16 rows in one
statement, commits once and answers 16 callers.

The writer runs as an asyncio task per event loop (the database work goes
to a worker thread, so the loop keeps reading requests); it exists only
while something waits.  Tests that drive the app with several event loops
(one per ``TestClient``) get a queue per loop.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from controller.auth.callers import Caller
from controller.jobs.service import JobService
from controller.jobs.submit_keys import Attempt
from slurmlite.openmetrics import Histogram
from slurmlite.protocol import JobSubmit

# submit latency buckets, seconds (slurmlite_submit_latency_seconds, controller.metrics)
LATENCY_BOUNDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

MAX_BATCH = 256  # submissions per transaction, at most

Answer = tuple[int, str | None]  # (job id, --test-only message)
_Item = tuple[Caller, JobSubmit, Attempt | None, "asyncio.Future[Answer]"]


@dataclass
class _Waiting:
    """The submissions of one event loop not yet taken by its writer."""

    items: list[_Item] = field(default_factory=list)
    writer: asyncio.Task[None] | None = None


class SubmitQueue:
    def __init__(self, jobs: JobService, wake: Callable[[], None]) -> None:
        self.jobs = jobs
        self.wake = wake  # the scheduler's: called after a batch stored a job
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Waiting] = (
            weakref.WeakKeyDictionary()
        )
        self.latency = Histogram(LATENCY_BOUNDS)  # queued -> committed (or refused)

    async def submit(
        self, caller: Caller, req: JobSubmit, attempt: Attempt | None = None
    ) -> Answer:
        """Queue one submission; return (job id, --test-only message) once it is committed.

        ``attempt``: its idempotency key and deadline, if it has them.  Raises what
        ``JobService.submit`` would raise for this request alone.
        """
        loop = asyncio.get_running_loop()
        waiting = self._loops.get(loop)
        if waiting is None:
            waiting = self._loops[loop] = _Waiting()
        future: asyncio.Future[Answer] = loop.create_future()
        waiting.items.append((caller, req, attempt, future))
        if waiting.writer is None:
            waiting.writer = loop.create_task(self._write(waiting))
        began = time.perf_counter()
        try:
            return await future
        finally:
            self.latency.observe(time.perf_counter() - began)

    async def _write(self, waiting: _Waiting) -> None:
        """Store what waits, batch after batch, until nothing does."""
        batch: list[_Item] = []
        try:
            while waiting.items:
                batch = [item for item in waiting.items[:MAX_BATCH] if not item[3].done()]
                del waiting.items[:MAX_BATCH]  # done already: its caller was cancelled
                if not batch:
                    continue
                pairs = [(c, r) for c, r, _, _ in batch]
                tries = [a for _, _, a, _ in batch]
                args = (pairs, tries) if any(tries) else (pairs,)  # none keyed: as before
                outcomes = await asyncio.to_thread(self.jobs.submit_many, *args)
                stored = False
                for (_c, req, _a, future), outcome in zip(batch, outcomes, strict=True):
                    if isinstance(outcome, Exception):
                        if not future.done():
                            future.set_exception(outcome)
                        continue
                    stored = stored or not req.test_only
                    if not future.done():  # done: the caller went away; the job stays
                        future.set_result(outcome)
                batch = []
                if stored:
                    self.wake()
        except BaseException as e:  # cancelled (shutdown) or a bug: nobody is left waiting
            for _c, _r, _a, future in [*batch, *waiting.items]:
                if future.done():
                    continue
                if isinstance(e, asyncio.CancelledError):
                    future.cancel()
                else:
                    future.set_exception(e)
            waiting.items.clear()
            raise
        finally:
            waiting.writer = None
