"""An allocation held by a command (srun outside a job, salloc): request, wait, keep, end.

The allocation is a job submitted with ``allocation=True`` and no script:
the controller schedules it like any job but launches nothing; the command
holding it keeps it alive and ends it (``POST /v1/jobs/{id}/allocation``,
``ControllerClient.allocation_update``).

Waiting, as Slurm's srun and salloc report it on stderr:

* started at once (within :data:`GRACE` seconds, slurmlite's scheduler runs
  just after the submission): nothing from srun (golden
  ``17_srun_step_in_env``), ``salloc: Granted job allocation N``;
* otherwise ``srun: job N queued and waiting for resources`` and, once it
  runs, ``srun: job N has been allocated resources`` (golden
  ``17_srun_label_hostname``); salloc says ``Pending job allocation N``
  first and ``Granted job allocation N`` last;
* while it waits because of a limit the user's own running jobs hold
  (``QOSMaxJobsPerUserLimit``, ``QOSMaxGRESPerUser``..., ``reasons.USER_LIMITS``),
  one more line names the limit and those jobs, as ``slurmlite explain``
  words it: ``srun: your QOS normal allows 2 running jobs per user; 2 of your
  jobs (5,6) are running`` -- once, and again only when the reason changes
  (slurmlite's addition; Slurm says nothing);
* Ctrl-C (or TERM/HUP) while waiting ends the request (an allocation ended
  while pending is cancelled):
  ``srun: Job allocation N has been revoked``, exit 1; so does a job that
  ends before it ever ran (scancel'd, refused).

Polling ``GET /v1/jobs?ids=N`` starts at 50 ms and backs off to 1 s.  The
keepalive thread (its own client: connections are not shared between
threads) posts every :data:`KEEPALIVE` seconds; if the controller says the
job is gone (cancelled, timed out), ``revoked`` is set and ``on_revoked``
called.  ``-Q`` silences the informational lines, never the errors.
"""

from __future__ import annotations

import signal
import sys
import threading
import time

from cli.common import get_client
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.srun_request import REFUSED

TYPE_CHECKING = False  # importing typing costs a command ~3 ms
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

GRACE = 0.5  # seconds a fresh allocation may take to start before it counts as queued
KEEPALIVE = 10.0
_GONE = (errors.ESLURM_INVALID_JOB_ID, errors.ESLURM_ALREADY_DONE)
_WAITING = ("PENDING", "CONFIGURING")


class AllocationFailed(Exception):
    """The allocation never started; ``lines`` say why (stderr), exit 1."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


class _Interrupted(Exception):
    pass


def _interrupt(_signum: int, _frame: object) -> None:
    raise _Interrupted


class Allocation:
    def __init__(self, client: Any, prog: str, quiet: bool = False) -> None:
        self.client, self.prog, self.quiet = client, prog, quiet
        self.job_id = 0
        self.job: Any = None
        self.revoked = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def info(self, text: str) -> None:
        if not self.quiet:
            print(f"{self.prog}: {text}", file=sys.stderr, flush=True)

    # --------------------------------------------------------------- request

    def request(self, fields: dict[str, Any], sleep: Callable[[float], None] = time.sleep) -> Any:
        """Submit and wait until the job runs; its JobInfo view (raises AllocationFailed)."""
        try:
            self.job_id = int(self.client.submit(fields).job_id)
        except SlurmError as e:
            what = REFUSED[self.prog]
            lines = [f"{self.prog}: error: {e.detail}"] if e.detail else []
            raise AllocationFailed([*lines, f"{self.prog}: error: {what}: {e.message}"]) from None
        saved = {
            s: signal.signal(s, _interrupt) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        }
        try:
            self.job = self._wait(sleep)
        except _Interrupted:
            self._cancel()
            raise AllocationFailed([self._revoked_line()]) from None
        finally:
            for number, handler in saved.items():
                signal.signal(number, handler)
        return self.job

    def _revoked_line(self) -> str:
        stop = "." if self.prog == "salloc" else ""
        return f"{self.prog}: Job allocation {self.job_id} has been revoked{stop}"

    def _state(self) -> Any:
        jobs = self.client.get_jobs(job_ids=[self.job_id], all_states=True)
        return jobs[0] if jobs else None

    def _wait(self, sleep: Callable[[float], None]) -> Any:
        start, delay, queued = time.monotonic(), 0.05, False
        said = "None"  # the last reason the user was told about
        while True:
            job = self._state()
            state = getattr(job, "state", None)
            if state == "RUNNING":
                if queued:
                    self.info(f"job {self.job_id} has been allocated resources")
                if self.prog == "salloc":
                    self.info(f"Granted job allocation {self.job_id}")
                return job
            if state not in _WAITING:  # gone, or finished without running
                raise AllocationFailed([self._revoked_line()])
            if not queued and time.monotonic() - start >= GRACE:
                queued = True
                if self.prog == "salloc":
                    self.info(f"Pending job allocation {self.job_id}")
                self.info(f"job {self.job_id} queued and waiting for resources")
            reason = getattr(job, "reason", "None")
            if queued and reason != said:
                said = reason
                self._say_limit(reason)
            sleep(delay)
            delay = min(delay * 1.5, 1.0)

    def _say_limit(self, reason: str) -> None:
        """The line naming the user's own limit that holds the job (explain's words)."""
        from slurmlite.reasons import USER_LIMITS

        if self.quiet or reason not in USER_LIMITS:
            return
        try:
            data = self.client.request("GET", f"/v1/jobs/{self.job_id}/explain")
        except SlurmError:
            return  # only a remark: the wait goes on without it
        text = data.get("user_limit") if isinstance(data, dict) else None
        if text:
            self.info(text)

    def _cancel(self) -> None:
        """End the request: an allocation ended while pending is cancelled."""
        close = getattr(self.client, "close", None)
        if close is not None:  # the interrupted request may have left the connection mid-answer
            close()
        try:
            self.client.allocation_update(self.job_id, end=True, exit_code=0)
        except SlurmError:
            try:
                self.client.cancel({"job_ids": [self.job_id]})
            except SlurmError:
                pass

    # ------------------------------------------------------------- keepalive

    def keep_alive(
        self, on_revoked: Callable[[], None] | None = None, interval: float | None = None
    ) -> None:
        """Start the keepalive thread (every ``interval`` s, default :data:`KEEPALIVE`)."""
        every = KEEPALIVE if interval is None else interval
        self._thread = threading.Thread(target=self._keep, args=(on_revoked, every), daemon=True)
        self._thread.start()

    def _keep(self, on_revoked: Callable[[], None] | None, interval: float) -> None:
        client = None
        while not self._stop.wait(interval):
            try:
                client = client or get_client(self.prog)
                answer = client.allocation_update(self.job_id)
                gone = getattr(answer, "state", "RUNNING") not in ("RUNNING", *_WAITING)
            except SlurmError as e:
                gone = e.code in _GONE
                client = None  # a fresh connection next time
            if gone:
                self.revoked.set()
                if on_revoked is not None:
                    on_revoked()
                return

    def release(self, exit_code: int = 0) -> None:
        """End the allocation with the command's raw wait status."""
        self._stop.set()
        if self.revoked.is_set() or not self.job_id:
            return
        try:
            self.client.allocation_update(self.job_id, end=True, exit_code=exit_code)
        except SlurmError as e:
            if e.code not in _GONE:
                print(f"{self.prog}: error: {e.full}", file=sys.stderr)
