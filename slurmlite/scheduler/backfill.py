"""Backfill: start lower jobs early when that delays no one above them.

``backfill_pass(snapshot, policy) -> Plan`` is ``SchedulerType=sched/backfill``
(the default).  It runs the main pass (``passes.run_main_pass``) and then
walks the jobs still pending, in queue order, over a map of the future
(``timeline.Timeline``) built from the running jobs' time limits:

1. Every job the main pass started is entered in the map for its time limit.
2. For each runnable pending job (no hold, begin time, dependency, partition
   or QOS limit reason; at most ``bf_max_job_test`` of them, and at most
   ``bf_max_job_user`` per user) find the earliest time ``t >= now`` at which
   it fits, on its partition's nodes, for its whole time limit, given what
   running jobs hold and what earlier jobs of this walk have reserved.
3. ``t == now``: the job starts now.  It can only have fitted into resources
   no earlier reservation needs, so it delays nobody: that is the backfill.
4. ``t > now``: the job waits with its main-pass reason (Resources or
   Priority); the plan records ``t`` and the nodes it was planned on
   (``estimates``, ``planned_nodes``: ``squeue --start``).  If ``t`` is within
   ``bf_window`` the job *reserves* those resources over
   ``[t, t + time limit)``, so later (lower) jobs cannot take them.  With
   ``bf_job_part_count_reserve=N`` only the first N such jobs of a partition
   reserve (N=1 is EASY backfill; 0, the default, is conservative).

Invariant: a job started by backfill never takes a CPU, MiB or GPU that a
reservation of a higher job holds at any moment of its time limit, so no
promised start moves later.

**Deviation from Slurm (documented):** Slurm reserves whole nodes.  slurmlite
reserves exactly the CPUs, memory and GPUs the job was planned on, so a
4-GPU job can start now beside a higher job's 4-GPU reservation on the same
8-GPU node.  ``SchedulerParameters=bf_whole_node_reserve=yes`` reserves whole
nodes, as Slurm does.

Worked example (``now`` = 0, one node of 8 GPUs; A holds 6 GPUs until 1 h):
queue B (8 GPUs, 2 h) then C (2 GPUs, 1 h) and D (2 GPUs, 3 h).  B cannot
start: it reserves all 8 GPUs over [1 h, 3 h).  C fits the 2 free GPUs and
ends at 1 h: it starts now.  D would still hold them at 1 h: it waits, with
an estimate of 3 h, when B's reservation ends.

Cost: the map answers "earliest start" from per-share gap indexes
(``timeline.GapIndex``) instead of testing every node at every time; a job
that fits on one node is placed by reading the open nodes' free amounts
rather than building them all (``_best_single``, same choice as
``select.select_nodes``); what depends only on the request (shape, memory
rule, domain, gap index) is worked out once per distinct request
(``_Request``; its shape, memory rule and shares from pass to pass,
``backfill_shares.shares_of``); a spread job is not placed at a moment when
the open nodes together lack its tasks or GPUs (``backfill_shares.may_hold``).
When only "can it start now?" is asked (``bf_estimates=no`` past the
partition's reservations) no gap index is swept: the nodes open now are read from their profiles at
``now`` and at their reservations' starts (``Timeline.holds_from_now``),
the same nodes the sweep would find.  The map itself is only drawn once a
job is examined, and ``SchedulerParameters`` are read once per mapping
(``BackfillParams.from_policy``).  Measured on a 2-core
machine (``python -m bench.run --only schedpass``), 1,000 nodes x 8 GPUs,
2,000 running and 10,000 pending jobs: about 0.1 s for the pass with
``bf_max_job_test=500`` and about 1 s with every job examined.

Reference: spec §4.3-4.6; ``S:src/plugins/sched/backfill/backfill.c``
(``_attempt_backfill``), behaviour only.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass

from slurmlite.reasons import PRIORITY, REQ_NODE_NOT_AVAIL, RESOURCES
from slurmlite.scheduler.backfill_shares import Shares, duration_of, may_hold, shares_of
from slurmlite.scheduler.passes import limit_tracker, queue_order, run_main_pass
from slurmlite.scheduler.select import best_fit_key, eligible, place
from slurmlite.scheduler.shape import MemRule, Shape
from slurmlite.scheduler.snapshot import PendingJob, Plan, Policy, Snapshot, Start
from slurmlite.scheduler.timeline import Share, ShareFn, Timeline

#: Main-pass reasons of jobs backfill may still start (the others wait for their own cause).
BACKFILLABLE = frozenset({RESOURCES, PRIORITY, REQ_NODE_NOT_AVAIL})


def _int(params: Mapping[str, str], key: str, default: int, low: int, high: int) -> int:
    """An integer SchedulerParameters value clamped to Slurm's range; bad text -> default."""
    try:
        value = int(str(params[key]).strip())
    except (KeyError, ValueError):
        return default
    return min(high, max(low, value))


