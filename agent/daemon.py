"""The node agent's state: what runs here, and keeping the controller told.

Three duties, each an asyncio task of the agent process:

1. **register** with the controller at start (retrying until it answers),
   reporting CPUs, memory and GPUs;
2. **heartbeat** every ``SlurmliteHeartbeatInterval`` seconds; an answer of
   "unknown node" (the controller lost its state) triggers a new registration;
3. **report completions**: when a job's processes end, a ``JobCompletion`` is
   written to the spool (``<spool>/completions/<job>.<restarts>.json``) and
   posted until the controller acknowledges it; the file is removed only
   then, so a restarted agent re-sends what was not acknowledged.  The
   controller ignores duplicates, so re-sending is always safe.

Orders from the controller (launch, signal, terminate) are checked against
their credential before anything is spawned or signalled (``verify_order``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import platform
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


class OrderRefused(Exception):
    """A controller order failed its credential checks (HTTP 403)."""


@dataclass
class Job:
    spec: LaunchSpec
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

    def __post_init__(self) -> None:
        self.launcher = Launcher(self.spool)
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

    async def launch(self, spec: LaunchSpec) -> str:
        key = (spec.job_id, spec.restarts)
        if key in self.jobs:
            return "already running"
        spec.environment = translate_gpu_env(spec.environment, self.gpus)
        try:
            proc = self.launcher.start(spec)
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
        job = Job(spec=spec, proc=proc)
        self.jobs[key] = job
        job.task = asyncio.create_task(self._watch(job))
        log.info("event=launched job=%s node=%s pid=%s", spec.job_id, self.name, proc.pid)
        return "started"

    async def _watch(self, job: Job) -> None:
        start = time.time()
        status = await job.proc.wait_async()
        self.jobs.pop((job.spec.job_id, job.spec.restarts), None)
        await self.queue_completion(
            JobCompletion(
                node=self.name,
                job_id=job.spec.job_id,
                restarts=job.spec.restarts,
                step_id=job.spec.step_id,
                exit_code=status,
                start_time=start,
                end_time=time.time(),
            )
        )

    async def signal(self, spec: SignalSpec) -> str:
        job = self.jobs.get((spec.job_id, spec.restarts))
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
            running_jobs=[j for j, _ in self.jobs],
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
                    f"/v1/nodes/{self.name}/heartbeat", {"running_jobs": [j for j, _ in self.jobs]}
                )
                if r.status_code == 200 and not r.json().get("known", True):
                    await self.register_forever()
            except httpx.HTTPError as e:
                log.warning("event=heartbeat_failed node=%s error=%r", self.name, str(e))

    # ------------------------------------------------------- completions

    async def queue_completion(self, msg: JobCompletion) -> None:
        path = self.spool / "completions" / f"{msg.job_id}.{msg.restarts}.json"
        path.write_text(json.dumps(to_dict(msg)))
        self._wake_reporter()

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
            for path in pending:
                try:
                    r = await self.post(
                        f"/v1/jobs/{path.stem.split('.')[0]}/complete", json.loads(path.read_text())
                    )
                    if r.status_code == 200:
                        path.unlink(missing_ok=True)
                        continue
                    log.warning(
                        "event=completion_refused file=%s status=%s", path.name, r.status_code
                    )
                except (httpx.HTTPError, ValueError) as e:
                    log.warning("event=completion_retry file=%s error=%r", path.name, str(e))
                failed = True
            if failed:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
                self._report_event.set()
            else:
                delay = 0.2

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
