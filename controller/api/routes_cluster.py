"""Cluster routes: nodes, partitions, configuration, identity, health."""

from __future__ import annotations

import asyncio
import platform
from functools import cache
from typing import Annotated

from fastapi import APIRouter, Path

from controller.accounting.usage import store_usage
from controller.api.deps import Ctl, NodeCaller, UserCaller
from controller.api.schemas import (
    Ack,
    CompletionAcksModel,
    CompletionBatchModel,
    ConfigFiles,
    ConfigItems,
    Health,
    HeartbeatOut,
    JobCompletionModel,
    NodeHeartbeatModel,
    NodeList,
    NodeRegisterModel,
    NodeUpdateModel,
    PartitionList,
    ReconfigureOut,
    VersionInfo,
    WhoAmI,
)
from controller.nodes import outside_gpus
from controller.store.migrate import head_revision, store_revision
from slurmlite import errors
from slurmlite.config import SLURM_VERSION
from slurmlite.config_show import config_items
from slurmlite.configless import served_files
from slurmlite.conftext import ConfigError
from slurmlite.errors import SlurmError
from slurmlite.protocol import (
    CompletionAck,
    CompletionAcks,
    CompletionBatch,
    JobCompletion,
    NodeHeartbeat,
    NodeRegister,
    NodeUpdate,
    from_dict,
    to_dict,
)
from slurmlite.version import slurmlite_version
from slurmlite.wire_limits import INT32_MAX

JobIdPath = Annotated[int, Path(ge=0, le=INT32_MAX)]

open_router = APIRouter(tags=["health"])
user_router = APIRouter(prefix="/v1", tags=["cluster"])
node_router = APIRouter(prefix="/v1", tags=["agents"])


@open_router.get("/health", response_model=Health)
def health(ctl: Ctl) -> Health:
    return Health(status="ok", cluster=ctl.cfg.cluster_name)


@user_router.get("/whoami", response_model=WhoAmI)
def whoami(caller: UserCaller) -> WhoAmI:
    return WhoAmI(uid=caller.uid, gid=caller.gid, user=caller.user, admin=caller.admin)


@user_router.get("/nodes", response_model=NodeList)
def nodes(caller: UserCaller, ctl: Ctl):
    infos = ctl.nodes.infos()
    if not caller.admin and "users" in {w.lower() for w in ctl.cfg.private_data}:
        infos = outside_gpus.private(infos, caller.user)  # whose process uses a GPU
    return {"nodes": [to_dict(n) for n in infos]}


@user_router.get("/partitions", response_model=PartitionList)
def partitions(caller: UserCaller, ctl: Ctl):
    return {"partitions": [to_dict(p) for p in ctl.nodes.partitions()]}


@user_router.get("/config", response_model=ConfigItems)
def config(caller: UserCaller, ctl: Ctl) -> ConfigItems:
    return ConfigItems(items=config_items(ctl.cfg))


@user_router.get("/version", response_model=VersionInfo)
def version(caller: UserCaller, ctl: Ctl) -> VersionInfo:
    """Which slurmlite runs here, the schema it expects and the store's own revision
    (``slurmlite version``; the store's URL is never shown, only its kind)."""
    revision, kind = store_revision(ctl.db.engine)
    return VersionInfo(
        slurmlite=slurmlite_version(),
        slurm=SLURM_VERSION,
        python=platform.python_version(),
        schema_head=_schema_head(),
        store_revision=revision,
        store_kind=kind,
    )


@cache
def _schema_head() -> str:
    return head_revision()  # Alembic reads the revision files: once per process


@user_router.get("/config/files", response_model=ConfigFiles)
def config_files(caller: UserCaller, ctl: Ctl) -> ConfigFiles:
    """slurm.conf (Includes inlined, the store URL withheld), gres.conf, cgroup.conf, as
    they are on the controller's disk now: what ``slurmd --conf-server`` caches."""
    try:
        return ConfigFiles(files=served_files(ctl.cfg.path))
    except (ConfigError, OSError) as e:  # edited into something unreadable since start
        raise SlurmError(errors.SLURMLITE_CONFIG_INVALID, str(e)) from None