@dataclass(frozen=True)
class BackfillParams:
    """The ``SchedulerParameters`` backfill reads (spec §4.5), with Slurm's defaults."""

    bf_interval: int = 30  # seconds between full passes; -1 disables backfill
    bf_window: int = 1440  # minutes ahead that reservations are made
    bf_resolution: int = 60  # seconds: the map's time grain
    bf_max_job_test: int = 500  # jobs examined per pass
    bf_max_job_user: int = 0  # jobs examined per user per pass (0 = no limit)
    bf_max_job_start: int = 0  # jobs backfill may start per pass (0 = no limit)
    bf_job_part_count_reserve: int = 0  # reservations per partition (0 = every job)
    bf_continue: bool = False  # accepted; a pure pass never yields its locks
    bf_whole_node_reserve: bool = False  # slurmlite's key: Slurm-identical reservations
    # slurmlite's key: bf_estimates=no skips the expected start of a job that will reserve
    # nothing (only whether it starts now is asked); the trace replay needs starts only
    bf_estimates: bool = True

    @classmethod
    def from_policy(cls, policy: Policy) -> BackfillParams:
        """Read from ``policy.scheduler_parameters`` (the answer for one mapping is kept
        while the mapping stays equal to what was read: every pass asks it)."""
        p = policy.scheduler_parameters
        seen = _PARAMS_READ.get(id(p))
        if seen is not None and seen[0] is p and seen[1] == p and cls is BackfillParams:
            return seen[2]
        params = cls._read(p)
        if cls is BackfillParams:
            if len(_PARAMS_READ) >= 16:
                _PARAMS_READ.clear()
            _PARAMS_READ[id(p)] = (p, dict(p), params)
        return params

    @classmethod
    def _read(cls, p: Mapping[str, str]) -> BackfillParams:
        interval = _int(p, "bf_interval", cls.bf_interval, -1, 10800)
        whole = str(p.get("bf_whole_node_reserve", "no")).strip().lower()
        return cls(
            bf_interval=interval if interval != 0 else cls.bf_interval,
            bf_window=_int(p, "bf_window", cls.bf_window, 1, 43200),
            bf_resolution=_int(p, "bf_resolution", cls.bf_resolution, 1, 3600),
            bf_max_job_test=_int(p, "bf_max_job_test", cls.bf_max_job_test, 1, 1_000_000),
            bf_max_job_user=_int(p, "bf_max_job_user", 0, 0, 1_000_000),
            bf_max_job_start=_int(p, "bf_max_job_start", 0, 0, 10_000),
            bf_job_part_count_reserve=_int(p, "bf_job_part_count_reserve", 0, 0, 100_000),
            bf_continue="bf_continue" in p,
            bf_whole_node_reserve=whole in ("yes", "y", "1", "true", ""),
            bf_estimates=str(p.get("bf_estimates", "yes")).strip().lower() not in ("no", "0"),
        )


#: id(mapping) -> (the mapping, a copy of it, what it reads as): ``from_policy``'s memo
#: (the mapping itself is held, so its id names no other object while it is here)
_PARAMS_READ: dict[int, tuple[Mapping[str, str], dict[str, str], BackfillParams]] = {}


