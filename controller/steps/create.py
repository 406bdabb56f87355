"""Creating a job step for srun: check the job, place the step, sign one order per node.

A step (``sacct``'s ``N.0``, ``N.1`` ...) runs inside a RUNNING job's
allocation.  The controller never starts its tasks: it decides where they
run, records the step, and hands srun one signed ``StepLaunch`` per node
(``protocol``'s "job steps" flow); srun carries them to the agents.

Creating (``create_step``), in one transaction:

1. the job must exist (``ESLURM_INVALID_JOB_ID``), belong to the caller or
   the caller be an operator (``ESLURM_ACCESS_DENIED``), and be RUNNING:
   pending -> ``ESLURM_JOB_PENDING``, suspended -> ``ESLURM_DISABLED``,
   ended (or past its end time) -> ``ESLURM_ALREADY_DONE``, as Slurm answers
   srun;
2. what the job's running steps of this run hold is summed from their
   ``usage`` (``busy_of``) and the step is placed (``controller.steps.place``:
   ``ESLURM_NODES_BUSY``, HTTP 409, when only running steps are in the way);
3. its number is one more than the highest the job has had (0 first), read
   from the store, so ids keep increasing across controller restarts and
   requeues; the row is RUNNING, named after ``argv[0]``'s base name;
4. each node's order gets the step environment (``slurmlite.stepenv``),
   ``MASTER_ADDR`` = the first step node's address, ``MASTER_PORT`` =
   ``jobenv.master_port(job id)``, and a credential for that node only
   (``Signer.step``).

Its end (each node's report, ``end_part``) and the closing of steps that
will never hear from all their nodes are in ``controller.steps.ends``.

Example: job 7 holds 2 CPUs on n1 and n2.  ``srun -n4 hostname`` -> step
7.0, ranks 0-1 on n1 and 2-3 on n2, holding all 4 CPUs; a second ``srun
-n1`` meanwhile -> 409 ESLURM_NODES_BUSY; once 7.0 ended -> step 7.1.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from sqlalchemy import select

from controller.auth.callers import Caller, may_act_on
from controller.steps.ends import running_steps
from controller.steps.place import Held, Placement, place
from controller.store.models import JobRow, NodeRow, StepRow
from controller.store.rows import allocs_of, job_info, split_list
from slurmlite import errors
from slurmlite.batchscript import InputLimitError, check_environment
from slurmlite.errors import SlurmError
from slurmlite.gresconf import gpu_env_style_for
from slurmlite.jobenv import master_port
from slurmlite.protocol import StepGrant, StepLaunch, StepNode, StepRequest
from slurmlite.states import is_finished
from slurmlite.stepenv import step_environment

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from controller.nodes.agent_client import Signer
    from controller.store.db import Database
    from slurmlite.config import Config


def busy_of(steps: list[StepRow]) -> dict[str, Held]:
    """What ``steps`` hold on each node, summed."""
    held: dict[str, Held] = {}
    for st in steps:
        for node, use in json.loads(st.usage or "{}").items():
            h = held.setdefault(node, Held())
            h.cpus += use["cpus"]
            h.gpus |= set(use["gpus"])
    return held


def _next_id(s: Session, job_id: int) -> int:
    ids = s.scalars(select(StepRow.step_id).where(StepRow.job_id == job_id))
    return 1 + max((int(i) for i in ids if i.isdigit()), default=-1)


def _runnable(caller: Caller, row: JobRow | None, now: float, min_job_age: float) -> JobRow:
    """``row`` if ``caller`` may start a step in it now; else Slurm's refusal."""
    if row is None or (
        is_finished(row.state)
        and "COMPLETING" not in split_list(row.flags)
        and now - (row.end_time or now) > min_job_age
    ):
        raise SlurmError(errors.ESLURM_INVALID_JOB_ID)
    if not may_act_on(caller, row.uid):
        raise SlurmError(errors.ESLURM_ACCESS_DENIED)
    if row.state == "PENDING":
        raise SlurmError(errors.ESLURM_JOB_PENDING)
    if row.state == "SUSPENDED":
        raise SlurmError(errors.ESLURM_DISABLED)
    if row.state != "RUNNING" or (row.end_time is not None and row.end_time <= now):
        raise SlurmError(errors.ESLURM_ALREADY_DONE)
    return row