@user_router.post("/nodes/update", response_model=Ack)
def update_nodes(body: NodeUpdateModel, caller: UserCaller, ctl: Ctl) -> Ack:  # type: ignore[valid-type]
    if not caller.admin:  # Slurm's answer to a non-operator: "Invalid user id"
        raise SlurmError(errors.ESLURM_USER_ID_MISSING)
    ctl.nodes.update(from_dict(NodeUpdate, body.model_dump()), caller.uid)  # type: ignore[attr-defined]
    ctl.loop.wake()
    return Ack(ok=True, changed=True)


@user_router.post("/reconfigure", response_model=ReconfigureOut)
def reconfigure(caller: UserCaller, ctl: Ctl) -> ReconfigureOut:
    if not caller.admin:
        raise SlurmError(errors.ESLURM_ACCESS_DENIED)
    return ReconfigureOut(warnings=ctl.reconfigure())


@node_router.post("/nodes/register", response_model=Ack)
def register(body: NodeRegisterModel, node: NodeCaller, ctl: Ctl) -> Ack:  # type: ignore[valid-type]
    msg = from_dict(NodeRegister, body.model_dump())  # type: ignore[attr-defined]
    if msg.name != node:
        raise SlurmError(errors.ESLURM_ACCESS_DENIED, f"node {node} cannot register as {msg.name}")
    ctl.nodes.register(msg)
    ctl.loop.wake()
    return Ack(ok=True, changed=True)


@node_router.post("/nodes/{name}/heartbeat", response_model=HeartbeatOut)
def heartbeat(name: str, body: NodeHeartbeatModel, node: NodeCaller, ctl: Ctl) -> HeartbeatOut:  # type: ignore[valid-type]
    if name != node:
        raise SlurmError(errors.ESLURM_ACCESS_DENIED, f"node {node} cannot speak for {name}")
    held, load, free = body.running_jobs, body.cpu_load, body.free_mem  # type: ignore[attr-defined]
    outside = body.outside_gpus  # type: ignore[attr-defined]
    known = ctl.nodes.heartbeat(name, held, load, free, outside)
    if known and body.usage:  # type: ignore[attr-defined]
        # the running jobs' usage so far; only this node's jobs count (controller.accounting.usage)
        usage = from_dict(NodeHeartbeat, {"usage": body.model_dump()["usage"]}).usage  # type: ignore[attr-defined]
        store_usage(ctl.db, name, usage, ctl.usage_history)  # + the job pages' sparklines
    return HeartbeatOut(known=known)


@node_router.post("/jobs/{job_id}/complete", response_model=Ack)
async def complete(job_id: JobIdPath, body: JobCompletionModel, node: NodeCaller, ctl: Ctl) -> Ack:  # type: ignore[valid-type]
    msg = from_dict(JobCompletion, body.model_dump())  # type: ignore[attr-defined]
    if msg.node != node or msg.job_id != job_id:
        raise SlurmError(errors.ESLURM_ACCESS_DENIED, f"node {node} cannot report for {msg.node}")
    changed = await asyncio.to_thread(ctl.jobs.complete, node, msg)
    ctl.loop.wake()
    return Ack(ok=True, changed=changed)


@node_router.post("/nodes/{name}/completions", response_model=CompletionAcksModel)
async def complete_many(name: str, body: CompletionBatchModel, node: NodeCaller, ctl: Ctl):  # type: ignore[valid-type]
    """Every completion a node owes, recorded in one transaction; one ack per item.

    Refused whole (403, nothing recorded) if the path or any item names
    another node than the one that signed the request.
    """
    batch = from_dict(CompletionBatch, body.model_dump())  # type: ignore[attr-defined]
    strangers = sorted({m.node for m in batch.completions if m.node != node})
    if name != node or strangers:
        who = ",".join(strangers) or name
        raise SlurmError(errors.ESLURM_ACCESS_DENIED, f"node {node} cannot report for {who}")
    changed = await asyncio.to_thread(ctl.jobs.complete_many, node, batch.completions)
    if any(changed):
        ctl.loop.wake()
    acks = [
        CompletionAck(m.job_id, m.restarts, ok=True, changed=c)
        for m, c in zip(batch.completions, changed, strict=True)
    ]
    return to_dict(CompletionAcks(acks))
