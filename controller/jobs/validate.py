"""Checking a submission and turning it into a job row.

What is checked here, in Slurm's order and with Slurm's error codes
(spec §8.6, golden ``40_sbatch_*``):

1. the partition exists (``-p nosuch`` -> "Invalid partition name specified"),
   or a default one does;
2. account and QOS: ``controller.accounting.accounts.Accounts.resolve`` picks them
   (``-A``/``-q``, else the user's defaults) and checks them against the
   user's associations ("Invalid account or account/partition combination
   specified", "Invalid qos specification");
3. requested nodes exist;
4. the request can ever fit some node of the partition when idle
   (``slurmlite.scheduler.feasibility.check_submit``).  Asking for more nodes
   than the partition has is *not* an error: the job pends with
   PartitionNodeLimit, as in Slurm.

0. every value can be stored (``slurmlite.wire_limits``: numbers within
   their field's range, no NUL character in text; ``--nice=2**40`` ->
   "Invalid --nice value"), and the job's CPU count too;
   a script is bytes (``slurmlite.scriptbytes``: UTF-8 text, or base64 with
   ``script_encoding="base64"``), any byte but NUL; then the sizes
   (``check_limits``): script at most 4 MiB of bytes, name and the
   like 1024 bytes, comment 64 KiB, paths 4096, the environment within
   ``slurmlite.batchscript``'s limits -> ESLURM_PATHNAME_TOO_LONG (HTTP 400);

The time limit is resolved here: ``--time`` if given (``0``/UNLIMITED =
unlimited), else the partition's DefaultTime, else its MaxTime.

A job is described as a plain dict of column values (``build_values``), not
as an ORM object: the store inserts a batch of such dicts in one statement
(``JobService.submit_many``), and building 60 instrumented attributes per
job would cost more than the insert.  What the checks need of the cluster
(node names, the idle view of each partition's nodes) is a pure function of
the configuration and the node rows, so it is computed once per pair and
kept until either changes (``NodeService.rows()`` hands out a new list after
every node write; ``reconfigure`` replaces ``cfg``); so are the verdicts of
``check_submit``, per distinct request shape: a burst of 1,000 identical
``sbatch`` runs the feasibility check once.
"""

from __future__ import annotations

import grp
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from controller.accounting.qos_limits import SubmitLimits
from controller.auth.callers import Caller
from controller.sched import willrun
from controller.sched.gather import node_views, partition_views, pending_job
from slurmlite import arrays, errors, mailtype, reasons
from slurmlite.arrays import ArraySpec
from slurmlite.batchscript import (
    InputLimitError,
    check_environment,
    check_script_size,
    check_sizes,
)
from slurmlite.config import Config, PartitionConf
from slurmlite.dependency import DependencyError, format_deps
from slurmlite.dependency import parse as parse_deps
from slurmlite.errors import SlurmError
from slurmlite.protocol import JobSubmit
from slurmlite.scheduler.feasibility import Rejection, check_submit
from slurmlite.scheduler.priority import initial_priority
from slurmlite.scheduler.snapshot import NodeView, PartitionView, Policy
from slurmlite.scriptbytes import NUL_MESSAGE, ScriptEncodingError, stored_form, wire_bytes
from slurmlite.wire_limits import INT32_MAX, first_problem

if TYPE_CHECKING:
    from controller.accounting.accounts import Accounts
    from controller.accounting.priorities import PriorityService
    from controller.nodes.service import NodeService


# Slurm's error for a value out of its field's range (else "Unexpected message received")
_RANGE_ERRORS = {
    "nice": errors.ESLURM_INVALID_NICE,
    "time_limit": errors.ESLURM_INVALID_TIME_LIMIT,
    "nodes_min": errors.ESLURM_INVALID_NODE_COUNT,
    "nodes_max": errors.ESLURM_INVALID_NODE_COUNT,
    "ntasks": errors.ESLURM_BAD_TASK_COUNT,
    "ntasks_per_node": errors.ESLURM_BAD_TASK_COUNT,
    "cpus_per_task": errors.ESLURM_INVALID_CPU_COUNT,
    "mem_per_node": errors.ESLURM_INVALID_TASK_MEMORY,
    "mem_per_cpu": errors.ESLURM_INVALID_TASK_MEMORY,
    "mem_per_gpu": errors.ESLURM_INVALID_TASK_MEMORY,
    "gpus_per_node": errors.ESLURM_INVALID_GRES,
    "gpus_total": errors.ESLURM_INVALID_GRES,
}


