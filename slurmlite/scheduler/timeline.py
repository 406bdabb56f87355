"""Backfill's map of the future: what each node has free, from now on.

The backfill pass (``backfill.py``) must answer, many times per pass, "when
is the earliest moment this job fits, for its whole time limit, without
touching what running jobs hold or what earlier jobs have reserved?".  This
module keeps the data that answers it.

**Profiles.**  Every node has a step function of its *free* resources: a
sorted list of breakpoints ``ts`` and, for each step ``[ts[k], ts[k+1])``,
the free CPUs, free MiB and the free GPU indices (a bit mask: bit i set =
GPU i free).  The first step starts at ``now`` with what the snapshot says is
free; each running job gives its CPUs, memory and GPUs back at its end (start
+ time limit, rounded *up* to ``bf_resolution``); an UNLIMITED job keeps them
for a year, as Slurm assumes.  ``reserve`` takes resources away over an
interval, splitting steps at its ends.

**Shares and gaps.**  For one per-node need ``(cpus, MiB, GPUs)`` a node's
*gaps* are the maximal intervals in which every step has at least that much
free.  A ``GapIndex`` holds the gaps of every node of a domain (a partition's
eligible nodes), sorted by gap start in a ``GapList`` whose blocks remember
their longest gap, so gaps too short for a job are skipped a block at a
time.  A job on ``k`` nodes for ``d`` seconds can start at ``t`` only if at
least ``k`` gaps contain ``[t, t + d)``; the sweep in ``candidate_starts``
walks gap starts in time order with a heap of gap ends and yields each ``t``
where enough nodes are open, lowest first.  Gaps are a necessary condition
(a GPU mask may differ from step to step); the caller confirms each
candidate with the real node selection on the window's free resources
(``virtual_node``, ``view``).  After a reservation only the touched nodes'
gaps are recomputed, and only around the reserved interval, lazily, the next
time an index is used (a change log of nodes and intervals, one position per
index; ``GapIndex.refresh``).  A node has less free than at the step before
only where one of its reservations begins (releases and reservation ends only
give back), so "does a gap begin now and last ``d``?" reads the step at
``now`` and those (``drops``, ``holds_from_now``), not every step.

Invariant: free amounts never go below zero — ``reserve`` is only called with
allocations found in a window that had them free (whole-node reservations set
a node's free to zero instead of subtracting).

Worked example (resolution 60 s, ``now`` = 0): node n1 has 8 GPUs, 6 held by
a job ending at 3600 and 2 free.  Profile: ``[0: 2 free GPUs, 3600: 8]``.
Reserve 8 GPUs over ``[3600, 7200)`` for a blocked job: the profile becomes
``[0: 2, 3600: 0, 7200: 8]``.  The gaps for a 2-GPU need are ``[0, 3600)``
and ``[7200, inf)``: a 2-GPU job of 60 minutes starts now (it ends at 3600,
before the reservation), one of 61 minutes waits until 7200.

Reference: spec §4.3-4.4; ``S:src/plugins/sched/backfill/backfill.c``
(node_space map, whole-node slots) for behaviour only.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter

from slurmlite.protocol import NodeAlloc
from slurmlite.scheduler.snapshot import NodeView, RunningJob

INF = float("inf")
YEAR = 365 * 86400.0  # how long an UNLIMITED job is assumed to run (as Slurm does)

#: A per-node need: CPUs, MiB, GPU count.  ``None`` = the node can never give it.
Share = tuple[int, int, int]
ShareFn = Callable[[NodeView], Share | None]


def round_down(t: float, res: int) -> float:
    return float(t // res * res)


def round_up(t: float, res: int) -> float:
    return float(-(-t // res) * res)


def mask_of(indices: Iterable[int]) -> int:
    """GPU indices as a bit mask: ``[0, 2] -> 0b101``."""
    mask = 0
    for i in indices:
        mask |= 1 << i
    return mask


def indices_of(mask: int) -> list[int]:
    """The bit mask back to indices, lowest first: ``0b101 -> [0, 2]``."""
    out, i = [], 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out


Gap = tuple[float, float, int]  # (start, end, node id)
_START, _END = itemgetter(0), itemgetter(1)


class GapList:
    """Gaps sorted by start, in blocks that remember their longest gap.

    A job of ``d`` seconds can only use gaps at least ``d`` long, and late in a
    pass most gaps are short slivers before a reservation: ``long_gaps(d)``
    skips every block whose longest gap is shorter, so a query reads a few
    blocks instead of every gap.  Insert and delete touch one block.
    """

    BLOCK = 64

    def __init__(self, gaps: list[Gap]) -> None:
        gaps.sort()
        size = self.BLOCK
        self.blocks: list[list[Gap]] = [gaps[k : k + size] for k in range(0, len(gaps), size)]
        self.firsts: list[Gap] = [b[0] for b in self.blocks]
        self.longest: list[float] = [max(g[1] - g[0] for g in b) for b in self.blocks]

    def _block_of(self, gap: Gap) -> int:
        return max(0, bisect_right(self.firsts, gap) - 1)

    def add(self, gap: Gap) -> None:
        if not self.blocks:
            self.blocks, self.firsts, self.longest = [[gap]], [gap], [gap[1] - gap[0]]
            return
        k = self._block_of(gap)
        block = self.blocks[k]
        insort(block, gap)
        self.firsts[k] = block[0]
        self.longest[k] = max(self.longest[k], gap[1] - gap[0])
        if len(block) > 2 * self.BLOCK:  # split in two halves
            half = block[self.BLOCK :]
            del block[self.BLOCK :]
            self.blocks.insert(k + 1, half)
            self.firsts.insert(k + 1, half[0])
            self.longest[k] = max(g[1] - g[0] for g in block)
            self.longest.insert(k + 1, max(g[1] - g[0] for g in half))

    def remove(self, gap: Gap) -> None:
        k = self._block_of(gap)
        block = self.blocks[k]
        del block[bisect_left(block, gap)]
        if not block:
            del self.blocks[k], self.firsts[k], self.longest[k]
            return
        self.firsts[k] = block[0]
        # ``longest`` may now be too high: still a safe bound; long_gaps tightens it

    def long_gaps(self, duration: float) -> Iterator[Gap]:
        """Gaps at least ``duration`` long, by start."""
        longest = self.longest
        for k, block in enumerate(self.blocks):
            if longest[k] >= duration:
                seen = 0.0
                for gap in block:
                    length = gap[1] - gap[0]
                    if length >= duration:
                        yield gap
                    if length > seen:
                        seen = length
                longest[k] = seen  # the block was read whole: its bound is exact again


class GapIndex:
    """Every domain node's gaps for one share (a ``GapList``), kept up to date lazily."""

    def __init__(self, timeline: Timeline, domain: Sequence[int], share: ShareFn) -> None:
        self.timeline = timeline
        self.needs: dict[int, Share] = {}
        for i in domain:
            need = share(timeline.nodes[i])
            if need is not None:
                self.needs[i] = need
        self.node_gaps: dict[int, list[Gap]] = {}
        every: list[Gap] = []
        for i in self.needs:
            gaps = timeline.gaps(i, self.needs[i])
            self.node_gaps[i] = gaps
            every.extend(gaps)
        self.gaps = GapList(every)
        self.log_pos = len(timeline.log)

    def refresh(self) -> None:
        """Bring the gaps of nodes reserved since this index was last used up to date.

        Only the part of a node's gap list near what changed is worked out again: a
        reservation over ``[lo, hi)`` only lowers free amounts there, so a gap that
        does not touch ``[lo, hi]`` stays as it was, and the gaps in the span from
        the first touching gap's start to the last one's end (or ``lo``..``hi``)
        are rescanned; the steps just outside that span are unchanged and too
        small, so the gaps found are maximal (``Timeline.gaps`` over ``[lo, hi)``).
        """
        log, spans = self.timeline.log, self.timeline.spans
        if self.log_pos == len(log):
            return
        changed: dict[int, tuple[float, float]] = {}  # node id -> (lo, hi) of its changes
        needs = self.needs
        for k in range(self.log_pos, len(log)):
            i = log[k]
            if i in needs:
                lo, hi = spans[k]
                seen = changed.get(i)
                changed[i] = (lo, hi) if seen is None else (min(seen[0], lo), max(seen[1], hi))
        self.log_pos = len(log)
        for i, (lo, hi) in changed.items():
            old = self.node_gaps[i]
            # gaps are disjoint, so sorted by end as well as by start
            first = bisect_left(old, lo, key=_END)  # the ones before end before lo
            last = bisect_right(old, hi, lo=first, key=_START)  # these start by hi
            touched = old[first:last]
            if touched:
                lo, hi = min(lo, touched[0][0]), max(hi, touched[-1][1])
            fresh = self.timeline.gaps(i, needs[i], lo, hi)
            if fresh == touched:
                continue
            self.node_gaps[i] = old[:first] + fresh + old[last:]
            kept = set(fresh).intersection(touched)
            for gap in touched:
                if gap not in kept:
                    self.gaps.remove(gap)
            for gap in fresh:
                if gap not in kept:
                    self.gaps.add(gap)

    def candidate_starts(
        self, duration: float, count: int, not_before: float, every_change: bool = False
    ) -> Iterator[tuple[float, list[int]]]:
        """Times ``t >= not_before``, ascending, at which ``count`` or more nodes have a gap
        covering ``[t, t + duration)``; each with those nodes' ids (in no set order).

        Sweep over gap starts with a heap of the ends of the gaps begun so far;
        a gap shorter than ``duration`` can never cover a window, so it is skipped.
        ``every_change`` also stops at each breakpoint of a node already open: a job
        spread over nodes may need more than the share on some of them, and what a
        window holds only grows when its start passes a breakpoint.
        """
        self.refresh()
        all_ts = self.timeline.ts
        open_ends: list[tuple[float, int]] = []  # (gap end, node id) of gaps begun by t
        open_end: dict[int, float] = {}  # node id -> end of its open gap
        rises: list[tuple[float, int]] = []  # (next breakpoint, node id) of open nodes
        gaps = self.gaps.long_gaps(duration)
        gap = next(gaps, None)
        tracking = False  # rises are followed once a yielded time has not done

        def next_break(i: int, t: float) -> None:
            ts = all_ts[i]
            k = bisect_right(ts, t)
            if k < len(ts) and ts[k] < open_end[i]:
                heapq.heappush(rises, (ts[k], i))

        while gap is not None or rises:
            t = min(gap[0] if gap is not None else INF, rises[0][0] if rises else INF)
            t = max(t, not_before)
            while gap is not None and gap[0] <= t:
                if gap[1] - t >= duration:
                    heapq.heappush(open_ends, (gap[1], gap[2]))
                    open_end[gap[2]] = gap[1]
                    if tracking:
                        next_break(gap[2], t)
                gap = next(gaps, None)
            while open_ends and open_ends[0][0] - t < duration:
                end, i = heapq.heappop(open_ends)  # ends too early for t and any later t
                if open_end.get(i) == end:  # (not a later gap of the node, just opened)
                    del open_end[i]
            while rises and rises[0][0] <= t:
                _, i = heapq.heappop(rises)
                if i in open_end:
                    next_break(i, t)
            if len(open_ends) >= count:
                yield t, [node for _, node in open_ends]
                if every_change and not tracking:  # asked again: t did not do; look closer
                    tracking = True
                    for i in open_end:
                        next_break(i, t)


