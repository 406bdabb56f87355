"""What multifactor priority reads outside the job: cluster facts, QOS, associations.

``slurmlite.scheduler.multifactor`` is pure: every number it normalises by
arrives as a parameter.  This module gathers those numbers from the
configuration, the node rows and the accounting tables, and says what a
stored job (an ORM row, a result row or a dict of column values) asks for
and holds (its TRES).  It also writes a breakdown, ``JobPriority.as_dict()``
through ``json``, as the ``jobs.prio_factors`` text that sprio and
``slurmlite explain`` read::

    {"norm": {"age": 0.5, "assoc": 0.0, "fairshare": 0.4, "jobsize": 0.25,
              "partition": 1.0, "qos": 0.0, "tres": {"cpu": 0.25}, "site": 0, "nice": 0},
     "weighted": {... the same keys, each times its weight ...},
     "direct": false}

Cluster facts (spec §2.2): N = every node of the cluster, C = their CPUs;
a partition's TRES totals add up its nodes (``cpu``, ``mem`` in MiB,
``node``, ``gres/gpu`` and ``gres/gpu:<type>``).  E.g. two nodes of 2 CPUs,
4000 MiB and 2 GPUs each in partition ``debug``: N = 2, C = 4 and
``{"cpu": 4, "mem": 8000, "node": 2, "gres/gpu": 4}``.

A job's TRES: what it holds once it runs (its allocation), else what it
asks for: ``num_cpus`` CPUs on ``nodes_min`` nodes, its GPUs
(``gpus_total``, else ``gpus_per_node`` on each node) and its memory
(per node, per CPU or per GPU; none given counts 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.store.models import AssocRow, QosRow
from slurmlite.config import Config
from slurmlite.scheduler.billing import job_tres, parse_tres_weights
from slurmlite.scheduler.multifactor import ClusterFacts, JobPriority, PartitionFacts

#: compact JSON, exactly ``json.dumps(x, separators=(",", ":"))`` (a breakdown holds no cycles)
compact_json = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode


@dataclass(frozen=True)
class PolicyFacts:
    """Everything outside the job that its priority and its usage charge depend on."""

    cluster: ClusterFacts
    partitions: Mapping[str, PartitionFacts]
    billing: Mapping[str, Mapping[str, float]]  # partition -> TRESBillingWeights
    qos_priority: Mapping[str, int]
    qos_usage_factor: Mapping[str, float]
    assoc_priority: Mapping[tuple[str, str], int]  # (account, user) -> Priority

    def partition(self, name: str) -> PartitionFacts:
        """The partition's facts (a partition removed by a reconfigure: factor 0)."""
        return self.partitions.get(name) or PartitionFacts(name=name, job_factor=0)


@dataclass(frozen=True)
class Accounting:
    """The accounting tables' share of the facts (read once per recalculation)."""

    qos_priority: Mapping[str, int]
    qos_usage_factor: Mapping[str, float]
    assoc_priority: Mapping[tuple[str, str], int]


def load_accounting(session: Session) -> Accounting:
    """QOS priorities and usage factors, association priorities (a user's own, else its
    account's)."""
    qos_p: dict[str, int] = {}
    qos_u: dict[str, float] = {}
    for name, prio, factor in session.execute(
        select(QosRow.name, QosRow.priority, QosRow.usage_factor)
    ):
        qos_p[name], qos_u[name] = int(prio or 0), float(1.0 if factor is None else factor)
    assoc: dict[tuple[str, str], int] = {}
    accounts: dict[str, int] = {}
    for acct, user, prio in session.execute(
        select(AssocRow.account, AssocRow.user, AssocRow.priority)
    ):
        if user:
            assoc[acct, user] = int(prio or 0)
        else:
            accounts[acct] = int(prio or 0)
    for (acct, user), prio in list(assoc.items()):
        if not prio and accounts.get(acct):
            assoc[acct, user] = accounts[acct]
    for acct, prio in accounts.items():
        assoc.setdefault((acct, ""), prio)
    return Accounting(qos_p, qos_u, assoc)


def build_facts(cfg: Config, nodes: Sequence[Any], acct: Accounting) -> PolicyFacts:
    """Cluster and partition facts from the configuration and the node rows."""
    by_name = {n.name: n for n in nodes}
    partitions: dict[str, PartitionFacts] = {}
    billing: dict[str, Mapping[str, float]] = {}
    for p in cfg.partitions:
        totals: dict[str, float] = {"cpu": 0, "mem": 0, "node": 0}
        for name in p.nodes:
            n = by_name.get(name)
            if n is None:
                continue
            totals["cpu"] += n.cpus
            totals["mem"] += n.real_memory
            totals["node"] += 1
            if n.gpus:
                totals["gres/gpu"] = totals.get("gres/gpu", 0) + n.gpus
                if n.gpu_type:
                    typed = f"gres/gpu:{n.gpu_type.lower()}"
                    totals[typed] = totals.get(typed, 0) + n.gpus
        partitions[p.name] = PartitionFacts(
            name=p.name, job_factor=p.priority_job_factor, tres_total=totals, max_time=p.max_time
        )
        billing[p.name] = parse_tres_weights(p.tres_billing_weights)
    cluster = ClusterFacts(
        nodes=len(nodes),
        cpus=sum(n.cpus for n in nodes),
        max_job_factor=max((p.priority_job_factor for p in cfg.partitions), default=1),
        max_qos_priority=max(acct.qos_priority.values(), default=0),
        max_assoc_priority=max(acct.assoc_priority.values(), default=0),
    )
    return PolicyFacts(
        cluster, partitions, billing, acct.qos_priority, acct.qos_usage_factor, acct.assoc_priority
    )


def request_tres(job: Any) -> dict[str, float]:
    """The TRES a pending job asks for (attributes of a job row; see module doc)."""
    nodes = job.nodes_min or 1
    cpus = job.num_cpus or 1
    gpus = job.gpus_total or (job.gpus_per_node or 0) * nodes
    if job.mem_per_node:
        mem = job.mem_per_node * nodes
    elif job.mem_per_cpu:
        mem = job.mem_per_cpu * cpus
    elif job.mem_per_gpu:
        mem = job.mem_per_gpu * gpus
    else:
        mem = 0
    return job_tres(cpus=cpus, mem=mem, nodes=nodes, gpus=gpus, gpu_type=job.gpu_type)


def held_tres(alloc_json: str | None, fallback: Any) -> dict[str, float]:
    """The TRES a started job holds (its ``alloc`` JSON), else what it asked for."""
    allocs = json.loads(alloc_json) if alloc_json else []
    if not allocs:
        return request_tres(fallback)
    return job_tres(
        cpus=sum(a.get("cpus", 0) for a in allocs),
        mem=sum(a.get("mem", 0) for a in allocs),
        nodes=len(allocs),
        gpus=sum(len(a.get("gpus", ())) for a in allocs),
        gpu_type=fallback.gpu_type,
    )


def encode(p: JobPriority) -> str:
    """The ``jobs.prio_factors`` text of a breakdown: ``p.as_dict()`` as compact JSON."""
    return compact_json(p.as_dict())
