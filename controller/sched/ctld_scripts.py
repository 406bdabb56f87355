"""The controller's own site scripts: ``PrologSlurmctld`` and ``EpilogSlurmctld``.

Slurm's slurmctld runs ``PrologSlurmctld`` when a job is allocated and
``EpilogSlurmctld`` when it ends, as its own user, with the job's variables
(``slurmlite.scriptenv``) and within ``PrologEpilogTimeout``
(``slurmlite.sitescript``).  Neither may hold up scheduling: each script is
a child process the event loop waits on, never the pass's thread, and the
store is touched only before and after, in short transactions.

PrologSlurmctld (batch jobs)
    A pass that starts jobs commits them RUNNING as usual; then
    ``hold_launches`` flags them ``CONFIGURING`` (squeue ``CF``, the state
    Slurm shows while it runs) instead of sending their launches.  For each,
    ``configure`` runs the script; on success the flag goes and a freshly
    signed launch goes to the batch host (the first one may be stale by
    then); on failure the job is requeued held (``JobHeldAdmin``, cause
    ``PrologSlurmctld``), or, past ``MaxBatchRequeue`` failed launches, ends
    FAILED (``JobLaunchFailure``).  A job cancelled meanwhile is not
    launched.  The reconciler leaves CONFIGURING jobs alone: no node holds
    them yet.

EpilogSlurmctld (batch jobs)
    A job started while one is configured owes it (``jobs.ctld_epilog`` = 1,
    indexed).  Once the job has ended and nothing of it is left on its nodes
    (no ``COMPLETING``), ``owed_epilogs`` flags it ``COMPLETING`` again and
    marks it 2 (running); ``epilog`` runs the script with the job's exit code
    and then clears both, so its nodes are given to others only afterwards,
    as in Slurm.  A failure is logged and changes nothing else.  A run
    marked 2 that this controller is not running (it was restarted
    mid-script) is run again.

srun/salloc allocations run neither (see README, "Prolog and epilog").

Example: ``PrologSlurmctld=/etc/slurm/ctld_prolog.sh`` exits 1 for job 7 ->
``event=prolog_slurmctld_failed job=7 why='exit status 1'``, job 7 PENDING,
JobHeldAdmin, restarts 1, causes ``prolog_slurmctld``, no launch sent.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from sqlalchemy import select

from controller.nodes.agent_client import AgentAddress
from controller.sched.launch import build_launch
from controller.sched.requeue import requeue_failed_launch
from controller.store.models import JobRow, NodeRow
from controller.store.rows import add_flag, drop_flag, job_info, split_list
from slurmlite import hostlist
from slurmlite.restarts import PROLOG_SLURMCTLD
from slurmlite.scriptenv import EPILOG_SLURMCTLD, ScriptJob, script_environment
from slurmlite.scriptenv import PROLOG_SLURMCTLD as PROLOG_CTX
from slurmlite.sitescript import run_site_script
from slurmlite.states import is_finished

if TYPE_CHECKING:
    from controller.sched.parts import SchedParts
    from slurmlite.protocol import LaunchSpec

    Launch = tuple[LaunchSpec, AgentAddress]
    Due = tuple[int, ScriptJob, int | None, int | None]  # job id, job, exit code, derived

log = logging.getLogger("slurmctld.scripts")
OWED, RUNNING = 1, 2  # jobs.ctld_epilog


def script_job(row: JobRow) -> ScriptJob:
    """The job as the controller's scripts see it."""
    info = job_info(row)
    return ScriptJob(
        job_id=row.id,
        name=row.name,
        uid=row.uid,
        gid=row.gid,
        user=row.user,
        partition=row.partition,
        account=row.account or "",
        nodelist=hostlist.compress(info.nodes) if info.nodes else "",
        work_dir=row.work_dir,
        group=info.group,
        constraints=row.constraint or "",
        array_job_id=info.array_job_id,
        array_task_id=info.array_task_id,
    )


