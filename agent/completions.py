"""Completions: spooled until the controller acknowledges them, reported in batches.

When a run ends, its ``JobCompletion`` is written to
``<spool>/completions/<job>.<restarts>.json`` (written whole, then renamed
into place) and posted until the controller acknowledges it; only then are
the file and the run's directory dropped, so an agent restarted meanwhile
re-sends it (the controller ignores duplicates).  A job step's part on this
node (``agent.steps``) is spooled the same way as
``<job>.<restarts>.s<step>.json``; it has no run directory to drop.  ``held_jobs`` counts a
spooled completion as a job the node still holds.

Batching: every file pending when the reporter wakes goes in one request
(``POST /v1/nodes/<name>/completions``, up to ``REPORT_BATCH`` per
request), which the controller records in one transaction and answers with
one acknowledgement per item, in the batch's order (matched by position:
a batch step and a job step of the same run share job id and restart
count).  Two reports start at least ``REPORT_GAP``
apart, so completions that arrive in a burst share a request: e.g. 40 jobs
that ended within 50 ms cost one request, not 40 (and the controller one
transaction and one scheduling pass), while a lone completion after a quiet
spell goes out at once.  A controller without the batch route (404) gets
one request per completion.

Cheap files: what this agent queued is kept in memory, so a report reads
from disk only what an earlier agent left; and an acknowledged file is not
deleted but renamed ``.spare-<n>`` (at most ``SPARES``) and written over by
the next completion, so a steady stream of jobs creates no inode here (see
``agent.rundirs`` for why that matters).  Spares an earlier agent left are
removed at start.

``CompletionSpool`` is mixed into ``agent.daemon.AgentState``, whose
``spool``, ``name``, ``launcher``, ``timer`` (the gap is measured on it)
and ``post`` it uses.  The retry delay after a failed report doubles from
``RETRY_FIRST_S`` up to ``RETRY_MAX_S`` (``retry_delay``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from slurmlite.clock import Clock
from slurmlite.crashpoints import crash_point
from slurmlite.protocol import JobCompletion, to_dict

if TYPE_CHECKING:
    from agent.launcher import Launcher

log = logging.getLogger("slurmd")

REPORT_BATCH = 500  # completions per request; the controller records each batch in one transaction
REPORT_GAP = 0.05  # seconds between the starts of two reports, at least
SPARES = 256  # acknowledged completion files kept for reuse, at most
RETRY_FIRST_S = 0.2  # wait after a first failed report
RETRY_MAX_S = 5.0  # ... doubling up to this


def retry_delay(previous: float | None) -> float:
    """The wait before the next try after a failed one (``None``: the first failure).

    Reports and registrations both back off this way.

    >>> retry_delay(None), retry_delay(0.2), retry_delay(4.0)
    (0.2, 0.4, 5.0)
    """
    return RETRY_FIRST_S if previous is None else min(previous * 2, RETRY_MAX_S)


class CompletionSpool:
    """The completion half of the agent's state (a mixin of ``AgentState``)."""

    spool: Path
    name: str
    launcher: Launcher
    timer: Clock  # monotonic seconds: the gap between two reports

    async def post(self, path: str, payload: dict[str, Any]) -> httpx.Response:
        raise NotImplementedError  # AgentState signs and sends

    def open_spool(self) -> None:
        """Make ``<spool>/completions`` and forget an earlier agent's spares."""
        self._owed: dict[str, dict[str, Any]] = {}  # completion file name -> its content
        self._spares: list[Path] = []  # acknowledged completion files, reused by _queue
        folder = self.spool / "completions"
        folder.mkdir(parents=True, exist_ok=True)
        for spare in folder.glob(".spare-*"):
            spare.unlink(missing_ok=True)

    def _completion_path(self, job_id: int, restarts: int, step_id: str = "batch") -> Path:
        """``<job>.<restarts>.s<step>.json`` for a job step ("0", "1", ...), else
        ``<job>.<restarts>.json`` (the batch run: whatever step name its order had)."""
        tail = f".s{step_id}" if step_id.isascii() and step_id.isdigit() else ""
        return self.spool / "completions" / f"{job_id}.{restarts}{tail}.json"

    def _queue(self, msg: JobCompletion) -> None:
        """Spool ``msg`` (written whole, then renamed into place) and wake the reporter.

        The file written is a spare one when there is one (an acknowledged
        completion's, renamed ``.spare-<n>``): no inode is created, see
        ``agent.rundirs`` for why that matters.
        """
        path = self._completion_path(msg.job_id, msg.restarts, msg.step_id)
        data = to_dict(msg)
        tmp = self._spares.pop() if self._spares else path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
        self._owed[path.name] = data
        self._wake_reporter()

    async def queue_completion(self, msg: JobCompletion) -> None:
        self._queue(msg)

    def _wake_reporter(self) -> None:
        ev = getattr(self, "_report_event", None)
        if ev is not None:
            ev.set()

    async def report_forever(self) -> None:
        self._report_event = asyncio.Event()
        self._report_event.set()
        delay: float | None = None
        last = -REPORT_GAP
        while True:
            await self._report_event.wait()
            # coalesce: what ends while the gap runs out goes in the same request
            gap = last + REPORT_GAP - self.timer()
            if gap > 0:
                await asyncio.sleep(gap)
            self._report_event.clear()
            last = self.timer()
            folder = self.spool / "completions"
            pending = sorted(folder / n for n in os.listdir(folder) if n.endswith(".json"))
            failed = False
            for i in range(0, len(pending), REPORT_BATCH):
                failed |= not await self._report(pending[i : i + REPORT_BATCH])
            if failed:
                delay = retry_delay(delay)
                await asyncio.sleep(delay)
                self._report_event.set()
            else:
                delay = None

    def _owed_message(self, path: Path) -> dict[str, Any]:
        """A spooled completion: from memory when this agent queued it, else from disk."""
        data = self._owed.get(path.name)
        if data is None:
            data = json.loads(path.read_text())
            self._owed[path.name] = data
        return data

    async def _report(self, paths: list[Path]) -> bool:
        """Send these spooled completions in one request; forget the acknowledged ones.

        True if every one was acknowledged.  A controller without the batch
        route (404) gets them one request each, as before.
        """
        sent: list[Path] = []
        body: list[dict[str, Any]] = []
        unread = 0
        for path in paths:
            try:
                data = self._owed_message(path)
                int(data["job_id"]), int(data["restarts"])
            except (OSError, ValueError, KeyError, TypeError) as e:
                log.warning("event=completion_retry file=%s error=%r", path.name, str(e))
                unread += 1
                continue
            sent.append(path)
            body.append(data)
        if not body:
            return not unread
        crash_point("slurmd.completion.before_post")
        try:
            r = await self.post(f"/v1/nodes/{self.name}/completions", {"completions": body})
            if r.status_code == 404:
                return await self._report_one_by_one(sent)
            if r.status_code != 200:
                log.warning("event=completions_refused n=%s status=%s", len(body), r.status_code)
                return False
            acks = r.json()["results"]
        except (httpx.HTTPError, ValueError, KeyError) as e:
            log.warning("event=completions_retry n=%s error=%r", len(body), str(e))
            return False
        crash_point("slurmd.completion.after_ack")
        acked = 0
        for path, ack in _pair(sent, body, acks):
            if ack.get("ok"):
                self._acknowledged(path)
                acked += 1
        return acked == len(body) and not unread

    async def _report_one_by_one(self, paths: list[Path]) -> bool:
        ok = True
        for path in paths:
            try:
                r = await self.post(
                    f"/v1/jobs/{path.stem.split('.')[0]}/complete", json.loads(path.read_text())
                )
                if r.status_code == 200:
                    self._acknowledged(path)
                    continue
                log.warning("event=completion_refused file=%s status=%s", path.name, r.status_code)
            except (httpx.HTTPError, ValueError) as e:
                log.warning("event=completion_retry file=%s error=%r", path.name, str(e))
            ok = False
        return ok

    def _acknowledged(self, path: Path) -> None:
        parts = path.stem.split(".")
        if len(parts) == 2:  # a batch run's: its directory goes (a step has none)
            self.launcher.forget(int(parts[0]), int(parts[1]))  # first: a crash re-sends
        self._owed.pop(path.name, None)
        if len(self._spares) < SPARES:
            spare = path.with_name(f".spare-{len(self._spares)}")
            try:
                os.replace(path, spare)  # no longer *.json: not owed any more
                self._spares.append(spare)
                return
            except OSError:
                pass
        path.unlink(missing_ok=True)


def _pair(
    sent: list[Path], body: list[dict[str, Any]], acks: list[Any]
) -> list[tuple[Path, dict[str, Any]]]:
    """Each acknowledgement with the file it answers.

    The controller answers in the batch's order, one per item: matched by
    position when the count and every (job, restarts) agree -- a job's batch
    step and its steps share that pair, so only the position tells them
    apart.  Otherwise (an older controller) by (job, restarts), one each.
    """
    keys = [(d["job_id"], d["restarts"]) for d in body]
    answers = [a for a in acks if isinstance(a, dict)]
    if len(answers) == len(keys) and all(
        (a.get("job_id"), a.get("restarts")) == k for a, k in zip(answers, keys, strict=True)
    ):
        return list(zip(sent, answers, strict=True))
    by_key = dict(zip(keys, sent, strict=True))
    out = []
    for ack in answers:
        path = by_key.pop((ack.get("job_id"), ack.get("restarts")), None)
        if path is not None:
            out.append((path, ack))
    return out