def backfill_pass(snapshot: Snapshot, policy: Policy) -> Plan:
    """The main pass, then the backfill walk over what is still pending (see module doc)."""
    params = BackfillParams.from_policy(policy)
    tracker = limit_tracker(snapshot, policy)
    order = queue_order(snapshot)
    plan = run_main_pass(snapshot, policy, tracker, order)
    if params.bf_interval < 0:
        return plan
    walk = _Walk(snapshot, policy, params, plan)
    started = set(plan.started_ids)
    reasons, now, per_user = plan.reasons, snapshot.now, walk.per_user
    max_test, max_user, max_start = (
        params.bf_max_job_test,
        params.bf_max_job_user,
        params.bf_max_job_start,
    )
    for job in order:
        if walk.tested >= max_test:
            break
        job_id = job.job_id
        if job_id in started or reasons.get(job_id) not in BACKFILLABLE:
            continue
        if max_user and per_user.get(job.user, 0) >= max_user:
            continue
        reason = tracker.reason(job)
        if reason is not None:
            reasons[job_id] = reason
            continue
        walk.tested += 1
        per_user[job.user] = per_user.get(job.user, 0) + 1
        fit = walk.earliest(job, None if walk.may_reserve(job) else now)
        if fit is None:
            continue
        when, placement = fit
        if when <= now:
            if max_start and walk.started >= max_start:
                break  # Slurm ends the cycle here
            reason = tracker.reason(job, placement)
            if reason is not None:  # the placement itself breaks a limit (whole-node memory)
                reasons[job_id] = reason
                continue
            walk.start(job, placement)
            tracker.charge(job, placement)
        else:
            walk.plan_later(job, when, placement)
    return plan


#: ``shares_of`` by (``_Walk._request``'s key, DefMemPerCPU, DefMemPerGPU): the answer
#: reads nothing else, so it is kept from pass to pass (cleared when it grows large)
_SHARES: dict[tuple[object, ...], Shares] = {}


@dataclass(frozen=True)
class _Request:
    """A request's part of ``_Walk.earliest``: the same for every job asking it."""

    shape: Shape
    rule: MemRule
    needs: Mapping[int, Share]  # per domain node that can ever give it: the per-node share
    index_key: object  # names the gap index of the domain for that share (``index_for``)
    domain: list[int]
    share: ShareFn
    whole_needs: Mapping[int, Share]  # per node: what holding the whole job takes
    lightest: int  # the domain's lowest Weight
    count: int  # nodes needed at least
    spread: bool  # tasks or --gpus may spread unevenly over nodes
    wanted: bool  # -w nodes


