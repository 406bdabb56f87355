"""The job steps running on this node: starting one, finding it again, ending it.

``StepTable.start`` turns a checked ``StepLaunch`` (``agent.orders``: the
node's credential, op ``step``, every field covered, nonce never seen) into
a running ``agent.steps.StepRun``:

1. the user (``agent.confine.credentials``: uid, gid, groups; a uid this
   node does not know starts nothing) and the job's cgroup: the batch run's
   when the job runs here, else one made for the job's steps with the
   step's memory (an allocation -- ``salloc``, ``srun`` outside a job --
   or a node of a batch job other than the batch host), shared by its
   steps and removed, with whatever is left in it, when the last one ends;
2. one ``TaskPlan`` per task of the node: the environment from
   ``slurmlite.stepenv.task_environment`` (SLURM_PROCID, RANK, ...; GPUs of
   ``--gpus-per-task`` split in order: local task *i* gets GPUs
   ``[i*g, (i+1)*g)`` of the node's), the files of ``-o/-e/-i`` expanded
   per task (``slurmlite.filepattern``: ``%t %n %N %j %s %A %a %u %x``),
   srun's stdin for all tasks or only ``stdin_task``, the terminal for task
   0 with ``--pty``;
3. output files created (or emptied) as the user, then the tasks started
   (``agent.tasks``).  Should one fail, those already started are killed
   and the step does not start: ``LaunchError``.

Usage: each step is counted with its job by the node's usage sampler
(``agent.sampling``: ``track_step`` at its start, ``step_ended`` once its
tasks are reaped, whose summary of the job on this node rides in the
step's completion), so that every node of a job reports what it used.

Steps are found by their credential (``find``: ``/v1/steps/input``) and
by job (``of_job``: signal and terminate orders).  A step is not adopted
by a restarted agent: its tasks are the agent's children and its output
went to srun through the agent, so it ends with the agent
(``shutdown``), and its completion, spooled first, is sent later.

Example: ``srun -N1 -n2 -o out-%t.txt env`` on n1 for job 7, step 0 ->
``out-0.txt`` and ``out-1.txt`` under the work directory, owned by the
user; the stream carries only ``{"task": 0, "exit": 0}`` and
``{"task": 1, "exit": 0}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cgroups import CgroupTree, JobCgroup
from agent.confine import CGROUP_FAILED, LaunchError, credentials
from agent.gres import GpuDevice, device_indices
from agent.identity import fill_login_env
from agent.portcheck import port_warning
from agent.steps import StepRun
from agent.tasks import Task, TaskPlan, Where, close_gate, prepare_files, spawn_task
from slurmlite.clock import Clock, monotonic_clock, system_clock
from slurmlite.filepattern import expand_pattern, resolve_output
from slurmlite.jobenv import set_gpu_indices
from slurmlite.protocol import JobCompletion, StepLaunch
from slurmlite.stepenv import task_environment

if TYPE_CHECKING:
    from agent.sampling import UsageSampler

__all__ = ["StepTable", "task_plans"]

log = logging.getLogger("slurmd")
DEV_NULL = "/dev/null"


def task_plans(launch: StepLaunch, gpus: list[GpuDevice]) -> list[TaskPlan]:
    """What each task of the node gets (step 2 of the module docstring).

    The step's GPUs are ``launch.gpus``, as the controller numbers this
    node's (0..k-1); ``gpus``, this node's devices, say which of the
    machine's devices they are: on a node that owns a subset of a machine's
    GPUs (``slurmd --gpu-devices``) the GPU variables are set to those.
    """
    env = launch.environment
    devices = device_indices(launch.gpus, gpus)
    if devices != launch.gpus:
        env = dict(env)
        set_gpu_indices(env, devices, "SLURM_STEP_GPUS")
    fields = dict(
        job_id=launch.job_id,
        array_job_id=_int(env.get("SLURM_ARRAY_JOB_ID")),
        array_task_id=_int(env.get("SLURM_ARRAY_TASK_ID")),
        step=str(launch.step_id),
        job_name=env.get("SLURM_JOB_NAME", ""),
        user=launch.user,
        node=launch.node,
        node_index=launch.node_index,
        restarts=launch.restarts,
    )

    def path(pattern: str, task: int) -> str:
        if not pattern:
            return ""
        if pattern == "none":
            return DEV_NULL
        return resolve_output(expand_pattern(pattern, task=task, **fields), launch.work_dir)  # type: ignore[arg-type]

    plans = []
    per = launch.gpus_per_task or 0
    for local, task in enumerate(launch.tasks):
        mine = devices[local * per : (local + 1) * per] if per else None
        task_env = task_environment(env, task, local, launch.node_index, mine)
        task_env.pop("SLURM_TASK_PID", None)  # the task's wrapper sets its own
        out = path(launch.std_out, task)
        plans.append(
            TaskPlan(
                task=task,
                local=local,
                env=task_env,
                std_in=path(launch.std_in, task),
                std_out=out,
                std_err=path(launch.std_err, task) or out,
                reads_stdin=launch.stdin_task is None or launch.stdin_task == task,
                pty=launch.pty and task == 0,
            )
        )
    return plans


class StepTable:
    """The steps of this node, by credential; the cgroups made for allocations' steps.

    ``clock`` (Unix seconds) stamps the steps' starts and ends; ``timer``
    (monotonic seconds) ages the password-entry cache (``agent.identity``).
    """

    def __init__(
        self,
        gpus: list[GpuDevice],
        cgroups: CgroupTree | None,
        report: Callable[[JobCompletion], None],
        gates: Path,
        clock: Clock = system_clock,
        timer: Clock = monotonic_clock,
    ) -> None:
        self.gpus = gpus
        self.clock = clock
        self.timer = timer
        self.cgroups = cgroups
        self.report = report
        self.gates = gates  # <spool>/steps: the tasks' gate FIFOs (agent.tasks)
        shutil.rmtree(gates, ignore_errors=True)  # an earlier agent's: its steps are gone
        gates.mkdir(mode=0o711)
        os.chmod(gates, 0o711)  # users pass through to their own FIFO, see nothing else
        self.runs: dict[str, StepRun] = {}  # credential -> the step it started
        self._alloc: dict[tuple[int, int], JobCgroup] = {}  # cgroups made for steps
        self.sampler: UsageSampler | None = None  # counts the steps' usage (agent.sampling)

    def find(self, credential: str) -> StepRun | None:
        run = self.runs.get(credential)
        return run if run is not None and run.ended is None else None

    def of_job(self, job_id: int, restarts: int | None = None) -> list[StepRun]:
        return [
            r
            for r in self.runs.values()
            if r.launch.job_id == job_id and (restarts is None or r.launch.restarts == restarts)
        ]

    async def start(self, launch: StepLaunch, batch_cgroup: JobCgroup | None) -> StepRun:
        """Start the node's tasks of ``launch``; ``LaunchError`` if the step cannot start."""
        creds, user = credentials(launch, self.timer())
        plans = task_plans(launch, self.gpus)
        if user is not None:
            for p in plans:
                fill_login_env(p.env, user)
        files = {f for p in plans for f in (p.std_out, p.std_err) if f and f != DEV_NULL}
        if files:
            await asyncio.to_thread(prepare_files, sorted(files), creds)
        key = (launch.job_id, launch.restarts)
        uid, gid = (launch.uid, launch.gid) if creds else (os.geteuid(), os.getegid())
        where = Where(launch.work_dir, launch.node, creds, uid, gid, gates=self.gates)
        where.cgroup = batch_cgroup or self._job_cgroup(launch)
        tasks: list[Task] = []
        try:
            for p in plans:
                gate = f"{launch.job_id}.{launch.step_id}.{p.task}"
                tasks.append(spawn_task(p, launch.argv, where, gate))
        except LaunchError:
            for t in tasks:
                _unstart(t)
            self._release(key)
            raise
        groups = list(user.groups) if user is not None else None
        ids = (launch.uid, launch.gid, groups)
        run = StepRun(launch, tasks, self._ended, ids, where.cgroup, self.clock)
        self.runs[launch.credential] = run
        if self.sampler is not None:
            self.sampler.track_step(run)
        run.start()
        log.info("event=step_started step=%s node=%s tasks=%s", run.name, launch.node, launch.tasks)
        if launch.node_index == 0 and (warning := port_warning(launch.environment, launch.node)):
            run.announce(warning)  # the step's rank 0 would fail to listen there
        return run

    def _job_cgroup(self, launch: StepLaunch) -> JobCgroup | None:
        """The cgroup this node made for the job's steps (made now if it is the first)."""
        if self.cgroups is None:
            return None
        key = (launch.job_id, launch.restarts)
        cgroup = self._alloc.get(key)
        if cgroup is None:
            try:
                cgroup = self.cgroups.create(launch.job_id, launch.restarts, launch.mem_mib or None)
            except OSError as exc:
                raise LaunchError(
                    f"step {launch.job_id}.{launch.step_id}: cannot create its cgroup: {exc}",
                    detail=CGROUP_FAILED,
                ) from exc
            self._alloc[key] = cgroup
        return cgroup

    def _release(self, key: tuple[int, int]) -> None:
        """Remove the cgroup made for the job's steps once none of them runs."""
        if key in self._alloc and not any(r.ended is None for r in self.of_job(key[0], key[1])):
            self._alloc.pop(key).retire()

    def _ended(self, run: StepRun, done: JobCompletion) -> None:
        if self.sampler is not None:  # before its cgroup goes: the end sample reads it
            try:
                done.usage = self.sampler.step_ended(run)
            except Exception:  # a probe's surprise must not cost the step its completion
                log.exception("event=step_sample_failed step=%s: reported without usage", run.name)
        self.report(done)
        self.runs.pop(run.launch.credential, None)
        self._release((run.launch.job_id, run.launch.restarts))
        log.info("event=step_ended step=%s status=%s", run.name, done.exit_code)

    async def shutdown(self, wait: float = 3.0) -> None:
        """The agent stops: every step's processes are killed (their output has nowhere to
        go); up to ``wait`` s for their completions to be spooled (sent by the next agent)."""
        runs = list(self.runs.values())
        for run in runs:
            run.detach(kill=True)
        waits = [asyncio.ensure_future(r.over.wait()) for r in runs]
        if waits:
            _, late = await asyncio.wait(waits, timeout=wait)
            for w in late:
                w.cancel()


def _unstart(t: Task) -> None:
    """Kill and reap a task of a step that could not start; close what was its."""
    with contextlib.suppress(ProcessLookupError):
        t.proc.send_signal(signal.SIGKILL)
    t.proc.wait()
    for _, fd in t.outputs:
        _close(fd)
    if t.stdin is not None:
        t.stdin.close()
    if t.terminal is not None:
        _close(t.terminal)
    close_gate(t.gate)


def _int(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)