def check_storable(req: JobSubmit) -> None:
    """``SlurmError`` unless every value of ``req``, and its CPU count, fits the store.

    A script with a NUL byte, as text or in base64, is refused with sbatch's words;
    a node range whose maximum is below its minimum with Slurm's ESLURM_INVALID_NODE_COUNT."""
    problem = first_problem(req)
    if problem is not None:
        field, why = problem
        if field == "script":
            why = NUL_MESSAGE
        raise SlurmError(_RANGE_ERRORS.get(field, errors.SLURM_UNEXPECTED_MSG_ERROR), why)
    if req.script_encoding is not None and b"\0" in _script_bytes(req):
        raise SlurmError(errors.SLURM_UNEXPECTED_MSG_ERROR, NUL_MESSAGE)
    if req.nodes_max is not None and req.nodes_min is not None and req.nodes_max < req.nodes_min:
        raise SlurmError(
            errors.ESLURM_INVALID_NODE_COUNT,
            f"nodes_max={req.nodes_max} is below nodes_min={req.nodes_min}",
        )
    tasks = req.ntasks or (req.nodes_min or 1) * (req.ntasks_per_node or 1)
    if tasks * (req.cpus_per_task or 1) > INT32_MAX:
        raise SlurmError(errors.ESLURM_TOO_MANY_REQUESTED_CPUS, f"over {INT32_MAX} CPUs")
    if req.array is not None and req.allocation:
        raise SlurmError(errors.ESLURM_INVALID_ARRAY)  # srun and salloc take no --array
    if req.dependency:
        try:
            req.dependency = format_deps(parse_deps(req.dependency))
        except DependencyError as exc:
            raise SlurmError(errors.ESLURM_DEPENDENCY, str(exc)) from None
    if req.mail_type is not None:  # the commands send the canonical form; check it again
        try:
            req.mail_type = mailtype.parse(req.mail_type)
        except ValueError as exc:
            raise SlurmError(errors.SLURM_UNEXPECTED_MSG_ERROR, str(exc)) from None


def check_webhook(cfg: Config, req: JobSubmit) -> None:
    """A ``--mail-user`` URL (the user's own webhook) must start with one of the prefixes
    the admin allows (``SlurmliteUserWebhooks``): the controller would POST there, so an
    open list would let any user make it call any address it can reach."""
    url = req.mail_user or ""
    if not url.lower().startswith(("http://", "https://")) or not mailtype.words(req.mail_type):
        return
    if not any(url.startswith(prefix) for prefix in cfg.user_webhooks):
        raise SlurmError(
            errors.ESLURM_ACCESS_DENIED,
            f"--mail-user={url}: webhooks of users are limited to SlurmliteUserWebhooks"
            + (f" ({','.join(cfg.user_webhooks)})" if cfg.user_webhooks else " (none allowed)"),
        )


def _script_bytes(req: JobSubmit) -> bytes:
    try:
        return wire_bytes(req.script, req.script_encoding)
    except ScriptEncodingError as exc:
        raise SlurmError(errors.SLURM_UNEXPECTED_MSG_ERROR, str(exc)) from None


@dataclass
class SubmitPlan:
    partition: PartitionConf
    time_limit: int | None
    memory: tuple[int | None, int | None, int | None] = (None, None, None)  # per node, cpu, gpu
    error: SlurmError | None = None
    account: str = ""  # resolved by Accounts.resolve ("" : not resolved)
    qos: str = ""
    array: ArraySpec | None = None  # --array, parsed against MaxArraySize


