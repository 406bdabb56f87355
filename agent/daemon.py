"""The node agent's state: what runs here, and keeping the controller told.

Three duties, each an asyncio task of the agent process:

1. **register** with the controller at start (retrying until it answers),
   reporting CPUs, memory, GPUs, the machine's facts (``agent.machine``:
   OS, boot time, load, free memory) and the jobs it holds;
2. **heartbeat** every ``SlurmliteHeartbeatInterval`` seconds, with the jobs
   it holds and a fresh load and free memory; an answer of "unknown node"
   (the controller lost its state) triggers a new registration (these two,
   and the signed posts they make, are ``agent.controller_link``);
3. **report completions**: when a job's processes end, a ``JobCompletion`` is
   spooled and posted until the controller acknowledges it, in batches
   (``agent.completions``); only then is the run's ``job<ID>`` directory
   dropped, so a restarted agent re-sends what was not acknowledged.  The
   controller ignores duplicates, so re-sending is always safe.

Job steps (``srun``) come from srun, not the controller, with a credential
the controller signed for this node (``agent.steproutes``); their tasks
are this agent's children and stream back to srun through it
(``agent.stepstate``, ``agent.steptable``, ``agent.steps``).  A step's end
is a completion like a batch run's (step id "0", "1", ...).

Crash safety: jobs run under per-job shell wrappers (``agent.wrapper``), not
as children of the agent, so ``kill -9`` of the agent leaves them running.
On start, before registering, ``adopt_spool`` walks ``<spool>/job*``: a run
still going is watched again (signals and terminate orders work), a run that
ended meanwhile has its completion queued from its ``status`` file, a run
that ended without any record is dropped (the controller, not finding it in
the node's job list, requeues it or ends it NODE_FAIL).  Registrations and
heartbeats list the jobs the agent *holds*: running ones and those whose
completion awaits acknowledgement.

Orders from the controller (launch, signal, terminate) come in requests the
controller signed for this node (``check_request``), each with a credential
checked before anything is spawned or signalled (``verify_order``; both in
``agent.orders``, with the nonces that make a replayed credential useless,
even after a restart).  The agent holds only its node key: it can neither
speak for another node nor accept orders meant for one.  A launch for a run
this node already has (same job and restart count) is answered "already
running" and spawns nothing.  Starts run on the event
loop and overlap: spawning a wrapper takes a fraction of a millisecond, and
the wait for its report is a pipe the loop watches (``launch``), so the 64
orders of one request start together, not one after another.

Cut off: a fifth duty (``agent.cutoff``) watches how long the controller
has been silent; past ``SlurmdTimeout`` less a margin, with the controller's
host not answering at all, the agent kills its runs (``fence``), so that a
job the controller requeues elsewhere never runs twice at once.

Time: the agent reads no clock of its own.  ``clock`` (Unix seconds, for
time stamps, signatures, credential expiry and the nonces' lifetime) and
``timer`` (monotonic seconds, for waits: kill grace, retry gaps, caches)
are given to it, the real ones by default (``agent.main``), a
``slurmlite.clock.FakeClock`` in tests, and handed down to the parts that
decide (``OrderGate``, ``Launcher``, ``StepTable``).  A launch's GPUs come
typed (``LaunchSpec.gpus``); on a node that owns a subset of a machine's
GPUs the environment's GPU variables are pointed at the machine's devices
from that field (``agent.gres.device_indices``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from agent.completions import CompletionSpool
from agent.configless import local_conf
from agent.controller_link import VERSION as VERSION  # re-exported: the version answered
from agent.controller_link import ControllerLink
from agent.cutoff import ContactWatch, Fencing
from agent.gpu_outside import OutsideWatch
from agent.gres import GpuDevice, device_indices
from agent.isolation import Isolation
from agent.launch_causes import launch_cause
from agent.launcher import BatchRun, Launcher, LaunchError
from agent.orders import OrderGate, OrderRefused
from agent.portcheck import port_warning
from agent.runlogs import RunLogs
from agent.sampling import UsageSampler
from agent.scripts import PrologError, keep_epilog_env, run_epilog, run_prolog
from agent.stepstate import StepDuties
from agent.steptable import StepTable
from slurmlite.clock import Clock, monotonic_clock, system_clock
from slurmlite.config import Config, NodeConf
from slurmlite.crashpoints import crash_point
from slurmlite.credential import node_key
from slurmlite.jobenv import set_gpu_indices
from slurmlite.protocol import JobCompletion, LaunchSpec, NoteSpec, SignalSpec

log = logging.getLogger("slurmd")
__all__ = ["AgentState", "Job", "OrderRefused"]


@dataclass
class Job:
    """One run this agent watches (launched by it or adopted from the spool)."""

    job_id: int
    restarts: int
    step_id: str
    proc: BatchRun
    task: asyncio.Task[Any] | None = None


@dataclass
class AgentState(ControllerLink, CompletionSpool, StepDuties, Fencing):
    """The agent; give it ``node_key`` (or ``cluster_key``, derived once and not kept)."""

    cfg: Config
    name: str
    spool: Path
    gpus: list[GpuDevice]
    gpu_source: str
    node_conf: NodeConf | None
    node_key: bytes = field(default=b"", repr=False)
    cluster_key: InitVar[bytes | None] = None
    jobs: dict[tuple[int, int], Job] = field(default_factory=dict)
    clock: Clock = system_clock  # Unix seconds
    timer: Clock = monotonic_clock  # seconds for waits, never set back
    start_time: float = field(init=False)
    registered: asyncio.Event = field(default_factory=asyncio.Event)
    launching: set[int] = field(default_factory=set)  # job ids whose launch is under way
    _background: set[asyncio.Task[Any]] = field(default_factory=set)  # prologs, late epilogs
    _stopped: set[tuple[int, int]] = field(default_factory=set)  # terminated in their prolog
    _fenced: set[tuple[int, int]] = field(default_factory=set)  # killed while cut off (Fencing)

    def __post_init__(self, cluster_key: bytes | None) -> None:
        if cluster_key is not None and not self.node_key:
            self.node_key = node_key(cluster_key, self.name)  # the cluster key is not kept
        if not self.node_key:
            raise ValueError("AgentState needs its node key")
        self.start_time = self.clock()
        isolation = Isolation.from_config(self.cfg)
        self.launcher = Launcher(self.spool, isolation, self.clock, self.timer)
        self.run_logs = RunLogs(self.spool)  # workload runs' node logs (agent.runlogs)
        self.open_spool()
        self.gate = OrderGate(self.name, self.node_key, self.spool, self.start_time)
        self.steps = StepTable(
            self.gpus,
            self.launcher.cgroups,
            self._queue,
            self.spool / "steps",
            self.clock,
            self.timer,
        )
        self.outside = OutsideWatch.of(self)  # GPUs used outside the scheduler
        self.sampler = UsageSampler.of(self)  # what each running job uses (agent.sampling)
        self.steps.sampler = self.sampler  # steps count with their job, on every node
        host = self.cfg.control_addr or self.cfg.control_host
        self.controller_host = host
        self.controller_url = f"http://{host}:{self.cfg.slurmctld_port}"
        self.contact = ContactWatch(
            self.cfg.slurmd_timeout, self.cfg.heartbeat_interval, self.timer
        )
        self.http = httpx.AsyncClient(timeout=10.0)

    # ------------------------------------------------------------ orders

    def check_request(
        self, headers: Mapping[str, str], method: str, path: str, body: bytes
    ) -> None:
        """Raise ``CredentialError`` unless the controller signed this request for this node."""
        self.gate.check_request(headers, method, path, body, self.clock())
        self.contact.heard()  # a signed order: the controller can reach this node

    def verify_order(self, op: str, body: dict[str, Any]) -> dict[str, Any]:
        """The order's claims; ``OrderRefused`` for a bad or replayed credential."""
        return self.gate.verify(op, body, self.clock(), self._running)

    def _running(self, job_id: int, restarts: int) -> bool:
        return (job_id, restarts) in self.jobs or job_id in self.launching

    async def _settled(self, job_id: int) -> None:
        """Wait until no launch of ``job_id`` is under way (they take milliseconds)."""
        while job_id in self.launching:
            await asyncio.sleep(0.002)

    async def launch(self, spec: LaunchSpec) -> str:
        """Start one run; the answer comes once its script runs (or could not start).

        The start runs on the event loop: spawning the wrapper takes a
        fraction of a millisecond, and the wait for its report (most of a
        start) is a pipe the loop watches, so the starts of a batch overlap
        and the loop keeps reporting meanwhile.  The start is shielded: a
        cancelled request still leaves the run watched.  A job's orders are
        serialised, so a repeated order finds the first run and spawns nothing.
        """
        await self._settled(spec.job_id)
        self.launching.add(spec.job_id)
        task = asyncio.ensure_future(self._launch(spec))
        task.add_done_callback(lambda _: self.launching.discard(spec.job_id))
        if self.cfg.prolog:  # the prolog may take long: its outcome comes as the completion
            self._keep(task)
            return "started"
        return await asyncio.shield(task)

    def _keep(self, task: asyncio.Task[Any]) -> None:
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _launch(self, spec: LaunchSpec) -> str:
        key = (spec.job_id, spec.restarts)
        if key in self.jobs or self.launcher.run_of(spec.job_id) == spec.restarts:
            return "already running"  # running, or ended with its completion still owed
        self._on_devices(spec)
        spec.environment = local_conf(spec.environment, self.cfg.path)
        try:
            if why := await run_prolog(self.cfg, self.name, spec):  # agent.scripts
                raise PrologError(why, self.cfg.prolog or "", self.name)
            if key in self._stopped:  # terminated while its prolog ran: it never starts
                self._stopped.discard(key)
                now = self.clock()
                done = JobCompletion(self.name, *key, spec.step_id, 15, now, now)  # SIGTERM
                await self.queue_completion(done)
                return "failed"
            proc = await self._start(spec)
        except LaunchError as e:
            log.warning(
                "event=launch_failed job=%s node=%s error=%r", spec.job_id, self.name, str(e)
            )
            now = self.clock()
            await self.queue_completion(
                JobCompletion(
                    node=self.name,
                    job_id=spec.job_id,
                    restarts=spec.restarts,
                    step_id=spec.step_id,
                    exit_code=getattr(e, "exit_status", 53),
                    start_time=now,
                    end_time=now,
                    launch_failed=True,
                    reason=e.reason,
                    detail=e.detail,
                    failed_script="prolog" if isinstance(e, PrologError) else None,
                    cause=launch_cause(self.name, e),
                )
            )
            return "failed"
        keep_epilog_env(self.cfg, self.name, spec, self.launcher.job_dir(spec.job_id))
        self._watch(Job(spec.job_id, spec.restarts, spec.step_id, proc), spec.gpus)
        # the batch host is the job's first node: where a rendezvous would listen
        if warning := port_warning(spec.environment, self.name):
            log.warning("event=master_port_taken job=%s node=%s", spec.job_id, self.name)
            asyncio.get_running_loop().run_in_executor(None, proc.write_stderr, warning)
        log.info("event=launched job=%s node=%s pid=%s", spec.job_id, self.name, proc.pid)
        crash_point("slurmd.launch.after_spawn")
        return "started"

    def _on_devices(self, spec: LaunchSpec) -> None:
        """Point the batch shell's GPU variables at this machine's devices for ``spec.gpus``.

        Only a node that owns a subset of a machine's GPUs needs it: elsewhere
        the scheduler's numbers (``spec.gpus``, as the controller wrote them
        into the environment) are the devices' own."""
        devices = device_indices(spec.gpus, self.gpus)
        if devices != spec.gpus:
            spec.environment = dict(spec.environment)
            set_gpu_indices(spec.environment, devices, "SLURM_JOB_GPUS")

    async def _start(self, spec: LaunchSpec) -> BatchRun:
        """``Launcher.start`` with the wrapper's report read by the event loop."""
        spawn = self.launcher.spawn(spec)
        assert spawn.proc.stderr is not None
        return self.launcher.settle(spawn, await _read_to_end(spawn.proc.stderr))

    def _watch(self, job: Job, gpus: list[int] | None = None) -> None:
        self.jobs[(job.job_id, job.restarts)] = job
        self.sampler.track(job.job_id, job.restarts, job.proc, gpus)  # gpus None: adopted
        job.task = asyncio.create_task(self._await_end(job))

    async def _await_end(self, job: Job) -> None:
        await job.proc.wait_async()
        await self._finish(job)
        self.jobs.pop((job.job_id, job.restarts), None)

    async def _finish(self, job: Job) -> None:
        """The node's Epilog, then the completion (held until the epilog is over)."""
        why = await run_epilog(self.cfg, self.name, job.job_id, self.launcher.job_dir(job.job_id))
        self._ended(job, epilog_failed=why is not None)

    def _ended(self, job: Job, epilog_failed: bool = False) -> None:
        """Queue the run's completion (``status`` known) or drop it (unknown)."""
        proc = job.proc
        usage = self.sampler.finish(job.job_id, job.restarts)
        if proc.status is None:
            log.warning(
                "event=status_lost job=%s restarts=%s node=%s: the controller will requeue "
                "or fail it once this node stops listing it",
                job.job_id,
                job.restarts,
                self.name,
            )
            self.launcher.forget(job.job_id, job.restarts)
            return
        self._queue(
            JobCompletion(
                node=self.name,
                job_id=job.job_id,
                restarts=job.restarts,
                step_id=job.step_id,
                exit_code=proc.status,
                start_time=proc.started,
                end_time=proc.ended or self.clock(),
                failed_script="epilog" if epilog_failed else None,
                fenced=self.was_fenced(job.job_id, job.restarts),
                usage=usage,
                mem_peak=getattr(proc, "mem_peak", 0),
            )
        )

    def adopt_spool(self) -> tuple[int, int]:
        """Take back what an earlier agent left: (runs watched, completions queued)."""
        watched = queued = 0
        for job_id in self.launcher.job_ids():
            proc = self.launcher.adopt(job_id)
            if proc is None:  # a launch cut short before anything was recorded
                log.warning("event=spool_leftover job=%s node=%s: removed", job_id, self.name)
                shutil.rmtree(self.launcher.job_dir(job_id), ignore_errors=True)
                continue
            job = Job(job_id, proc.restarts, "batch", proc)
            if not proc.done:
                self._watch(job)
                watched += 1
                log.info("event=adopted job=%s pid=%s node=%s", job_id, proc.pid, self.name)
            elif not self._completion_path(job_id, proc.restarts).exists():
                if self.cfg.epilog and proc.status is not None:  # it ended meanwhile
                    self._keep(asyncio.ensure_future(self._finish(job)))
                else:
                    self._ended(job)
                queued += proc.status is not None
        return watched, queued

    def held_jobs(self) -> list[int]:
        """Jobs this node holds: running, or ended with a completion not yet acknowledged.

        Batch runs only (``<job>.<restarts>.json``): the controller reconciles
        a job's batch host with this list; steps are not part of it."""
        files = (self.spool / "completions").glob("*.json")
        names = (p.name.split(".")[0] for p in files if p.name.count(".") == 2)
        owed = {int(n) for n in names if n.isdigit()}
        # a launch under way (its prolog running) is held too: the job is here
        return sorted({j for j, _ in self.jobs} | owed | self.launching)

    async def signal(self, spec: SignalSpec) -> str:
        """The batch run's part of a signal or terminate order; the steps' is ``signal_steps``."""
        if spec.signal is None and self.cfg.prolog and spec.job_id in self.launching:
            self._stopped.add((spec.job_id, spec.restarts))  # its prolog may run long
            return "ok"
        await self._settled(spec.job_id)  # an order for a run being started waits for it
        job = self.jobs.get((spec.job_id, spec.restarts))
        if spec.full and spec.signal is not None and job is not None and job.proc.cgroup:
            job.proc.signal(spec.signal)  # the job's cgroup: the batch shell and every step task
            return "ok"
        steps = self.signal_steps(spec, covered=job is not None and job.proc.cgroup is not None)
        if job is None and spec.signal is None:
            # an older run of a job that was requeued meanwhile: it must not run on
            older = [j for (i, r), j in self.jobs.items() if i == spec.job_id and r < spec.restarts]
            for old in older:
                asyncio.create_task(old.proc.terminate_async(spec.kill_wait))
            return "ok" if older or steps else "not running"
        if job is None:
            return "ok" if steps else "not running"
        if spec.signal is None:
            asyncio.create_task(job.proc.terminate_async(spec.kill_wait, spec.message))
        elif spec.batch_only:
            job.proc.signal(spec.signal, batch_only=True)
        elif spec.full:
            job.proc.signal(spec.signal)
        elif not steps:
            # Slurm's default target is the job's steps, never the batch step
            return "no steps"
        return "ok"

    async def note(self, spec: NoteSpec) -> str:
        """Append the order's line to the batch run's stderr (``agent.killing.write_stderr``:
        as the job's user, no symlink followed); "written", "not written" or "not running"."""
        await self._settled(spec.job_id)
        job = self.jobs.get((spec.job_id, spec.restarts))
        if job is None or job.proc.status is not None:
            return "not running"
        if await asyncio.to_thread(job.proc.write_stderr, spec.line):
            return "written"
        log.warning("event=note_not_written job=%s file=%r", spec.job_id, job.proc.std_err)
        return "not written"

    async def shutdown(self) -> None:
        await self.steps.shutdown()
        self.gate.close()
        await self.http.aclose()


async def _read_to_end(pipe: IO[bytes]) -> bytes:
    """Everything ``pipe`` delivers until its writers are gone, read by the event loop; closes it."""
    loop = asyncio.get_running_loop()
    fd = pipe.fileno()
    os.set_blocking(fd, False)
    chunks: list[bytes] = []
    ended: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            chunks.append(data)
        elif not ended.done():
            ended.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await ended
    finally:
        loop.remove_reader(fd)
        pipe.close()
    return b"".join(chunks)