class Timeline:
    """Per-node free-resource profiles from ``now`` on (see the module docstring)."""

    def __init__(
        self,
        nodes: Sequence[NodeView],
        running: Iterable[RunningJob],
        now: float,
        resolution: int = 60,
    ) -> None:
        self.now = float(now)
        self.res = max(1, int(resolution))
        self.nodes = list(nodes)
        self.ids = {n.name: i for i, n in enumerate(self.nodes)}
        self.log: list[int] = []  # node ids, one per change (GapIndex.refresh reads it)
        self.spans: list[tuple[float, float]] = []  # what each change of ``log`` covers
        # True while a node has no reservation: its free amounts only grow with time, so
        # the least free over a window is what is free at the window's start
        self.rising = [True] * len(self.nodes)
        # Per node, the starts after ``now`` of its reservations, ascending: the only
        # breakpoints at which it has less free than just before (see ``drops``)
        self.drops: list[list[float]] = [[] for _ in self.nodes]
        self.indexes: dict[object, GapIndex] = {}
        self.views: dict[tuple[int, int, int, int], NodeView] = {}  # see ``view``
        self.ts: list[list[float]] = []
        self.cpu: list[list[int]] = []
        self.mem: list[list[int]] = []
        self.gpu: list[list[int]] = []
        releases: list[dict[float, list[int]]] = [{} for _ in self.nodes]
        soonest = round_down(self.now, self.res) + self.res  # overdue jobs free at the next tick
        for job in running:
            end = job.start_time + YEAR if job.end_time is None else job.end_time
            at = max(round_up(end, self.res), soonest)
            for alloc in job.allocs:
                i = self.ids.get(alloc.node)
                if i is None:
                    continue
                got = releases[i].setdefault(at, [0, 0, 0])
                got[0] += alloc.cpus
                got[1] += alloc.mem
                got[2] |= mask_of(alloc.gpus)
        for i, node in enumerate(self.nodes):
            full_mask = (1 << node.gpus) - 1
            cpus, mem = node.free_cpus, node.free_mem
            gmask = mask_of(node.free_gpus)
            if not node.usable:
                cpus, mem, gmask = 0, 0, 0  # never counted on: it may not come back
            ts, cs, ms, gs = [self.now], [cpus], [mem], [gmask]
            if node.usable:
                for at in sorted(releases[i]):
                    dc, dm, dg = releases[i][at]
                    cpus = min(node.cpus, cpus + dc)
                    mem = min(node.real_memory, mem + dm)
                    gmask = (gmask | dg) & full_mask
                    ts.append(at)
                    cs.append(cpus)
                    ms.append(mem)
                    gs.append(gmask)
            self.ts.append(ts)
            self.cpu.append(cs)
            self.mem.append(ms)
            self.gpu.append(gs)

    # -- reading ---------------------------------------------------------------

    def gaps(self, i: int, need: Share, lo: float = -INF, hi: float = INF) -> list[Gap]:
        """Maximal intervals in which node ``i`` has at least ``need`` free; with ``lo``
        and ``hi`` (breakpoints) only those among the steps that begin in ``[lo, hi)``,
        the last one cut at ``hi``."""
        c, m, g = need
        ts, cs, ms, gs = self.ts[i], self.cpu[i], self.mem[i], self.gpu[i]
        k = 0 if lo == -INF else bisect_left(ts, lo)
        stop = len(ts) if hi == INF else bisect_left(ts, hi)
        out: list[Gap] = []
        begin = None
        while k < stop:
            if cs[k] >= c and ms[k] >= m and (not g or gs[k].bit_count() >= g):
                if begin is None:
                    begin = ts[k]
            elif begin is not None:
                out.append((begin, ts[k], i))
                begin = None
            k += 1
        if begin is not None:
            out.append((begin, hi, i))
        return out

    def holds_from_now(self, i: int, need: Share, duration: float) -> bool:
        """Whether node ``i`` has a gap for ``need`` that begins at ``now`` and lasts
        ``duration`` (its end minus ``now``, as ``GapIndex.candidate_starts`` measures).

        A node has less free than at the step before only at ``now`` and where a
        reservation begins (releases and reservation ends only give back), so only
        those steps can end the gap: they are the ones read.
        """
        c, m, g = need
        cs, ms, gs = self.cpu[i], self.mem[i], self.gpu[i]
        if cs[0] < c or ms[0] < m or (g and gs[0].bit_count() < g):
            return False
        now = self.now
        ts = self.ts[i]
        for at in self.drops[i]:
            if at - now >= duration:
                break
            k = bisect_left(ts, at)
            if cs[k] < c or ms[k] < m or (g and gs[k].bit_count() < g):
                return False
        return True

    def window(self, i: int, start: float, end: float) -> tuple[int, int, int]:
        """What node ``i`` has free during all of ``[start, end)``: (CPUs, MiB, GPU mask)."""
        ts = self.ts[i]
        k = bisect_right(ts, start) - 1
        if k < 0:
            k = 0
        cs, ms, gs = self.cpu[i], self.mem[i], self.gpu[i]
        cpus, mem, gmask = cs[k], ms[k], gs[k]
        k += 1
        if k == len(ts) or ts[k] >= end or self.rising[i]:
            return cpus, mem, gmask  # inside one step, or nothing gets less free later
        stop = bisect_left(ts, end, k)  # the steps that begin inside the window: k..stop-1
        low_cpus, low_mem = min(cs[k:stop]), min(ms[k:stop])
        for mask in gs[k:stop]:
            gmask &= mask
        return min(cpus, low_cpus), min(mem, low_mem), gmask

    def virtual_node(self, i: int, start: float, end: float) -> NodeView:
        """Node ``i`` as if what it has free all through ``[start, end)`` were free now."""
        return self.view(i, *self.window(i, start, end))

    def view(self, i: int, cpus: int, mem: int, gmask: int) -> NodeView:
        """Node ``i`` with ``cpus``, ``mem`` and the GPUs of ``gmask`` free (``window``'s
        answer); the same answer gives the same (immutable) view, built once."""
        key = (i, cpus, mem, gmask)
        made = self.views.get(key)
        if made is None:
            made = self.views[key] = self._make_view(i, cpus, mem, gmask)
        return made

    def _make_view(self, i: int, cpus: int, mem: int, gmask: int) -> NodeView:
        node = self.nodes[i]
        held = frozenset(g for g in range(node.gpus) if not gmask >> g & 1)
        return NodeView(
            name=node.name,
            index=node.index,
            cpus=node.cpus,
            real_memory=node.real_memory,
            gpus=node.gpus,
            gpu_type=node.gpu_type,
            features=node.features,
            weight=node.weight,
            partitions=node.partitions,
            usable=True,
            alloc_cpus=node.cpus - cpus,
            alloc_mem=node.real_memory - mem,
            alloc_gpus=held,
        )

    def index_for(self, key: object, domain: Sequence[int], share: ShareFn) -> GapIndex:
        """The (cached) gap index of ``domain`` for one share; ``key`` names both."""
        index = self.indexes.get(key)
        if index is None:
            index = self.indexes[key] = GapIndex(self, domain, share)
        return index

    # -- writing ---------------------------------------------------------------

    def _split(self, i: int, t: float) -> int:
        """Make ``t`` a breakpoint of node ``i``; return its step number."""
        ts = self.ts[i]
        k = bisect_left(ts, t)
        if k < len(ts) and ts[k] == t:
            return k
        ts.insert(k, t)
        for values in (self.cpu[i], self.mem[i], self.gpu[i]):
            values.insert(k, values[k - 1])
        return k

    def reserve(
        self, allocs: Iterable[NodeAlloc], start: float, end: float, whole_node: bool = False
    ) -> None:
        """Take ``allocs`` away over ``[start, end)``; ``whole_node`` takes every resource."""
        start = max(start, self.now)
        if end <= start:
            return
        for alloc in allocs:
            i = self.ids[alloc.node]
            k = self._split(i, start)
            stop = self._split(i, end) if end < INF else len(self.ts[i])
            cs, ms, gs = self.cpu[i], self.mem[i], self.gpu[i]
            gmask = mask_of(alloc.gpus)
            for j in range(k, stop):
                if whole_node:
                    cs[j], ms[j], gs[j] = 0, 0, 0
                else:
                    cs[j] = max(0, cs[j] - alloc.cpus)
                    ms[j] = max(0, ms[j] - alloc.mem)
                    gs[j] &= ~gmask
            self.log.append(i)
            self.spans.append((start, end))
            self.rising[i] = False
            if start > self.now:
                drops = self.drops[i]
                at = bisect_left(drops, start)
                if at == len(drops) or drops[at] != start:
                    drops.insert(at, start)