class RowView:
    """Attribute access to a dict of column values, as ``pending_job`` reads a row."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__ = values


@dataclass(frozen=True)
class _ClusterFacts:
    """What the checks read of the cluster, for one (configuration, node rows) pair."""

    known: frozenset[str]
    views: dict[str, tuple[NodeView, ...]]  # partition -> its nodes, idle
    partitions: dict[str, PartitionView]
    verdicts: dict[tuple[Any, ...], Rejection | None]  # check_submit's answers so far


class SubmitValidator:
    def __init__(
        self, cfg: Config, policy: Policy, nodes: NodeService, accounts: Accounts | None = None
    ) -> None:
        self.cfg = cfg
        self.policy = policy
        self.nodes = nodes
        self.accounts = accounts  # None: only the configured default account and QOS
        # (cfg, rows, facts): the key objects are held, so their ids cannot be reused
        self._facts: tuple[Config, list[Any], _ClusterFacts] | None = None
        # multifactor priority at submit (controller.accounting.priorities; set by the Controller)
        self.priorities: PriorityService | None = None

    def _cluster(self) -> _ClusterFacts:
        cfg, rows = self.cfg, self.nodes.rows()
        cached = self._facts
        if cached is not None and cached[0] is cfg and cached[1] is rows:
            if len(cached[2].verdicts) > 4096:
                cached[2].verdicts.clear()
            return cached[2]
        views = node_views(cfg, self.nodes, 0.0, idle=True)
        facts = _ClusterFacts(
            known=frozenset(r.name for r in rows),
            views={p.name: tuple(v for v in views if v.name in p.nodes) for p in cfg.partitions},
            partitions={p.name: p for p in partition_views(cfg)},
            verdicts={},
        )
        self._facts = (cfg, rows, facts)
        return facts

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
        check_storable(req)
        check_webhook(self.cfg, req)
        array = self._array(req)
        check_limits(req)
        part = self._partition(req.partition)
        account, qos = self._account_qos(caller, req, part.name)
        facts = self._cluster()
        for n in [*req.req_nodes, *req.exc_nodes]:
            if n not in facts.known:
                raise SlurmError(
                    errors.ESLURM_INVALID_NODE_NAME, f"invalid node name specified: {n}"
                )
        if req.time_unlimited:
            limit = None
        elif req.time_limit is not None:
            limit = req.time_limit
        else:
            limit = part.default_time if part.default_time is not None else part.max_time
        plan = SubmitPlan(
            partition=part,
            time_limit=limit,
            memory=self._memory(req),
            account=account,
            qos=qos,
            array=array,
        )
        values = self._request_values(req, plan)
        # QOS limits (controller.accounting.qos_limits): refuse over MaxSubmitJobsPerUser (or DenyOnLimit);
        # a job without --time gets the QOS MaxWall.  The QOS is the one resolved above.
        qos_name = plan.qos or req.qos or self.cfg.default_qos
        plan.time_limit = SubmitLimits.for_db(self.nodes.db).check(
            self.cfg,
            getattr(self.policy, "enforce_limits", True),
            caller.user,
            caller.uid,
            values,
            qos_name,
            explicit_time=req.time_unlimited or req.time_limit is not None,
        )
        key = tuple(values.values())  # the request as the check sees it
        try:
            rejection = facts.verdicts[key]
        except KeyError:
            probe = pending_job(RowView(values))
            rejection = check_submit(
                probe, facts.partitions[part.name], facts.views[part.name], self.policy
            )
            facts.verdicts[key] = rejection
        if rejection is not None:
            plan.error = SlurmError(rejection.code, rejection.detail)
        return plan

    def _array(self, req: JobSubmit) -> ArraySpec | None:
        """``--array`` parsed against MaxArraySize (Slurm's ESLURM_INVALID_ARRAY otherwise)."""
        if req.array is None:
            return None
        try:
            return arrays.parse_spec(req.array, self.cfg.max_array_size)
        except arrays.ArraySpecError as exc:
            raise SlurmError(errors.ESLURM_INVALID_ARRAY) from exc  # sbatch prints no detail

    def _account_qos(self, caller: Caller, req: JobSubmit, partition: str) -> tuple[str, str]:
        """The job's account and QOS (``SlurmError`` INVALID_ACCOUNT / INVALID_QOS)."""
        if self.accounts is not None:
            return self.accounts.resolve(caller.user, req.account, req.qos, partition)
        if req.account is not None and req.account != self.cfg.default_account:
            raise SlurmError(errors.ESLURM_INVALID_ACCOUNT)
        if req.qos is not None and req.qos != self.cfg.default_qos:
            raise SlurmError(errors.ESLURM_INVALID_QOS)
        return req.account or self.cfg.default_account, req.qos or self.cfg.default_qos

    def _memory(self, req: JobSubmit) -> tuple[int | None, int | None, int | None]:
        """The job's memory request, with DefMemPerGPU/DefMemPerCPU filled in as Slurm does."""
        if (
            req.mem_per_node is not None
            or req.mem_per_cpu is not None
            or req.mem_per_gpu is not None
        ):
            return req.mem_per_node, req.mem_per_cpu, req.mem_per_gpu
        wants_gpus = bool(req.gpus_per_node or req.gpus_total)
        if wants_gpus and self.cfg.def_mem_per_gpu:
            return None, None, self.cfg.def_mem_per_gpu
        if self.cfg.def_mem_per_cpu:
            return None, self.cfg.def_mem_per_cpu, None
        return None, None, None

    def _request_values(self, req: JobSubmit, plan: SubmitPlan) -> dict[str, Any]:
        """The columns the feasibility check reads (``pending_job``), as a probe job 0."""
        mem_node, mem_cpu, mem_gpu = plan.memory
        return {
            "id": 0,
            "priority": 1,
            "submit_time": 0.0,
            "partition": plan.partition.name,
            "user": "",
            "state": "PENDING",
            "nodes_min": req.nodes_min or 1,
            "nodes_max": req.nodes_max,
            "ntasks": req.ntasks,
            "ntasks_per_node": req.ntasks_per_node,
            "cpus_per_task": req.cpus_per_task or 1,
            "mem_per_node": mem_node,
            "mem_per_cpu": mem_cpu,
            "mem_per_gpu": mem_gpu,
            "gpus_per_node": req.gpus_per_node or 0,
            "gpus_total": req.gpus_total,
            "gpu_type": req.gpu_type,
            "time_limit": plan.time_limit,
            "req_nodes": ",".join(req.req_nodes),
            "exc_nodes": ",".join(req.exc_nodes),
            "exclusive": req.exclusive,
            "constraint": req.constraint,
            "hold": None,
            "eligible_time": None,
        }

    def build_values(
        self, job_id: int, caller: Caller, req: JobSubmit, plan: SubmitPlan, now: float
    ) -> dict[str, Any]:
        """The new job's row as column values (the same keys for every job: one batch insert)."""
        v = self._request_values(req, plan)
        spec = plan.array
        ntasks = req.ntasks or (req.nodes_min or 1) * (req.ntasks_per_node or 1)
        v.update(
            id=job_id,
            name=req.name,
            uid=caller.uid,
            gid=caller.gid,
            user=caller.user,
            group=_group_name(caller.gid),
            account=plan.account or req.account or self.cfg.default_account,
            qos=plan.qos or req.qos or self.cfg.default_qos,
            submit_time=now,
            eligible_time=now,
            flags="",
            reason=reasons.NONE,
            state_desc=None,
            nice=req.nice,
            priority=0,  # the PriorityType's value and breakdown: set below, once
            prio_factors=None,
            num_cpus=ntasks * (req.cpus_per_task or 1),
            tres_per_node=req.tres_per_node,
            tres_per_job=req.tres_per_job,
            work_dir=req.work_dir,
            submit_dir=req.submit_dir,
            submit_host=req.submit_host,
            alloc_sid=req.alloc_sid,
            command=req.command,
            comment=req.comment,
            std_out=req.std_out,
            std_err=req.std_err,
            std_in=req.std_in,
            open_mode=req.open_mode or ("append" if self.cfg.job_file_append else "truncate"),
            # an allocation (srun, salloc) is never requeued: its command holds it
            requeue=not req.allocation and (True if req.requeue is None else req.requeue),
            allocation=req.allocation,
            keepalive=None,
            warn_signal=req.warn_signal,
            warn_time=req.warn_time,
            warn_batch=req.warn_batch,
            warned_run=None,
            script=stored_form(req.script, req.script_encoding),  # text, or marker + base64
            script_args=json.dumps(req.script_args) if req.script_args else None,
            environment=json.dumps(req.environment),
            echo_env=json.dumps(req.echo_env),
            export=req.export,
            restarts=0,
            alloc="[]",
            nodes="",
            layout="",
            start_time=None,
            end_time=None,
            batch_host=None,
            exit_code=None,
            derived_exit_code=None,
            cancelled_by=None,
            dependency=req.dependency or None,
            dep_failed=False,
            kill_invalid_dep=req.kill_invalid_dep,
            last_sched_eval=now,  # Slurm evaluates a job once as it is submitted
            # an array is this one row until its tasks start (controller.store.array_split)
            array_job_id=job_id if spec else None,
            array_task_id=None,
            array_pending=spec.pending if spec else None,
            array_max_tasks=spec.throttle if spec else None,
            array_info=spec.info if spec else None,
            # no mail at all is stored as None; Slurm's default recipient is the submitter
            mail_type=req.mail_type if mailtype.words(req.mail_type) else None,
            mail_user=(req.mail_user or caller.user) if mailtype.words(req.mail_type) else None,
        )
        if req.begin_time is not None and req.begin_time > now:
            v["eligible_time"], v["reason"] = req.begin_time, reasons.BEGIN_TIME
        if v["dependency"]:
            v["reason"] = reasons.DEPENDENCY
            if v["eligible_time"] == now:  # no --begin ahead: EligibleTime=Unknown until it holds
                v["eligible_time"] = None
        if req.hold:
            v["hold"] = v["reason"] = reasons.JOB_HELD_USER
            v["eligible_time"] = None
        if self.priorities is None or not self.priorities.at_submit(v):  # multifactor: age 0
            v["priority"] = initial_priority(req, self.policy, sequence=job_id)
        if plan.error is not None:
            # Slurm keeps the id of a request that can never run and shows it
            # FAILED (BadConstraints); the submitter gets the error.
            v.update(state="FAILED", reason=reasons.BAD_CONSTRAINTS, exit_code=1 << 8, end_time=now)
        return v

    def test_only_message(self, job_id: int, values: dict[str, Any], now: float) -> str:
        """``sbatch --test-only``'s "to start at" line (``controller.sched.willrun``)."""
        return willrun.test_only_message(
            self.nodes.db, self.cfg, self.nodes, self.policy, job_id, values, now
        )


def check_limits(req: JobSubmit) -> None:
    """Refuse a request over a size limit, as Slurm's controller does.

    ``SlurmError(ESLURM_PATHNAME_TOO_LONG)`` (HTTP 400) naming the part: the
    script over 4 MiB, name/partition/... over 1024 bytes, a comment over 64 KiB,
    a path over 4096, an environment over ``slurmlite.batchscript``'s limits; a malformed
    environment (empty name, ``=`` or NUL in it) -> ``SLURM_UNEXPECTED_MSG_ERROR``
    (also 400)."""
    try:
        check_script_size(req.script if req.script_encoding is None else _script_bytes(req))
        texts = {
            "job name": req.name,
            "partition": req.partition,
            "account": req.account,
            "QOS": req.qos,
            "constraint": req.constraint,
            "submit host": req.submit_host,
            "mail user": req.mail_user,
        }
        paths = {
            "work directory": req.work_dir,
            "submit directory": req.submit_dir,
            "output path": req.std_out,
            "error path": req.std_err,
            "input path": req.std_in,
            "command": req.command,
        }
        check_sizes(texts, paths, {"comment": req.comment})
        check_environment(req.environment)
        check_environment(req.echo_env, "echoed environment")
    except InputLimitError as exc:
        code = (
            errors.ESLURM_PATHNAME_TOO_LONG if exc.too_long else errors.SLURM_UNEXPECTED_MSG_ERROR
        )
        raise SlurmError(code, str(exc)) from None


@lru_cache(maxsize=1024)
def _group_name(gid: int) -> str:
    """The group's name, looked up once per gid (a miss scans the whole group database)."""
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
