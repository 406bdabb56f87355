"""Checking a submission and turning it into a job row.

What is checked here, in Slurm's order and with Slurm's error codes
(spec §8.6, golden ``40_sbatch_*``):

1. the partition exists (``-p nosuch`` -> "Invalid partition name specified"),
   or a default one does;
2. account and QOS are known (until associations exist: the configured
   default account and QOS, ``SlurmliteDefaultAccount``/``SlurmliteDefaultQOS``);
3. requested nodes exist;
4. the request can ever fit some node of the partition when idle
   (``slurmlite.scheduler.feasibility.check_submit``).  Asking for more nodes
   than the partition has is *not* an error: the job pends with
   PartitionNodeLimit, as in Slurm.

The time limit is resolved here: ``--time`` if given (``0``/UNLIMITED =
unlimited), else the partition's DefaultTime, else its MaxTime.
"""

from __future__ import annotations

import grp
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from controller.auth import Caller
from controller.snapshot import node_views, partition_views, pending_job
from controller.store.models import JobRow
from slurmlite import errors
from slurmlite.config import Config, PartitionConf
from slurmlite.errors import SlurmError
from slurmlite.hostlist import compress
from slurmlite.protocol import JobSubmit
from slurmlite.scheduler.feasibility import check_submit, will_run_now
from slurmlite.scheduler.priority import initial_priority
from slurmlite.scheduler.snapshot import Policy
from slurmlite.timefmt import fmt_timestamp

if TYPE_CHECKING:
    from controller.nodes import NodeService


@dataclass
class SubmitPlan:
    partition: PartitionConf
    time_limit: int | None
    memory: tuple[int | None, int | None, int | None] = (None, None, None)  # per node, cpu, gpu
    error: SlurmError | None = None


