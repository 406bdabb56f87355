"""Turning a started job into a signed launch order for its batch host.

The controller knows everything the batch shell's environment needs (the
allocation, the node, the cluster), so it builds the final environment here
(``slurmlite.jobenv``), expands the output patterns (``slurmlite.filepattern``)
and signs the whole order with a credential only the batch host can check
(``controller.nodes.agent_client.Signer``).  The agent only
adds what exists once the process does (``SLURM_TASK_PID``).  The node's
GPUs, as the plan chose them, travel typed (``LaunchSpec.gpus``): an agent
whose node owns a subset of a machine's GPUs renumbers the environment's
GPU variables from that list, never by parsing them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from controller.store.models import JobRow, NodeRow
from controller.store.rows import job_info
from slurmlite.filepattern import default_output, expand_pattern, resolve_output
from slurmlite.gresconf import gpu_env_style_for
from slurmlite.jobenv import ArraySpan, batch_environment
from slurmlite.protocol import LaunchSpec

if TYPE_CHECKING:
    from controller.nodes.agent_client import Signer
    from slurmlite.config import Config


def output_paths(row: JobRow, node: str) -> tuple[str, str, str]:
    """Absolute stdout, stderr and stdin paths for the batch step."""

    def expand(pattern: str) -> str:
        text = expand_pattern(
            pattern,
            job_id=row.id,
            array_job_id=row.array_job_id,
            array_task_id=row.array_task_id,
            step="batch",
            job_name=row.name,
            user=row.user,
            node=node,
            node_index=0,
            task=0,
            restarts=row.restarts,
        )
        return resolve_output(text, row.work_dir)

    out = expand(row.std_out or default_output(row.array_job_id is not None))
    err = expand(row.std_err) if row.std_err else out
    stdin = expand(row.std_in) if row.std_in else "/dev/null"
    return out, err, stdin


def build_launch(
    cfg: Config, signer: Signer, row: JobRow, nodes: dict[str, NodeRow], now: float
) -> LaunchSpec:
    """The signed batch launch of ``row`` for its batch host (``nodes``: its nodes' rows)."""
    node = row.batch_host or ""
    info = job_info(row)
    first = nodes.get(info.nodes[0]) if info.nodes else None
    env = batch_environment(
        info,
        node,
        base_env=json.loads(row.environment or "{}"),
        submit_host=row.submit_host,
        ntasks_given=row.ntasks is not None or row.ntasks_per_node is not None,
        node_gpu_count=nodes[node].gpus if node in nodes else 0,
        echo_env=json.loads(row.echo_env or "{}"),
        cluster_name=cfg.cluster_name,
        conf_path=cfg.path,
        gpu_env_style=gpu_env_style_for(cfg, node),
        controller_host=cfg.control_addr or cfg.control_host,
        controller_port=cfg.slurmctld_port,
        master_addr=first.addr if first else node,
        array=_array_span(row.array_info),
    )
    out, err, stdin = output_paths(row, node)
    here = next((a for a in info.alloc if a.node == node), None)  # what the plan gave this node
    spec = LaunchSpec(
        credential="",
        job_id=row.id,
        restarts=row.restarts,
        step_id="batch",
        name=row.name,
        uid=row.uid,
        gid=row.gid,
        user=row.user,
        script=row.script,
        work_dir=row.work_dir,
        environment=env,
        std_out=out,
        std_err=err,
        std_in=stdin,
        open_mode=row.open_mode,
        gpus=list(here.gpus) if here is not None else [],
        kill_wait=cfg.kill_wait,
        time_limit_s=row.time_limit * 60 if row.time_limit is not None else None,
        mem_mib=here.mem if here is not None else 0,
        script_args=json.loads(row.script_args) if row.script_args else [],
    )
    return signer.launch(spec, node, now, nodes=info.nodes)


def _array_span(info: str | None) -> ArraySpan | None:
    """``count,min,max,step`` as stored on each row of an array (``ArraySpec.info``)."""
    if not info:
        return None
    count, low, high, step = (int(x) for x in info.split(","))
    return ArraySpan(count=count, min=low, max=high, step=step)
