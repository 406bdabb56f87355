"""The node agent's state: what runs here, and keeping the controller told.

Three duties, each an asyncio task of the agent process:

1. **register** with the controller at start (retrying until it answers),
   reporting CPUs, memory, GPUs and the jobs it holds;
2. **heartbeat** every ``SlurmliteHeartbeatInterval`` seconds; an answer of
   "unknown node" (the controller lost its state) triggers a new registration;
3. **report completions**: when a job's processes end, a ``JobCompletion`` is
   written to the spool (``<spool>/completions/<job>.<restarts>.json``) and
   posted until the controller acknowledges it; only then are the file and
   the run's ``job<ID>`` directory removed, so a restarted agent re-sends
   what was not acknowledged.  The controller ignores duplicates, so
   re-sending is always safe.  Every file pending when the reporter wakes
   goes in one request (``POST /v1/nodes/<name>/completions``, up to
   ``REPORT_BATCH`` per request), which the controller records in one
   transaction and answers with one acknowledgement per item; e.g. 40 jobs
   that ended during one round trip cost one request, not 40.

Crash safety: jobs run under per-job shell wrappers (``agent.wrapper``), not
as children of the agent, so ``kill -9`` of the agent leaves them running.
On start, before registering, ``adopt_spool`` walks ``<spool>/job*``: a run
still going is watched again (signals and terminate orders work), a run that
ended meanwhile has its completion queued from its ``status`` file, a run
that ended without any record is dropped (the controller, not finding it in
the node's job list, requeues it or ends it NODE_FAIL).  Registrations and
heartbeats list the jobs the agent *holds*: running ones and those whose
completion awaits acknowledgement.

Orders from the controller (launch, signal, terminate) are checked against
their credential before anything is spawned or signalled (``verify_order``).
A launch for a run this node already has (same job and restart count) is
answered "already running" and spawns nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import platform
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from agent.gres import GpuDevice, translate_gpu_env
from agent.launcher import Launcher, LaunchError, RunningJob
from slurmlite.config import Config, NodeConf
from slurmlite.credential import (
    CredentialError,
    canonical_body,
    controller_key,
    node_key,
    sign_request,
    verify_credential,
)
from slurmlite.protocol import JobCompletion, LaunchSpec, NodeRegister, SignalSpec, to_dict

log = logging.getLogger("slurmd")
VERSION = "22.05.8"
REPORT_BATCH = 500  # completions per request; the controller records each batch in one transaction


class OrderRefused(Exception):
    """A controller order failed its credential checks (HTTP 403)."""


@dataclass
class Job:
    """One run this agent watches (launched by it or adopted from the spool)."""

    job_id: int
    restarts: int
    step_id: str
    proc: RunningJob
    task: asyncio.Task[Any] | None = None


@dataclass
class AgentState:
    cfg: Config
    name: str
    cluster_key: bytes
    spool: Path
    gpus: list[GpuDevice]
    gpu_source: str
    node_conf: NodeConf | None
    jobs: dict[tuple[int, int], Job] = field(default_factory=dict)
    seen_nonces: dict[str, float] = field(default_factory=dict)
    start_time: float = field(default_factory=time.time)
    registered: asyncio.Event = field(default_factory=asyncio.Event)
    launching: set[int] = field(default_factory=set)  # job ids whose launch is under way

    def __post_init__(self) -> None:
        self.launcher = Launcher(self.spool)
        self._spawn_lock = threading.Lock()
        self._node_key = node_key(self.cluster_key, self.name)
        self._ctl_key = controller_key(self.cluster_key)
        (self.spool / "completions").mkdir(parents=True, exist_ok=True)
        host = self.cfg.control_addr or self.cfg.control_host
        self.controller_url = f"http://{host}:{self.cfg.slurmctld_port}"
        self.http = httpx.AsyncClient(timeout=10.0)

    # ------------------------------------------------------------ orders

    def verify_order(self, op: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            claims = verify_credential(self._ctl_key, body.get("credential", ""), time.time())
        except CredentialError as e:
            raise OrderRefused(str(e)) from None
        ops = {"launch": {"launch"}, "signal": {"signal", "terminate"}}[op]
        checks = [
            (claims.get("op") in ops, "wrong operation"),
            (self.name in claims.get("nodes", []), f"credential is not for node {self.name}"),
            (claims.get("job") == body.get("job_id"), "job id mismatch"),
            (claims.get("restarts") == body.get("restarts"), "restart count mismatch"),
            (claims.get("body") == _sha(canonical_body(body)), "request altered"),
        ]
        if op == "launch":
            checks.append(
                (
                    claims.get("uid") == body.get("uid") and claims.get("gid") == body.get("gid"),
                    "uid/gid mismatch",
                )
            )
            checks.append(
                (
                    claims.get("script_sha256") == _sha(body.get("script", "").encode()),
                    "script altered",
                )
            )
        for ok, why in checks:
            if not ok:
                raise OrderRefused(why)
        return claims

    async def _settled(self, job_id: int) -> None:
        """Wait until no launch of ``job_id`` is under way (they take milliseconds)."""
        while job_id in self.launching:
            await asyncio.sleep(0.002)

    async def launch(self, spec: LaunchSpec) -> str:
        """Start one run, in a worker thread, so the loop keeps reporting meanwhile.

        Spawns happen one at a time; a job's orders are serialised, so a
        repeated order still finds the first run and spawns nothing.
        """
        await self._settled(spec.job_id)
        self.launching.add(spec.job_id)
        try:
            return await self._launch(spec)
        finally:
            self.launching.discard(spec.job_id)

    async def _launch(self, spec: LaunchSpec) -> str:
        key = (spec.job_id, spec.restarts)
        if key in self.jobs or self.launcher.run_of(spec.job_id) == spec.restarts:
            return "already running"  # running, or ended with its completion still owed
        spec.environment = translate_gpu_env(spec.environment, self.gpus)
        try:
            # a start is mostly waiting for the wrapper: the loop serves others meanwhile
            proc = await asyncio.to_thread(self._start_one, spec)
        except LaunchError as e:
            log.warning(
                "event=launch_failed job=%s node=%s error=%r", spec.job_id, self.name, str(e)
            )
            now = time.time()
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
                    reason="JobLaunchFailure",
                )
            )
            return "failed"
        self._watch(Job(spec.job_id, spec.restarts, spec.step_id, proc))
        log.info("event=launched job=%s node=%s pid=%s", spec.job_id, self.name, proc.pid)
        return "started"

    def _start_one(self, spec: LaunchSpec) -> RunningJob:
        # One start at a time: a script being written while another start forks
        # would be inherited open for writing, and its exec fail with ETXTBSY.
        with self._spawn_lock:
            return self.launcher.start(spec)

    def _watch(self, job: Job) -> None:
        self.jobs[(job.job_id, job.restarts)] = job
        job.task = asyncio.create_task(self._await_end(job))

    async def _await_end(self, job: Job) -> None:
        await job.proc.wait_async()
        self._ended(job)
        self.jobs.pop((job.job_id, job.restarts), None)

    def _ended(self, job: Job) -> None:
        """Queue the run's completion (``status`` known) or drop it (unknown)."""
        proc = job.proc
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
                end_time=proc.ended or time.time(),
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
                self._ended(job)
                queued += proc.status is not None
        return watched, queued

    def held_jobs(self) -> list[int]:
        """Jobs this node holds: running, or ended with a completion not yet acknowledged."""
        names = (p.name.split(".")[0] for p in (self.spool / "completions").glob("*.json"))
        owed = {int(n) for n in names if n.isdigit()}
        return sorted({j for j, _ in self.jobs} | owed)

    async def signal(self, spec: SignalSpec) -> str:
        await self._settled(spec.job_id)  # an order for a run being started waits for it
        job = self.jobs.get((spec.job_id, spec.restarts))
        if job is None and spec.signal is None:
            # an older run of a job that was requeued meanwhile: it must not run on
            older = [j for (i, r), j in self.jobs.items() if i == spec.job_id and r < spec.restarts]
            for old in older:
                asyncio.create_task(old.proc.terminate_async(spec.kill_wait))
            return "ok" if older else "not running"
        if job is None:
            return "not running"
        if spec.signal is None:
            asyncio.create_task(job.proc.terminate_async(spec.kill_wait, spec.message))
        elif spec.batch_only:
            job.proc.signal(spec.signal, batch_only=True)
        elif spec.full:
            job.proc.signal(spec.signal)
        else:
            # Slurm's default target is the job's steps, never the batch step;
            # a job without srun steps (they come with srun) has nobody to signal.
            return "no steps"
        return "ok"

    # ------------------------------------------------------- controller

    async def post(self, path: str, payload: dict[str, Any]) -> httpx.Response:
        body = json.dumps(payload).encode()
        headers = sign_request(self._node_key, self.name, "POST", path, body, time.time())
        headers["content-type"] = "application/json"
        return await self.http.post(self.controller_url + path, content=body, headers=headers)

    def register_message(self) -> NodeRegister:
        nc = self.node_conf
        overrides = "config_overrides" in self.cfg.slurmd_parameters and nc is not None
        cpus = nc.cpus if overrides and nc else (os.cpu_count() or 1)
        mem = nc.real_memory if overrides and nc else _mem_total_mib()
        gpus = [g.name for g in self.gpus]
        if overrides and nc and nc.gpus and len(gpus) < nc.gpus:
            gpus += [nc.gpu_type or "gpu"] * (nc.gpus - len(gpus))
        return NodeRegister(
            name=self.name,
            addr=nc.addr if nc else "127.0.0.1",
            port=nc.port if nc else self.cfg.slurmd_port,
            hostname=platform.node(),
            cpus=cpus,
            real_memory=mem,
            gpus=gpus,
            gpu_type=nc.gpu_type if nc else None,
            running_jobs=self.held_jobs(),
            boot_time=_boot_time(),
            start_time=self.start_time,
            version=VERSION,
            arch=platform.machine(),
            os=f"{platform.system()} {platform.release()}",
        )

    async def register_forever(self) -> None:
        delay = 0.2
        while True:
            try:
                r = await self.post("/v1/nodes/register", to_dict(self.register_message()))
                if r.status_code == 200:
                    self.registered.set()
                    log.info(
                        "event=registered node=%s controller=%s", self.name, self.controller_url
                    )
                    return
                log.error(
                    "event=register_refused node=%s status=%s body=%r",
                    self.name,
                    r.status_code,
                    r.text,
                )
            except httpx.HTTPError as e:
                log.warning("event=register_retry node=%s error=%r", self.name, str(e))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    async def heartbeat_forever(self) -> None:
        interval = max(0.2, float(self.cfg.heartbeat_interval))
        while True:
            await asyncio.sleep(interval)
            try:
                r = await self.post(
                    f"/v1/nodes/{self.name}/heartbeat", {"running_jobs": self.held_jobs()}
                )
                if r.status_code == 200 and not r.json().get("known", True):
                    await self.register_forever()
            except httpx.HTTPError as e:
                log.warning("event=heartbeat_failed node=%s error=%r", self.name, str(e))

    # ------------------------------------------------------- completions

    def _completion_path(self, job_id: int, restarts: int) -> Path:
        return self.spool / "completions" / f"{job_id}.{restarts}.json"

    def _queue(self, msg: JobCompletion) -> None:
        path = self._completion_path(msg.job_id, msg.restarts)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(to_dict(msg)))
        os.replace(tmp, path)
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
        delay = 0.2
        while True:
            await self._report_event.wait()
            self._report_event.clear()
            pending = sorted((self.spool / "completions").glob("*.json"))
            failed = False
            for i in range(0, len(pending), REPORT_BATCH):
                failed |= not await self._report(pending[i : i + REPORT_BATCH])
            if failed:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                self._report_event.set()
            else:
                delay = 0.2

    async def _report(self, paths: list[Path]) -> bool:
        """Send these spooled completions in one request; forget the acknowledged ones.

        True if every one was acknowledged.  A controller without the batch
        route (404) gets them one request each, as before.
        """
        msgs: dict[tuple[int, int], Path] = {}
        body: list[dict[str, Any]] = []
        unread = 0
        for path in paths:
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError) as e:
                log.warning("event=completion_retry file=%s error=%r", path.name, str(e))
                unread += 1
                continue
            msgs[(int(data["job_id"]), int(data["restarts"]))] = path
            body.append(data)
        if not body:
            return not unread
        try:
            r = await self.post(f"/v1/nodes/{self.name}/completions", {"completions": body})
            if r.status_code == 404:
                return await self._report_one_by_one(list(msgs.values()))
            if r.status_code != 200:
                log.warning("event=completions_refused n=%s status=%s", len(body), r.status_code)
                return False
            acks = r.json()["results"]
        except (httpx.HTTPError, ValueError, KeyError) as e:
            log.warning("event=completions_retry n=%s error=%r", len(body), str(e))
            return False
        acked = 0
        for ack in acks:
            path = msgs.pop((ack.get("job_id"), ack.get("restarts")), None)
            if path is not None and ack.get("ok"):
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
        job_id, restarts = (int(x) for x in path.stem.split(".")[:2])
        self.launcher.forget(job_id, restarts)  # first: a crash re-sends
        path.unlink(missing_ok=True)

    async def shutdown(self) -> None:
        await self.http.aclose()


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _mem_total_mib() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 1


def _boot_time() -> float | None:
    try:
        with open("/proc/stat") as f:
            for line in f:
                if line.startswith("btime"):
                    return float(line.split()[1])
    except OSError:
        pass
    return None
