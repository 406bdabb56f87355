"""Runs on the controller: creating one with its job, showing it, its secrets and snapshots.

A run is a batch job plus a ``runs`` row written *in the job's own
transaction* (``Attempt.with_job``), so there is never a run without its
job nor a run's job without its row.  Its id is the job id: ``squeue``,
``sacct``, ``scancel``, ``explain``, fair-share and limits see a normal job.

* **Idempotency.**  A run's key (``--idempotency-key`` or the file's
  ``idempotency_token``) is unique per user and kept as long as the run: the
  same key again answers the first run's id and submits nothing.  The job's
  submission carries a key derived from it too, so a lost reply retried at
  once is answered from ``submit_keys`` like any ``sbatch``.
* **Retries** (``retry_failed``): an attempt that ends FAILED or
  OUT_OF_MEMORY while ``retries < max_retries`` goes back to the queue at
  once (restart cause ``retry:<exit code>``); a node failure's requeue
  (``node_fail``) does not count against the budget.  TIMEOUT and CANCELLED
  end the run: a time limit or a person said stop.
* **Attempts** (``view``): every ended run of the job (``job_runs``, written
  by ``controller.sched.requeue``) and the job itself for the current one;
  attempt N is the run with restart count N (``ATTEMPT`` and
  ``SLURM_RESTART_COUNT`` on the nodes).
* **Who sees what**: a run's spec, attempts, logs and node environment only
  its owner and operators; ``list --all-users`` shows everyone's ids, names
  and states, as squeue does; secrets' values nobody but the owner's running
  run (``node_env``).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import delete, func, insert, select
from sqlalchemy.engine import Connection

from controller.auth.callers import Caller, may_act_on, user_name
from controller.runs.secrets import NAME, SecretBox
from controller.runs.snapshots import SnapshotFiles
from controller.sched.launch import output_paths
from controller.sched.requeue import requeue_run
from controller.store.db import Database
from controller.store.models import JobRow
from controller.store.models_runs import JobRunRow, RunRow, SecretRow, SnapshotOwnerRow
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.restarts import RETRY

__all__ = ["RETRIED", "RunService", "retry_failed", "submit_key"]

RETRIED = ("FAILED", "OUT_OF_MEMORY")
_ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED")


def submit_key(key: str) -> str:
    """The job submission's idempotency key for a run's key (printable, no spaces)."""
    return "run-" + hashlib.sha256(key.encode()).hexdigest()[:40]


def retry_failed(s: Any, row: JobRow, now: float) -> bool:
    """``row`` just ended FAILED/OUT_OF_MEMORY: requeue it if it is a run with retries left."""
    if row.state not in RETRIED:
        return False
    run = s.get(RunRow, row.id)
    if run is None or run.retries >= run.max_retries:
        return False
    run.retries += 1
    code = row.exit_code or 0
    requeue_run(s, row, now, 0, RETRY, f"{code >> 8}:{code & 0x7F}")
    return True


def _refused(why: str) -> SlurmError:
    return SlurmError(errors.SLURMLITE_RUN_REFUSED, why)


class RunService:
    def __init__(
        self,
        db: Database,
        state_dir: str,
        cluster_key: bytes,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.files = SnapshotFiles(state_dir)
        self.box = SecretBox(cluster_key)
        self.clock = clock

    # ----------------------------------------------------------- creating

    def existing(self, uid: int, key: str | None) -> int | None:
        """The run a user's key already made, if any."""
        if not key:
            return None
        with self.db.read() as s:
            q = select(RunRow.job_id).where(RunRow.uid == uid, RunRow.idempotency_key == key)
            return s.scalar(q)

    def check(self, caller: Caller, snapshot: str | None, secrets: dict[str, str]) -> None:
        """Refuse a run whose snapshot the caller did not upload or whose secrets are unset."""
        with self.db.read() as s:
            if snapshot and s.get(SnapshotOwnerRow, (snapshot, caller.uid)) is None:
                raise _refused(f"code snapshot {snapshot[:12]} was not uploaded by {caller.user}")
            have = set(s.scalars(select(SecretRow.name).where(SecretRow.uid == caller.uid)))
        missing = sorted(set(secrets.values()) - have)
        if missing:
            raise _refused(
                f"secret {missing[0]} is not set for {caller.user} (slurmlite secret set {missing[0]})"
            )

    def row_writer(self, caller: Caller, run: dict[str, Any]) -> Callable[[Connection, int], None]:
        """What stores the run's row in its job's transaction (``Attempt.with_job``)."""
        values = {
            "uid": caller.uid,
            "name": str(run["name"]),
            "spec": json.dumps(run.get("spec") or {}),
            "idempotency_key": run.get("idempotency_key") or None,
            "snapshot": run.get("snapshot") or None,
            "secrets": json.dumps(run.get("secrets") or {}),
            "max_retries": int(run.get("max_retries", 3)),
            "retries": 0,
            "mlflow_run_id": run.get("mlflow_run_id"),
            "created": self.clock(),
        }

        def write(conn: Connection, job_id: int) -> None:
            conn.execute(insert(RunRow.__table__), [{**values, "job_id": job_id}])

        return write

    # ------------------------------------------------------------ reading

    def _own_run(self, s: Any, caller: Caller, job_id: int) -> tuple[RunRow, JobRow]:
        run, job = s.get(RunRow, job_id), s.get(JobRow, job_id)
        if run is None or job is None:
            raise SlurmError(errors.SLURMLITE_NO_SUCH_RUN, f"run {job_id}")
        if not may_act_on(caller, run.uid):
            raise SlurmError(errors.ESLURM_ACCESS_DENIED, f"run {job_id} is {job.user}'s")
        return run, job

    def view(self, caller: Caller, job_id: int) -> dict[str, Any]:
        """``slurmlite get run``: spec, state, attempts, snapshot, secrets' names, MLflow id."""
        with self.db.read() as s:
            run, job = self._own_run(s, caller, job_id)
            history = s.scalars(
                select(JobRunRow).where(JobRunRow.job_id == job_id).order_by(JobRunRow.restart)
            ).all()
            attempts = [
                {
                    "attempt": h.restart,
                    "state": h.state,
                    "start_time": h.start_time,
                    "end_time": h.end_time,
                    "exit_code": h.exit_code,
                    "nodes": h.nodes.split(",") if h.nodes else [],
                    "ended_by": h.cause,
                }
                for h in history
            ]
            if job.start_time is not None or job.state not in ("PENDING",):
                attempts.append(
                    {
                        "attempt": job.restarts,
                        "state": job.state,
                        "start_time": job.start_time,
                        "end_time": job.end_time,
                        "exit_code": job.exit_code,
                        "nodes": job.nodes.split(",") if job.nodes else [],
                        "ended_by": None,
                    }
                )
            return {
                **_summary(run, job),
                "reason": job.reason,
                "spec": json.loads(run.spec),
                "snapshot": run.snapshot,
                "secrets": sorted(json.loads(run.secrets)),
                "max_retries": run.max_retries,
                "retries": run.retries,
                "attempt": job.restarts,
                "attempts": attempts,
                "mlflow_run_id": run.mlflow_run_id,
            }

    def listing(self, caller: Caller, all_users: bool, states: list[str]) -> list[dict[str, Any]]:
        q = select(RunRow, JobRow).join(JobRow, JobRow.id == RunRow.job_id)
        if not all_users:
            q = q.where(RunRow.uid == caller.uid)
        if states:
            q = q.where(JobRow.state.in_(states))
        with self.db.read() as s:
            return [_summary(run, job) for run, job in s.execute(q.order_by(RunRow.job_id))]

    def attempt_nodes(
        self, caller: Caller, job_id: int, attempt: int | None
    ) -> tuple[int, list[str], int]:
        """(attempt, its nodes in order, the owner's uid) for ``logs``."""
        with self.db.read() as s:
            run, job = self._own_run(s, caller, job_id)
            which = job.restarts if attempt is None else attempt
            if which == job.restarts:
                nodes = job.nodes
            else:
                h = s.get(JobRunRow, (job_id, which))
                if h is None:
                    raise SlurmError(
                        errors.SLURMLITE_NO_SUCH_RUN, f"run {job_id} has no attempt {which}"
                    )
                nodes = h.nodes
            return which, nodes.split(",") if nodes else [], run.uid

    def log_source(self, caller: Caller, job_id: int, attempt: int | None) -> dict[str, Any]:
        """Where ``slurmlite logs`` reads from: a run's attempt (its nodes, ``attempt``), or
        a plain batch job's output file on its batch host (``path``); with the owner's uid
        and whether the job has ended."""
        with self.db.read() as s:
            job = s.get(JobRow, job_id)
            run = s.get(RunRow, job_id)
            if job is None:
                raise SlurmError(errors.SLURMLITE_NO_SUCH_RUN, f"run {job_id}")
            if not may_act_on(caller, job.uid):
                raise SlurmError(errors.ESLURM_ACCESS_DENIED, f"run {job_id} is {job.user}'s")
            ended = job.state in _ENDED
            if run is None:
                if job.allocation or not job.batch_host:
                    return {"nodes": [], "attempt": job.restarts, "uid": job.uid, "ended": ended}
                path = output_paths(job, job.batch_host)[0]
                nodes = [job.batch_host]
                return {"nodes": nodes, "path": path, "uid": job.uid, "ended": ended,
                        "attempt": job.restarts}  # fmt: skip
        which, nodes, uid = self.attempt_nodes(caller, job_id, attempt)
        return {"nodes": nodes, "attempt": which, "uid": uid, "ended": ended}

    def node_env(self, caller: Caller, job_id: int) -> dict[str, Any]:
        """What ``slurmlite node-run`` adds on a node of a running run: secrets, MLflow id.
        Only the owner (not even an operator: a value is for the run alone), only RUNNING."""
        with self.db.read() as s:
            run, job = s.get(RunRow, job_id), s.get(JobRow, job_id)
            if run is None or job is None:
                raise SlurmError(errors.SLURMLITE_NO_SUCH_RUN, f"run {job_id}")
            if caller.uid != run.uid:
                raise SlurmError(errors.ESLURM_ACCESS_DENIED, f"run {job_id} is {job.user}'s")
            if job.state != "RUNNING":
                raise SlurmError(errors.ESLURM_JOB_NOT_RUNNING, f"run {job_id} is {job.state}")
            wanted: dict[str, str] = json.loads(run.secrets)
            rows = {
                r.name: r
                for r in s.scalars(
                    select(SecretRow).where(
                        SecretRow.uid == run.uid, SecretRow.name.in_(set(wanted.values()))
                    )
                )
            }
        values = {}
        for var, name in wanted.items():
            row = rows.get(name)
            if row is None:
                raise SlurmError(errors.SLURMLITE_NO_SUCH_SECRET, f"secret {name} was deleted")
            values[var] = self.box.open(run.uid, name, row.value).decode()
        return {
            "secrets": values,
            "mlflow_run_id": run.mlflow_run_id,
            "retries": run.retries,
            "max_retries": run.max_retries,
        }

    # ------------------------------------------------------------ secrets

    def set_secret(self, caller: Caller, name: str, value: str) -> None:
        if not NAME.fullmatch(name):
            raise _refused(f"not a secret name: {name!r} (letters, digits, _ . - /)")
        sealed = self.box.seal(caller.uid, name, value.encode())
        with self.db.write() as s:
            row = s.get(SecretRow, (caller.uid, name))
            if row is None:
                s.add(SecretRow(uid=caller.uid, name=name, value=sealed, updated=self.clock()))
            else:
                row.value, row.updated = sealed, self.clock()

    def secrets(self, caller: Caller) -> list[dict[str, Any]]:
        with self.db.read() as s:
            rows = s.scalars(
                select(SecretRow).where(SecretRow.uid == caller.uid).order_by(SecretRow.name)
            )
            return [{"name": r.name, "updated": r.updated} for r in rows]

    def delete_secret(self, caller: Caller, name: str) -> None:
        with self.db.write() as s:
            gone = s.execute(
                delete(SecretRow).where(SecretRow.uid == caller.uid, SecretRow.name == name)
            )
            if not gone.rowcount:  # type: ignore[attr-defined]
                raise SlurmError(errors.SLURMLITE_NO_SUCH_SECRET, name)

    # ---------------------------------------------------------- snapshots

    def owns_snapshot(self, caller: Caller, sha: str) -> bool:
        with self.db.read() as s:
            owned = s.get(SnapshotOwnerRow, (sha, caller.uid)) is not None
        return owned and self.files.has(sha)

    def may_read_snapshot(self, caller: Caller, sha: str) -> bool:
        return (caller.admin or self.owns_snapshot(caller, sha)) and self.files.has(sha)

    def snapshot_stored(self, caller: Caller, sha: str, size: int) -> None:
        with self.db.write() as s:
            row = s.get(SnapshotOwnerRow, (sha, caller.uid))
            if row is None:
                s.add(SnapshotOwnerRow(sha=sha, uid=caller.uid, size=size, created=self.clock()))
            else:
                row.created = self.clock()

    def collect(self, keep: float) -> int:
        """Delete snapshots nothing refers to any more (module doc of ``snapshots``)."""
        now = self.clock()
        before = now - keep
        with self.db.write() as s:
            live = select(RunRow.snapshot).join(JobRow, JobRow.id == RunRow.job_id)
            live = live.where(RunRow.snapshot.is_not(None))
            live = live.where((JobRow.end_time.is_(None)) | (JobRow.end_time > before))
            kept = set(s.scalars(live))
            recent = select(SnapshotOwnerRow.sha).where(SnapshotOwnerRow.created > before)
            kept |= set(s.scalars(recent))
            stored = set(s.scalars(select(func.distinct(SnapshotOwnerRow.sha))))
            dead = sorted(stored - kept)
            if dead:
                s.execute(delete(SnapshotOwnerRow).where(SnapshotOwnerRow.sha.in_(dead)))
        for sha in dead:
            self.files.remove(sha)
        for part in self.files.stale_parts(before):
            part.unlink(missing_ok=True)
        return len(dead)


def _summary(run: RunRow, job: JobRow) -> dict[str, Any]:
    return {
        "run_id": run.job_id,
        "name": run.name,
        "user": job.user if job.user else user_name(run.uid),
        "state": job.state,
        "submit_time": job.submit_time,
        "start_time": job.start_time,
        "end_time": job.end_time,
        "exit_code": job.exit_code,
        "nodes": job.nodes.split(",") if job.nodes else [],
        "attempt": job.restarts,
        "ended": job.state in _ENDED,
    }
