"""QOS limits: which pending job must wait because its user holds enough already.

A QOS ("quality of service", spec §1.4, §5.7) carries limits an administrator
sets with ``sacctmgr``; slurmlite enforces these (the scheduler side is here,
the submit side in ``controller/accounting/qos_limits.py``):

* ``MaxJobsPerUser`` (``max_jobs_pu``) — running jobs of one user in the QOS;
* ``MaxTRESPerUser`` (``max_tres_pu``) — CPUs, memory, nodes, GPUs one user's
  running jobs in the QOS hold together;
* ``MaxTRESPerJob`` (``max_tres_pj``) — what one job may hold;
* ``MaxWall`` (``max_wall``) — the longest time limit a job may have;
* ``MaxSubmitJobsPerUser`` (``max_submit_pu``) — checked at submit only.

A job held back by a limit keeps waiting with the reason Slurm gives it and
blocks nobody: lower jobs of its partition may still start.

========================= ============= =================================
limit                     TRES          reason
========================= ============= =================================
MaxJobsPerUser                          ``QOSMaxJobsPerUserLimit``
MaxWall                                 ``QOSMaxWallDurationPerJobLimit``
MaxTRESPerJob             cpu           ``QOSMaxCpuPerJobLimit``
MaxTRESPerJob             mem           ``QOSMaxMemoryPerJob``
MaxTRESPerJob             node          ``QOSMaxNodePerJobLimit``
MaxTRESPerJob             gres/...      ``QOSMaxGRESPerJob``
MaxTRESPerUser            cpu           ``QOSMaxCpuPerUserLimit``
MaxTRESPerUser            mem           ``QOSMaxMemoryPerUser``
MaxTRESPerUser            node          ``QOSMaxNodePerUserLimit``
MaxTRESPerUser            gres/...      ``QOSMaxGRESPerUser``
========================= ============= =================================

Checked in that order; the first limit a job breaks is its reason.

**Two QOS.**  A partition may name a QOS (slurm.conf ``QOS=``); its limits
apply to every job of the partition together with the job's own QOS.  As in
Slurm, for each limit the partition's QOS is asked first and the job's QOS
fills in only the limits the partition's QOS leaves unset; a job QOS with
the flag ``OverPartQOS`` is asked first instead.  A running job counts in
both QOS (its own and its partition's), so a per-user limit of the
partition QOS covers all of a user's jobs in that partition.

**Usage.**  :class:`LimitTracker` counts, per (QOS, user), the running jobs
and their CPUs, memory (MiB), nodes and GPUs (``gres/gpu``, and
``gres/gpu:<type>`` by the type of the nodes holding them) from the
snapshot's running jobs; ``charge`` adds a job the pass has just started,
so a later job of the same pass sees it.  A pending job's own size is its
request (tasks x CPUs per task, the fewest nodes it can use, ``--gpus`` or
GPUs per node x nodes, its memory request); memory it did not ask for
(whole node) is known only once placed: pass the ``Start`` to ``reason``
to check the placement itself.

Worked example — "at most 4 GPUs per student"::

    sacctmgr modify qos normal set MaxTRESPerUser=gres/gpu=4

alice runs one job with 3 GPUs.  Her next job asks ``--gres=gpu:2``:
3 + 2 = 5 > 4, so it waits with ``QOSMaxGRESPerUser`` while bob's 2-GPU job
behind it starts.  When her first job ends, 0 + 2 <= 4 and it starts.

Enforcement: limits are on by default (slurmlite's choice); a slurm.conf
that sets ``AccountingStorageEnforce`` without ``limits``, ``safe`` or
``all`` turns them off, as in Slurm (``LimitTracker(..., enforce=False)``
never names a reason).

Reference: ``S:src/slurmctld/acct_policy.c`` (limit checks, QOS order),
``S:src/common/job_state_reason.c`` (names), ``S:doc/html/resource_limits.shtml``
— behaviour only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from slurmlite import reasons
from slurmlite.scheduler.billing import TresWeightError, tres_name, tres_sort_key
from slurmlite.scheduler.shape import min_nodes
from slurmlite.scheduler.snapshot import PartitionView, PendingJob, RunningJob, Start

MAX_JOBS_PER_USER = reasons.QOS_MAX_JOBS_PER_USER
MAX_WALL_PER_JOB = reasons.QOS_MAX_WALL_PER_JOB
MAX_SUBMIT_PER_USER = reasons.QOS_MAX_SUBMIT_PER_USER
# reason per TRES kind ("gres" = any gres/...), per job and per user
PER_JOB_REASONS = {
    "cpu": reasons.QOS_MAX_CPU_PER_JOB,
    "mem": reasons.QOS_MAX_MEMORY_PER_JOB,
    "node": reasons.QOS_MAX_NODE_PER_JOB,
    "gres": reasons.QOS_MAX_GRES_PER_JOB,
}
PER_USER_REASONS = {
    "cpu": reasons.QOS_MAX_CPU_PER_USER,
    "mem": reasons.QOS_MAX_MEMORY_PER_USER,
    "node": reasons.QOS_MAX_NODE_PER_USER,
    "gres": reasons.QOS_MAX_GRES_PER_USER,
}
_MIB_UNITS = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}
_LIMIT_ITEM = re.compile(r"\s*([A-Za-z][\w/:.-]*)\s*=\s*(-?\d+)\s*([A-Za-z]?)\s*")


class TresLimitError(ValueError):
    """A TRES limit string that cannot be read (sacctmgr refuses it)."""


@dataclass(frozen=True)
class QosLimits:
    """One QOS as the scheduler sees it; ``None`` / a missing TRES = no limit."""

    name: str
    priority: int = 0
    usage_factor: float = 1.0
    max_wall: int | None = None  # minutes
    max_jobs_pu: int | None = None
    max_submit_pu: int | None = None
    max_tres_pu: Mapping[str, int] = field(default_factory=dict)  # "cpu" / "gres/gpu" -> n
    max_tres_pj: Mapping[str, int] = field(default_factory=dict)
    flags: frozenset[str] = frozenset()

    def has_flag(self, flag: str) -> bool:
        """``DenyOnLimit``, ``OverPartQOS``, ... compared without regard to case."""
        return any(f.lower() == flag.lower() for f in self.flags)

    @property
    def has_limits(self) -> bool:
        return (
            self.max_wall is not None
            or self.max_jobs_pu is not None
            or bool(self.max_tres_pu)
            or bool(self.max_tres_pj)
        )


def parse_tres_limits(text: str | None) -> dict[str, int]:
    """``"cpu=8,mem=16G,gres/gpu=4"`` -> ``{"cpu": 8, "mem": 16384, "gres/gpu": 4}``.

    Names are case-insensitive (lower-cased as ``billing.tres_name`` does);
    memory is MiB, with an optional unit K, M, G, T or P (``mem=1T`` is
    1048576); ``-1`` clears a limit, so it is left out.  Empty -> ``{}``.
    Raises :class:`TresLimitError` on anything else.
    """
    limits: dict[str, int] = {}
    for item in (text or "").strip().strip('"').split(","):
        if not item.strip():
            continue
        m = _LIMIT_ITEM.fullmatch(item)
        if m is None:
            raise TresLimitError(f"invalid TRES limit '{item.strip()}'")
        try:
            name = tres_name(m.group(1))
        except TresWeightError:
            raise TresLimitError(f"unknown TRES '{m.group(1)}'") from None
        value, unit = int(m.group(2)), m.group(3).upper()
        if value < 0:
            if value != -1 or unit:
                raise TresLimitError(f"invalid TRES limit '{item.strip()}'")
            continue
        if unit and (name != "mem" or unit not in _MIB_UNITS):
            raise TresLimitError(f"invalid unit in TRES limit '{item.strip()}'")
        limits[name] = -(-value // 1024) if unit == "K" else value * int(_MIB_UNITS[unit])
    return limits


def format_tres_limits(limits: Mapping[str, int]) -> str:
    """The inverse, as sacctmgr shows it: ``{"mem": 16384, "cpu": 8}`` -> ``cpu=8,mem=16G``."""
    items = []
    for name in sorted(limits, key=tres_sort_key):
        value = limits[name]
        if name == "mem":
            unit = "M"
            for bigger in ("G", "T"):
                if value and value % 1024 == 0:
                    value, unit = value // 1024, bigger
            items.append(f"mem={value}{unit}")
        else:
            items.append(f"{name}={value}")
    return ",".join(items)


def _kind(tres: str) -> str:
    return "gres" if tres.startswith("gres/") else tres


def job_demand(
    job: PendingJob, start: Start | None = None, gpu_types: Mapping[str, str | None] | None = None
) -> dict[str, int]:
    """What ``job`` holds once running, in TRES: from ``start`` if given, else its request.

    E.g. ``-n 4 -c 2 --mem-per-cpu=1000 --gres=gpu:1`` on one node ->
    ``{"cpu": 8, "mem": 8000, "node": 1, "gres/gpu": 1}``.
    """
    if start is not None:
        demand = {
            "cpu": start.cpus,
            "mem": sum(a.mem for a in start.allocs),
            "node": len(start.allocs),
        }
        _add_gpus(demand, [(a.node, len(a.gpus)) for a in start.allocs], gpu_types, job.gpu_type)
        return demand
    nodes = min_nodes(job)
    cpt = max(1, job.cpus_per_task)
    tasks = job.ntasks if job.ntasks is not None else nodes * (job.ntasks_per_node or 1)
    cpus = max(1, tasks) * cpt
    gpus = job.gpus_total or job.gpus_per_node * nodes
    if job.mem_per_node:
        mem = job.mem_per_node * nodes
    elif job.mem_per_cpu is not None:
        mem = job.mem_per_cpu * cpus
    elif job.mem_per_gpu is not None:
        mem = job.mem_per_gpu * gpus
    else:
        mem = 0  # whole node or a default: known once placed
    demand = {"cpu": cpus, "mem": mem, "node": nodes}
    if gpus:
        demand["gres/gpu"] = gpus
        if job.gpu_type:
            demand[f"gres/gpu:{job.gpu_type.lower()}"] = gpus
    return demand


def _add_gpus(
    demand: dict[str, int],
    per_node: Iterable[tuple[str, int]],
    gpu_types: Mapping[str, str | None] | None,
    asked_type: str | None = None,
) -> None:
    for node, count in per_node:
        if not count:
            continue
        demand["gres/gpu"] = demand.get("gres/gpu", 0) + count
        kind = (gpu_types or {}).get(node) or asked_type
        if kind:
            key = f"gres/gpu:{kind.lower()}"
            demand[key] = demand.get(key, 0) + count


@dataclass
class _Use:
    jobs: int = 0
    tres: dict[str, int] = field(default_factory=dict)

    def add(self, demand: Mapping[str, int]) -> None:
        self.jobs += 1
        for name, count in demand.items():
            self.tres[name] = self.tres.get(name, 0) + count


@dataclass(frozen=True)
class _Rules:
    """The limits one (QOS, partition) pair is under, in the order they are checked."""

    max_jobs: tuple[str, int] | None = None  # (QOS that counts, limit)
    max_wall: int | None = None
    per_job: tuple[tuple[str, int, str], ...] = ()  # (TRES, limit, reason)
    per_user: tuple[tuple[str, str, int, str], ...] = ()  # (TRES, QOS that counts, limit, reason)

    @classmethod
    def of(cls, chain: list[QosLimits]) -> _Rules:
        """For each limit, the first QOS of ``chain`` that sets it."""
        jobs = next((q for q in chain if q.max_jobs_pu is not None), None)
        wall = next((q.max_wall for q in chain if q.max_wall is not None), None)
        per_job: dict[str, tuple[str, int, str]] = {}
        per_user: dict[str, tuple[str, str, int, str]] = {}
        for q in reversed(chain):  # earlier QOS overwrite later ones
            per_job.update(
                {n: (n, cap, _reason(n, PER_JOB_REASONS)) for n, cap in q.max_tres_pj.items()}
            )
            per_user.update(
                {
                    n: (n, q.name, cap, _reason(n, PER_USER_REASONS))
                    for n, cap in q.max_tres_pu.items()
                }
            )
        if jobs is None and wall is None and not per_job and not per_user:
            return _NO_RULES
        return cls(
            max_jobs=(jobs.name, jobs.max_jobs_pu or 0) if jobs is not None else None,
            max_wall=wall,
            per_job=tuple(per_job[n] for n in sorted(per_job, key=tres_sort_key)),
            per_user=tuple(per_user[n] for n in sorted(per_user, key=tres_sort_key)),
        )


_NO_RULES = _Rules()


def _reason(tres: str, reasons: Mapping[str, str]) -> str:
    """The reason for a TRES limit: by kind (cpu, mem, node), any gres/... as GRES."""
    return reasons.get(_kind(tres), reasons["gres"])


class LimitTracker:
    """Per (QOS, user) use of the running jobs, and the limit a pending job would break."""

    def __init__(
        self,
        qos: Mapping[str, object],
        running: Iterable[RunningJob],
        enforce: bool = True,
        *,
        partitions: Iterable[PartitionView] = (),
        gpu_types: Mapping[str, str | None] | None = None,
        now: float | None = None,
    ) -> None:
        self.qos: dict[str, QosLimits] = {
            name: q for name, q in qos.items() if isinstance(q, QosLimits)
        }
        self.enforce = enforce
        self.part_qos: dict[str, str] = {p.name: p.qos for p in partitions if p.qos}
        self.gpu_types = dict(gpu_types or {})
        self.used: dict[tuple[str, str], _Use] = {}
        self._rules: dict[tuple[str, str], _Rules] = {}
        if not self.enforce or not any(q.has_limits for q in self.qos.values()):
            self.enforce = False  # nothing to count: every question answers None at once
            return
        for r in running:
            if now is not None and r.end_time is not None and r.end_time <= now:
                continue  # ended, only completing: Slurm frees its limits at the end
            demand = {"cpu": r.cpus, "mem": sum(a.mem for a in r.allocs), "node": len(r.allocs)}
            _add_gpus(demand, [(a.node, len(a.gpus)) for a in r.allocs], self.gpu_types)
            for name in self._names(r.qos, r.partition):
                self.used.setdefault((name, r.user), _Use()).add(demand)

    @classmethod
    def for_snapshot(cls, snapshot: object, policy: object) -> LimitTracker:
        """The tracker of a pass: ``snapshot.qos``/``running``/``partitions``, node GPU
        types, ``now`` (a running job whose end is past is only completing and counts
        no more), and ``policy.enforce_limits`` (True when the policy has no such field)."""
        qos = getattr(snapshot, "qos", {})
        enforce = bool(getattr(policy, "enforce_limits", True))
        if not enforce or not any(
            isinstance(q, QosLimits) and q.has_limits for q in qos.values()
        ):  # nothing will be counted (see __init__): skip reading the running jobs' nodes
            return cls(qos, (), enforce=False, partitions=getattr(snapshot, "partitions", ()))
        return cls(
            qos,
            getattr(snapshot, "running", ()),
            enforce=enforce,
            partitions=getattr(snapshot, "partitions", ()),
            gpu_types={n.name: n.gpu_type for n in getattr(snapshot, "nodes", ()) if n.gpus},
            now=getattr(snapshot, "now", None),
        )

    def _names(self, qos: str, partition: str) -> list[str]:
        """The QOS a job of ``qos`` in ``partition`` counts in (both, once each)."""
        names = [qos]
        pq = self.part_qos.get(partition)
        if pq and pq != qos:
            names.append(pq)
        return names

    def chain(self, job: PendingJob) -> list[QosLimits]:
        """The QOS whose limits apply to ``job``, the one asked first first."""
        own = self.qos.get(job.qos)
        pq_name = self.part_qos.get(job.partition)
        part = self.qos.get(pq_name) if pq_name and pq_name != job.qos else None
        if part is None:
            return [own] if own is not None else []
        if own is None:
            return [part]
        return [own, part] if own.has_flag("OverPartQOS") else [part, own]

    def usage(self, qos: str, user: str) -> tuple[int, dict[str, int]]:
        """(running jobs, TRES held) of ``user`` in ``qos``, this pass's starts included."""
        use = self.used.get((qos, user))
        return (use.jobs, dict(use.tres)) if use else (0, {})

    def rules(self, job: PendingJob) -> _Rules:
        """The limits that apply to ``job``, each from the QOS that sets it first (cached
        per (QOS, partition): a pass asks this of every pending job)."""
        key = (job.qos, job.partition)
        found = self._rules.get(key)
        if found is None:
            found = self._rules[key] = _Rules.of(self.chain(job))
        return found

    def reason(self, job: PendingJob, start: Start | None = None) -> str | None:
        """The QOS reason ``job`` must wait for, or None if no limit holds it back."""
        if not self.enforce:
            return None
        rules = self.rules(job)
        if rules is _NO_RULES:
            return None
        used = self.used
        if rules.max_jobs is not None:
            qos, cap = rules.max_jobs
            use = used.get((qos, job.user))
            if (use.jobs if use else 0) + 1 > cap:
                return MAX_JOBS_PER_USER
        if rules.max_wall is not None and (
            job.time_limit is None or job.time_limit > rules.max_wall
        ):
            return MAX_WALL_PER_JOB
        if not rules.per_job and not rules.per_user:
            return None
        demand = job_demand(job, start, self.gpu_types)
        for name, cap, why in rules.per_job:
            if demand.get(name, 0) > cap:
                return why
        for name, qos, cap, why in rules.per_user:
            use = used.get((qos, job.user))
            if (use.tres.get(name, 0) if use else 0) + demand.get(name, 0) > cap:
                return why
        return None

    def charge(self, job: PendingJob, start: Start) -> None:
        """Count ``job``, just started on ``start``, for the rest of the pass."""
        if not self.enforce:
            return
        demand = job_demand(job, start, self.gpu_types)
        for name in self._names(job.qos, job.partition):
            self.used.setdefault((name, job.user), _Use()).add(demand)