class SubmitValidator:
    def __init__(self, cfg: Config, policy: Policy, nodes: NodeService) -> None:
        self.cfg = cfg
        self.policy = policy
        self.nodes = nodes

    def _partition(self, name: str | None) -> PartitionConf:
        if name is None:
            part = self.cfg.default_partition
            if part is None:
                raise SlurmError(errors.ESLURM_DEFAULT_PARTITION_NOT_SET)
            return part
        if "," in name:
            raise SlurmError(
                errors.ESLURM_NOT_SUPPORTED, "several partitions in -p are not supported yet"
            )
        try:
            return self.cfg.partition(name)
        except KeyError:
            raise SlurmError(
                errors.ESLURM_INVALID_PARTITION_NAME, f"invalid partition specified: {name}"
            ) from None

    def validate(self, caller: Caller, req: JobSubmit) -> SubmitPlan:
        part = self._partition(req.partition)
        if req.account is not None and req.account != self.cfg.default_account:
            raise SlurmError(errors.ESLURM_INVALID_ACCOUNT)
        if req.qos is not None and req.qos != self.cfg.default_qos:
            raise SlurmError(errors.ESLURM_INVALID_QOS)
        known = {n.name for n in self.nodes.rows()}
        for n in [*req.req_nodes, *req.exc_nodes]:
            if n not in known:
                raise SlurmError(
                    errors.ESLURM_INVALID_NODE_NAME, f"invalid node name specified: {n}"
                )
        if req.time_unlimited:
            limit = None
        elif req.time_limit is not None:
            limit = req.time_limit
        else:
            limit = part.default_time if part.default_time is not None else part.max_time
        plan = SubmitPlan(partition=part, time_limit=limit, memory=self._memory(req))
        probe = pending_job(self._probe_row(req, plan))
        views = [
            v for v in node_views(self.cfg, self.nodes, 0.0, idle=True) if v.name in part.nodes
        ]
        pview = next(p for p in partition_views(self.cfg) if p.name == part.name)
        rejection = check_submit(probe, pview, views, self.policy)
        if rejection is not None:
            plan.error = SlurmError(rejection.code, rejection.detail)
        return plan

    def _memory(self, req: JobSubmit) -> tuple[int | None, int | None, int | None]:
        """The job's memory request, with DefMemPerGPU/DefMemPerCPU filled in as Slurm does."""
        if (
            req.mem_per_node is not None
            or req.mem_per_cpu is not None
            or req.mem_per_gpu is not None
        ):
            return req.mem_per_node, req.mem_per_cpu, req.mem_per_gpu
        wants_gpus = bool(req.gres_per_node or req.gpus_total)
        if wants_gpus and self.cfg.def_mem_per_gpu:
            return None, None, self.cfg.def_mem_per_gpu
        if self.cfg.def_mem_per_cpu:
            return None, self.cfg.def_mem_per_cpu, None
        return None, None, None

    def _probe_row(self, req: JobSubmit, plan: SubmitPlan) -> JobRow:
        mem_node, mem_cpu, mem_gpu = plan.memory
        return JobRow(
            id=0,
            priority=1,
            submit_time=0.0,
            partition=plan.partition.name,
            user="",
            state="PENDING",
            nodes_min=req.nodes_min or 1,
            nodes_max=req.nodes_max,
            ntasks=req.ntasks,
            ntasks_per_node=req.ntasks_per_node,
            cpus_per_task=req.cpus_per_task or 1,
            mem_per_node=mem_node,
            mem_per_cpu=mem_cpu,
            mem_per_gpu=mem_gpu,
            gpus_per_node=req.gres_per_node or 0,
            gpus_total=req.gpus_total,
            gpu_type=req.gpu_type,
            time_limit=plan.time_limit,
            req_nodes=",".join(req.req_nodes),
            exc_nodes=",".join(req.exc_nodes),
            exclusive=req.exclusive,
            constraint=req.constraint,
            hold=None,
            eligible_time=None,
        )

    def build_row(
        self, job_id: int, caller: Caller, req: JobSubmit, plan: SubmitPlan, now: float
    ) -> JobRow:
        row = self._probe_row(req, plan)
        row.id = job_id
        row.name = req.name
        row.uid, row.gid, row.user = caller.uid, caller.gid, caller.user
        row.group = _group_name(caller.gid)
        row.account = req.account or self.cfg.default_account
        row.qos = req.qos or self.cfg.default_qos
        row.submit_time = row.eligible_time = now
        row.flags, row.reason = "", "None"
        row.nice = req.nice
        if req.hold:
            row.hold = "JobHeldUser"
            row.reason, row.eligible_time = "JobHeldUser", None
        row.priority = initial_priority(req, self.policy, sequence=job_id)
        ntasks = req.ntasks or (req.nodes_min or 1) * (req.ntasks_per_node or 1)
        row.num_cpus = ntasks * (req.cpus_per_task or 1)
        row.tres_per_node, row.tres_per_job = req.tres_per_node, req.tres_per_job
        row.work_dir, row.submit_dir, row.submit_host = (
            req.work_dir,
            req.submit_dir,
            req.submit_host,
        )
        row.command, row.comment = req.command, req.comment
        row.std_out, row.std_err, row.std_in, row.open_mode = (
            req.std_out,
            req.std_err,
            req.std_in,
            req.open_mode,
        )
        row.requeue = True if req.requeue is None else req.requeue
        row.script = req.script
        row.environment = json.dumps(req.environment)
        row.echo_env = json.dumps(req.echo_env)
        row.export = req.export
        row.restarts, row.alloc, row.nodes, row.layout = 0, "[]", "", ""
        return row

    def test_only_message(self, job_id: int, row: JobRow, now: float) -> str:
        part = self.cfg.partition(row.partition)
        views = [v for v in node_views(self.cfg, self.nodes, now) if v.name in part.nodes]
        pview = next(p for p in partition_views(self.cfg) if p.name == part.name)
        start = will_run_now(pending_job(row), pview, views, self.policy, now)
        if start is None:
            raise SlurmError(
                errors.ESLURM_NOT_SUPPORTED,
                "the job cannot start now, and start-time estimates for later are not supported yet",
            )
        return (
            f"Job {job_id} to start at {fmt_timestamp(now)} using {start.cpus} processors "
            f"on nodes {compress(start.nodes)} in partition {part.name}"
        )


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