class _Walk:
    """The state of one backfill walk: the map, counters, and the plan it writes."""

    def __init__(self, snapshot: Snapshot, policy: Policy, params: BackfillParams, plan: Plan):
        self.snapshot = snapshot
        self.now = snapshot.now
        self.policy = policy
        self.params = params
        self.plan = plan
        self.horizon = snapshot.now + params.bf_window * 60.0
        self.domains: dict[object, list[int]] = {}
        self.requests: dict[tuple[object, ...], _Request | None] = {}
        self.needs: dict[object, dict[int, Share]] = {}
        self.lightest: dict[int, int] = {}  # id(domain) -> its lowest node Weight
        self.tested = 0
        self.started = 0
        self.per_user: dict[str, int] = {}
        self.reserved_in: dict[str, int] = {}
        self.durations: dict[float | None, float] = {}  # time limit -> ``duration_of``
        # The map is drawn when the first job is examined (``_draw``): a pass whose
        # main pass left nothing to examine never needs it.
        self.main_starts = tuple(plan.starts)
        self.drawn = False

    def _draw(self) -> None:
        """Build the map: the running jobs, then the main pass's starts from now on."""
        snapshot, params = self.snapshot, self.params
        self.timeline = Timeline(
            snapshot.nodes, snapshot.running, snapshot.now, params.bf_resolution
        )
        ids = self.timeline.ids
        self.members = {p.name: [ids[n] for n in p.nodes if n in ids] for p in snapshot.partitions}
        jobs = {j.job_id: j for j in snapshot.pending}
        for start in self.main_starts:  # they hold their resources from now on
            job = jobs[start.job_id]
            self._hold(start, self.now, self._duration(job))
        self.drawn = True

    def _duration(self, job: PendingJob) -> float:
        """``duration_of(job)`` at this walk's resolution (once per distinct time limit)."""
        limit = job.time_limit
        duration = self.durations.get(limit)
        if duration is None:
            duration = self.durations[limit] = duration_of(job, self.params.bf_resolution)
        return duration

    def _hold(self, start: Start, when: float, duration: float, whole: bool = False) -> None:
        self.timeline.reserve(start.allocs, when, when + duration, whole_node=whole)

    def _domain(self, job: PendingJob) -> list[int]:
        """Ids of the usable nodes of the job's partition it could ever run on."""
        key = (job.partition, job.features, job.gpu_type, job.wants_gpus, job.exc_nodes)
        domain = self.domains.get(key)
        if domain is None:
            nodes = self.timeline.nodes
            domain = [
                i
                for i in self.members.get(job.partition, ())
                if nodes[i].usable and eligible(job, nodes[i])
            ]
            self.domains[key] = domain
            self.lightest[id(domain)] = min((nodes[i].weight for i in domain), default=0)
        return domain

    def _request(self, job: PendingJob) -> _Request | None:
        """What ``earliest`` works out from the job's request alone, once per distinct
        request of the pass (most jobs ask for one of a few shapes); None: no estimate."""
        key = (
            job.partition,
            job.features,
            job.gpu_type,
            job.exc_nodes,
            job.req_nodes,
            job.nodes_min,
            job.nodes_max,
            job.ntasks,
            job.ntasks_per_node,
            job.cpus_per_task,
            job.mem_per_node,
            job.mem_per_cpu,
            job.mem_per_gpu,
            job.gpus_per_node,
            job.gpus_total,
            job.exclusive,
        )
        if key in self.requests:
            return self.requests[key]
        request = self.requests[key] = self._make_request(job, key)
        return request

    def _make_request(self, job: PendingJob, key: tuple[object, ...]) -> _Request | None:
        policy = self.policy
        shaped = _SHARES.get((key, policy.def_mem_per_cpu, policy.def_mem_per_gpu))
        if shaped is None:
            shaped = shares_of(job, policy)
            if len(_SHARES) >= 4096:
                _SHARES.clear()
            _SHARES[(key, policy.def_mem_per_cpu, policy.def_mem_per_gpu)] = shaped
        shape, rule, (share_key, share), whole = shaped
        domain = self._domain(job)
        ids = self.timeline.ids
        wanted = tuple(dict.fromkeys(job.req_nodes))
        if any(ids.get(name) not in domain for name in wanted):
            return None  # a -w node is down, drained or not eligible: no estimate
        if not domain:
            return None
        static = (job.partition, job.features, job.gpu_type, job.exc_nodes)
        needs = self._needs((static, share_key), domain, share)
        whole_needs: Mapping[int, Share] = needs
        if whole is not None:  # may fit on one node after all
            whole_needs = self._needs((static, whole[0]), domain, whole[1])
        # the share is all a node must give unless tasks or --gpus may spread unevenly
        spread = shape.nodes_max > 1 and (shape.tasks is not None or bool(shape.gpus_total))
        return _Request(
            shape,
            rule,
            needs,
            (static, share_key),
            domain,
            share,
            whole_needs,
            self.lightest[id(domain)],
            max(shape.nodes_min, len(wanted)),
            spread,
            bool(wanted),
        )

    def may_reserve(self, job: PendingJob) -> bool:
        """Whether ``job``'s expected start is wanted: it may reserve, or estimates are on."""
        if self.params.bf_estimates:
            return True
        limit = self.params.bf_job_part_count_reserve
        return not limit or self.reserved_in.get(job.partition, 0) < limit

    def earliest(self, job: PendingJob, latest: float | None = None) -> tuple[float, Start] | None:
        """The earliest start of ``job`` and its placement then, or None (never fits, or
        not by ``latest``)."""
        if not self.drawn:
            self._draw()
        request = self._request(job)
        if request is None:
            return None
        duration = self._duration(job)
        now = self.now
        if latest is not None and latest <= now:
            # Only ``now`` may do (every start is ``now`` or later): no sweep over the
            # future, just the nodes the gap index would have open at ``now``.
            if latest < now:
                return None
            open_ids = self._open_now(request.needs, duration)
            if len(open_ids) < request.count:
                return None
            placed = self._place_at(job, request, now, now + duration, open_ids)
            return None if placed is None else (now, placed)
        index = self.timeline.index_for(request.index_key, request.domain, request.share)
        starts = index.candidate_starts(duration, request.count, now, every_change=request.spread)
        for when, open_ids in starts:
            if latest is not None and when > latest:
                return None
            placed = self._place_at(job, request, when, when + duration, open_ids)
            if placed is not None:
                return when, placed
        return None

    def _open_now(self, needs: Mapping[int, Share], duration: float) -> list[int]:
        """The nodes that ``GapIndex.candidate_starts`` has open at ``now`` for a job of
        ``duration``: those whose gap for their share begins at ``now`` (every gap
        begins at a breakpoint, the first of which is ``now``) and lasts ``duration``
        (``Timeline.holds_from_now``), in domain order."""
        holds = self.timeline.holds_from_now
        return [i for i, need in needs.items() if holds(i, need, duration)]

    def _place_at(
        self, job: PendingJob, request: _Request, when: float, end: float, open_ids: list[int]
    ) -> Start | None:
        """``job`` placed on the open nodes over ``[when, end)``, or None."""
        shape, rule = request.shape, request.rule
        window, virtual = self.timeline.window, self.timeline.view
        if shape.nodes_min == 1 and not request.wanted:
            # One node that holds the whole job is what select_nodes picks when it
            # is in the lightest weight group: find it without building every node.
            best = self._best_single(open_ids, request.whole_needs, when, end)
            if best is not None and self.timeline.nodes[best].weight == request.lightest:
                node = virtual(best, *window(best, when, end))
                placed = place(job, shape, rule, [node])
                if placed is not None:
                    return placed
            if shape.nodes_max == 1 and best is None:
                return None  # GPU masks differ from step to step: no node really fits
        windows = [(i, *window(i, when, end)) for i in open_ids]
        if request.spread and not may_hold(shape, rule, windows):
            return None  # the open nodes together lack tasks or GPUs: select would fail
        pool = [virtual(i, cpus, mem, gmask) for i, cpus, mem, gmask in windows]
        return place(job, shape, rule, pool)

    def _needs(self, key: object, domain: list[int], share: ShareFn) -> dict[int, Share]:
        """Per domain node, what ``share`` (a ``share_of`` function) asks of it."""
        needs = self.needs.get(key)
        if needs is None:
            nodes = self.timeline.nodes
            needs = self.needs[key] = {}
            by_size: dict[tuple[int, int, int], Share | None] = {}  # a share reads only these
            for i in domain:
                node = nodes[i]
                size = (node.cpus, node.real_memory, node.gpus)
                if size not in by_size:
                    by_size[size] = share(node)
                need = by_size[size]
                if need is not None:
                    needs[i] = need
        return needs

    def _best_single(
        self, open_ids: list[int], needs: Mapping[int, Share], start: float, end: float
    ) -> int | None:
        """Best fit (``select.best_fit_key``, as the main pass orders nodes) among the
        nodes that hold ``needs`` over the window, without building every node."""
        best, best_key = None, None
        timeline = self.timeline
        nodes, all_ts, rising = timeline.nodes, timeline.ts, timeline.rising
        for i in open_ids:
            need = needs.get(i)
            if need is None:
                continue
            ts = all_ts[i]
            k = bisect_right(ts, start) - 1
            if rising[i] or k + 1 == len(ts) or ts[k + 1] >= end:  # timeline.window, inlined
                cpus, mem, gmask = timeline.cpu[i][k], timeline.mem[i][k], timeline.gpu[i][k]
            else:
                cpus, mem, gmask = timeline.window(i, start, end)
            free_gpus = gmask.bit_count()
            if cpus < need[0] or mem < need[1] or free_gpus < need[2]:
                continue
            key = best_fit_key(nodes[i], free_gpus, cpus)
            if best_key is None or key < best_key:
                best, best_key = i, key
        return best

    def start(self, job: PendingJob, placement: Start) -> None:
        self.plan.starts.append(placement)
        self.plan.reasons.pop(job.job_id, None)
        self.plan.unavailable_nodes.pop(job.job_id, None)
        self._hold(placement, self.now, self._duration(job))
        self.started += 1

    def plan_later(self, job: PendingJob, when: float, placement: Start) -> None:
        self.plan.estimates[job.job_id] = when
        self.plan.planned_nodes[job.job_id] = placement.nodes
        if when > self.horizon:
            return  # beyond bf_window: an estimate, no reservation
        limit = self.params.bf_job_part_count_reserve
        if limit and self.reserved_in.get(job.partition, 0) >= limit:
            return  # only the partition's top N jobs reserve (N=1: EASY)
        self.reserved_in[job.partition] = self.reserved_in.get(job.partition, 0) + 1
        duration = self._duration(job)
        self._hold(placement, when, duration, whole=self.params.bf_whole_node_reserve)