class CtldScripts:
    """PrologSlurmctld and EpilogSlurmctld for the loop (module doc)."""

    def __init__(self, parts: SchedParts) -> None:
        self.parts = parts
        self.running: set[int] = set()  # job ids whose EpilogSlurmctld runs now
        self._recovered = False  # leftovers() asked

    async def after_pass(
        self, started: list[Launch]
    ) -> tuple[list[Launch], list[tuple[int, int]], list[Due]]:
        """After a pass: (launches to send now, runs to configure, epilogs due).

        Without either script configured this costs no store access (after the
        first pass, which looks for a restarted controller's CONFIGURING jobs)."""
        cfg = self.parts.cfg
        configuring = [] if self._recovered else await asyncio.to_thread(self.leftovers)
        launches, epilogs = started, []
        if started and (cfg.prolog_slurmctld or cfg.epilog_slurmctld):
            launches = await asyncio.to_thread(self.hold_launches, started)
            if launches is not started:
                configuring += [(spec.job_id, spec.restarts) for spec, _addr in started]
        if cfg.epilog_slurmctld:
            epilogs = await asyncio.to_thread(self.owed_epilogs)
        return launches, configuring, epilogs

    # ------------------------------------------------------------ prolog

    def hold_launches(self, launches: list[Launch]) -> list[Launch]:
        """The launches to send now; the others wait for their PrologSlurmctld.

        Also marks the started jobs as owing an EpilogSlurmctld when one is set."""
        cfg = self.parts.cfg
        if not launches or not (cfg.prolog_slurmctld or cfg.epilog_slurmctld):
            return launches
        with self.parts.db.write() as s:
            for spec, _addr in launches:
                row = s.get(JobRow, spec.job_id)
                if row is None:
                    continue
                if cfg.epilog_slurmctld:
                    row.ctld_epilog = OWED
                if cfg.prolog_slurmctld:
                    row.flags = add_flag(row.flags, "CONFIGURING")
        return [] if cfg.prolog_slurmctld else launches

    def leftovers(self) -> list[tuple[int, int]]:
        """CONFIGURING jobs no script runs for (the controller was restarted meanwhile):
        (job id, restarts), each to be configured again; asked once, at the first pass."""
        if self._recovered:
            return []
        self._recovered = True
        with self.parts.db.read() as s:
            q = select(JobRow.id, JobRow.restarts, JobRow.flags).where(
                JobRow.state == "RUNNING", JobRow.flags > "", JobRow.flags.like("%CONFIGURING%")
            )
            return [(i, r) for i, r, _f in s.execute(q)]

    async def configure(self, job_id: int, restarts: int) -> Launch | None:
        """Run PrologSlurmctld for a started job; its launch, re-signed, if it may start."""
        cfg = self.parts.cfg
        job = await asyncio.to_thread(self._job_of, job_id, restarts)
        why = None
        if job is not None and cfg.prolog_slurmctld:  # unset since (reconfigure): it starts
            env = script_environment(PROLOG_CTX, job, cluster=cfg.cluster_name)
            why = await run_site_script(cfg.prolog_slurmctld, env, cfg.prolog_epilog_timeout)
        return await asyncio.to_thread(self._configured, job_id, restarts, why)

    def _job_of(self, job_id: int, restarts: int) -> ScriptJob | None:
        with self.parts.db.read() as s:
            row = s.get(JobRow, job_id)
            if row is None or row.restarts != restarts or row.state != "RUNNING":
                return None
            return script_job(row)

    def _configured(self, job_id: int, restarts: int, why: str | None) -> Launch | None:
        parts = self.parts
        now = parts.clock()
        with parts.db.write() as s:
            row = s.get(JobRow, job_id)
            if row is None or row.restarts != restarts:
                return None  # requeued meanwhile: that run is gone
            if row.state != "RUNNING":  # cancelled or timed out meanwhile: nothing to launch
                row.flags = drop_flag(row.flags, "CONFIGURING")
                return None
            if why is not None:
                log.error("event=prolog_slurmctld_failed job=%s why=%r", job_id, why)
                failure = "PrologSlurmctld failed"
                requeue_failed_launch(s, parts.cfg, row, now, PROLOG_SLURMCTLD, "", failure)
                return None
            row.flags = drop_flag(row.flags, "CONFIGURING")
            nodes = {n: s.get(NodeRow, n) for n in split_list(row.nodes)}
            node_rows = {n: r for n, r in nodes.items() if r is not None}
            host = node_rows.get(row.batch_host or "")
            if host is None:
                return None
            spec = build_launch(parts.cfg, parts.signer, row, node_rows, now)
            return spec, AgentAddress(host.name, host.addr, host.port)

    # ------------------------------------------------------------ epilog

    def owed_epilogs(self) -> list[Due]:
        """Ended jobs whose EpilogSlurmctld is due now, flagged COMPLETING while it runs:
        (job id, job, exit code, derived exit code)."""
        if not self.parts.cfg.epilog_slurmctld:
            return []
        due = []
        with self.parts.db.write() as s:
            q = select(JobRow).where(  # the index first; running jobs owe it later
                JobRow.ctld_epilog.in_((OWED, RUNNING)),
                JobRow.state.not_in(("PENDING", "RUNNING", "SUSPENDED")),
            )
            for row in s.scalars(q):
                if row.id in self.running or not is_finished(row.state):
                    continue
                if row.ctld_epilog == OWED and "COMPLETING" in split_list(row.flags):
                    continue  # its nodes are still cleaning up
                row.ctld_epilog = RUNNING
                row.flags = add_flag(row.flags, "COMPLETING")
                self.running.add(row.id)
                due.append((row.id, script_job(row), row.exit_code, row.derived_exit_code))
        return due

    async def epilog(
        self, job_id: int, job: ScriptJob, code: int | None, derived: int | None
    ) -> None:
        """Run EpilogSlurmctld for an ended job, then let its nodes go."""
        cfg = self.parts.cfg
        env = script_environment(
            EPILOG_SLURMCTLD,
            job,
            cluster=cfg.cluster_name,
            exit_code=code,
            derived_exit_code=derived,
        )
        try:
            why = await run_site_script(cfg.epilog_slurmctld or "", env, cfg.prolog_epilog_timeout)
            if why is not None:
                log.error("event=epilog_slurmctld_failed job=%s why=%r", job_id, why)
            await asyncio.to_thread(self._epilog_done, job_id)
        finally:
            self.running.discard(job_id)

    def _epilog_done(self, job_id: int) -> None:
        with self.parts.db.write() as s:
            row = s.get(JobRow, job_id)
            if row is not None and row.ctld_epilog == RUNNING:
                row.ctld_epilog = None
                row.flags = drop_flag(row.flags, "COMPLETING")