def create_step(
    db: Database,
    cfg: Config,
    signer: Signer,
    now: float,
    caller: Caller,
    job_id: int,
    req: StepRequest,
) -> StepGrant:
    """Record a new step of ``job_id`` at ``now`` and answer its per-node orders,
    signed by ``signer``."""
    try:
        check_environment(req.environment)
    except InputLimitError as e:
        code = errors.ESLURM_PATHNAME_TOO_LONG if e.too_long else errors.SLURM_UNEXPECTED_MSG_ERROR
        raise SlurmError(code, str(e)) from None
    with db.write() as s:
        row = _runnable(caller, s.get(JobRow, job_id), now, cfg.min_job_age)
        allocs = {a.node: a for a in allocs_of(row.alloc)}
        ordered = [allocs[n] for n in split_list(row.nodes) if n in allocs]
        plan = place(ordered, busy_of(running_steps(s, row.id, row.restarts)), req)
        step_id = _next_id(s, row.id)
        nodes = {n.name: n for n in s.scalars(select(NodeRow).where(NodeRow.name.in_(plan.nodes)))}
        grant = _grant(cfg, signer, row, req, plan, step_id, nodes, now)
        mem = req.mem_per_node * len(plan.nodes) if req.mem_per_node else None
        s.add(
            StepRow(
                job_id=row.id,
                step_id=str(step_id),
                name=req.name or os.path.basename(req.argv[0]) or req.argv[0],
                state="RUNNING",
                exit_code=None,
                start_time=now,
                end_time=None,
                nodes=",".join(plan.nodes),
                cpus=sum(plan.cpus),
                mem=mem if mem is not None else sum(allocs[n].mem for n in plan.nodes),
                ntasks=plan.ntasks,
                restarts=row.restarts,
                usage=json.dumps(
                    {n: {"cpus": h.cpus, "gpus": sorted(h.gpus)} for n, h in plan.holds.items()}
                ),
                reports="{}",
            )
        )
    return grant


def _grant(
    cfg: Config,
    signer: Signer,
    row: JobRow,
    req: StepRequest,
    plan: Placement,
    step_id: int,
    nodes: dict[str, NodeRow],
    now: float,
) -> StepGrant:
    """One signed ``StepLaunch`` per node of ``plan`` and where to send it."""
    info = job_info(row)
    first = nodes.get(plan.nodes[0])
    master = first.addr if first is not None and first.addr else plan.nodes[0]
    port = master_port(row.id)
    limits = [int(row.end_time - now)] if row.end_time is not None else []
    if req.time_limit is not None:
        limits.append(req.time_limit * 60)
    out = StepGrant(job_id=row.id, step_id=step_id, nodes=[], launches=[], ntasks=plan.ntasks)
    for i, name in enumerate(plan.nodes):
        node = nodes.get(name)
        env = step_environment(
            info,
            req.environment,
            step_id,
            plan.nodes,
            plan.tasks,
            i,
            req.cpus_per_task,
            plan.gpus[i],
            master,
            port,
            cfg.cluster_name,
            node_gpu_count=node.gpus if node is not None else 0,
            gpu_env_style=gpu_env_style_for(cfg, name),
            controller_host=cfg.control_addr or cfg.control_host,
            controller_port=cfg.slurmctld_port,
            conf_path=cfg.path,
            distribution=_given_distribution(req.distribution),
            ntasks_per_node=req.ntasks_per_node,
            work_dir=req.work_dir,
        )
        launch = StepLaunch(
            credential="",
            job_id=row.id,
            step_id=step_id,
            restarts=row.restarts,
            node=name,
            node_index=i,
            uid=row.uid,
            gid=row.gid,
            user=row.user,
            argv=list(req.argv),
            work_dir=req.work_dir,
            environment=env,
            tasks=list(plan.tasks[i]),
            ntasks=plan.ntasks,
            num_nodes=len(plan.nodes),
            cpus_per_task=req.cpus_per_task,
            gpus=list(plan.gpus[i]),
            gpus_per_task=req.gpus_per_task,
            master_addr=master,
            master_port=port,
            label=req.label,
            unbuffered=req.unbuffered,
            stdin_task=req.stdin_task,
            std_out=req.std_out,
            std_err=req.std_err,
            std_in=req.std_in,
            pty=req.pty,
            kill_on_bad_exit=req.kill_on_bad_exit,
            mem_mib=req.mem_per_node or 0,
            kill_wait=cfg.kill_wait,
            time_limit_s=max(0, min(limits)) if limits else None,
        )
        out.launches.append(signer.step(launch, now, plan.nodes))
        addr = node.addr if node is not None else name
        out.nodes.append(StepNode(name, addr, node.port if node else 0, list(plan.tasks[i])))
    return out


def _given_distribution(text: str) -> str | None:
    """``-m`` as srun gave it, for ``SLURM_DISTRIBUTION``; ``""`` and the wire's default
    ``"block"`` count as not given (Slurm's default is shown where it shows one)."""
    return None if text in ("", "block") else text
