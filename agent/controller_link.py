"""The agent's link to the controller: signed posts, registration and heartbeats.

Mixed into ``agent.daemon.AgentState`` (whose ``cfg``, ``name``,
``node_key``, ``node_conf``, ``gpus``, ``clock``, ``timer``, ``contact``,
``sampler``, ``outside``, ``http`` and ``held_jobs`` it uses).  Two of the
agent's duties live here, each an asyncio task of the agent process:

1. **register** with the controller at start (``register_forever``, retrying
   with ``agent.completions.retry_delay`` until it answers), reporting CPUs,
   memory, GPUs, the machine's facts (``agent.machine``: OS, boot time, load,
   free memory) and the jobs it holds.  With
   ``SlurmdParameters=config_overrides`` the configured CPUs, memory and GPUs
   are reported instead of what the machine has;
2. **heartbeat** every ``SlurmliteHeartbeatInterval`` seconds
   (``heartbeat_forever``) with the jobs it holds, a fresh load and free
   memory, the usage of running jobs so far and the GPUs seen in use outside
   the scheduler; an answer of ``{"known": false}`` (the controller lost its
   state) triggers a new registration.

Every request goes through :meth:`ControllerLink.post`: the body is signed
with the node key (``slurmlite.credential.sign_request``), and an answer of
any kind tells the cut-off watch (``agent.cutoff.ContactWatch``) that the
controller heard this node at the time of sending.

Example: node n1 with 8 CPUs posts ``NodeRegister(name="n1", cpus=8, ...,
version="22.05.8")`` to ``/v1/nodes/register``, then every interval a
``NodeHeartbeat(running_jobs=[7], cpu_load=0.5, ...)`` to
``/v1/nodes/n1/heartbeat``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import platform
from typing import TYPE_CHECKING, Any

import httpx

from agent import machine
from agent.completions import retry_delay
from slurmlite.config import Config, NodeConf
from slurmlite.credential import sign_request
from slurmlite.protocol import NodeHeartbeat, NodeRegister, to_dict

if TYPE_CHECKING:
    from agent.cutoff import ContactWatch
    from agent.gpu_outside import OutsideWatch
    from agent.gres import GpuDevice
    from agent.sampling import UsageSampler
    from slurmlite.clock import Clock

log = logging.getLogger("slurmd")
VERSION = "22.05.8"  # the Slurm version this agent answers as (``scontrol show node``)


class ControllerLink:
    """Talking to the controller (a mixin of ``AgentState``)."""

    cfg: Config
    name: str
    node_key: bytes
    node_conf: NodeConf | None
    gpus: list[GpuDevice]
    clock: Clock  # Unix seconds: request signatures
    timer: Clock  # monotonic seconds: when a request was sent
    start_time: float
    registered: asyncio.Event
    controller_url: str
    contact: ContactWatch
    sampler: UsageSampler
    outside: OutsideWatch
    http: httpx.AsyncClient

    def held_jobs(self) -> list[int]:
        raise NotImplementedError  # AgentState knows what it holds

    async def post(self, path: str, payload: dict[str, Any]) -> httpx.Response:
        body = json.dumps(payload).encode()
        headers = sign_request(self.node_key, self.name, "POST", path, body, self.clock())
        headers["content-type"] = "application/json"
        sent = self.timer()
        r = await self.http.post(self.controller_url + path, content=body, headers=headers)
        self.contact.heard(sent)  # answered: the controller heard this node at ``sent`` or later
        return r

    def register_message(self) -> NodeRegister:
        nc = self.node_conf
        overrides = "config_overrides" in self.cfg.slurmd_parameters and nc is not None
        cpus = nc.cpus if overrides and nc else (os.cpu_count() or 1)
        mem = nc.real_memory if overrides and nc else machine.mem_total_mib()
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
            boot_time=machine.boot_time(),
            start_time=self.start_time,
            version=VERSION,
            arch=platform.machine(),
            os=machine.os_name(),
            cpu_load=machine.cpu_load(),
            free_mem=machine.free_mem_mib(),
        )

    def heartbeat_message(self) -> NodeHeartbeat:
        return NodeHeartbeat(
            running_jobs=self.held_jobs(),
            cpu_load=machine.cpu_load(),
            free_mem=machine.free_mem_mib(),
            usage=self.sampler.summaries(),
            outside_gpus=self.outside.current,
        )

    async def register_forever(self) -> None:
        delay: float | None = None
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
            delay = retry_delay(delay)
            await asyncio.sleep(delay)

    async def heartbeat_forever(self) -> None:
        interval = max(0.2, float(self.cfg.heartbeat_interval))
        while True:
            await asyncio.sleep(interval)
            try:
                r = await self.post(
                    f"/v1/nodes/{self.name}/heartbeat", to_dict(self.heartbeat_message())
                )
                if r.status_code == 200 and not r.json().get("known", True):
                    await self.register_forever()
            except httpx.HTTPError as e:
                log.warning("event=heartbeat_failed node=%s error=%r", self.name, str(e))
