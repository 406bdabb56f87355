"""Backfill's map of the future: profiles from running jobs, reservations, gaps, sweeps."""

from __future__ import annotations

import random

from slurmlite.protocol import NodeAlloc
from slurmlite.scheduler.snapshot import NodeView, RunningJob, with_allocations
from slurmlite.scheduler.timeline import (
    INF,
    YEAR,
    GapList,
    Timeline,
    indices_of,
    mask_of,
    round_down,
    round_up,
)
from tests.builders import a_node, a_running_job, an_alloc

NOW = 36_000.0  # 10 h, a multiple of 60 s
HOUR = 3600.0


def held(node: str, gpus: list[int], ends: float | None, cpus: int = 0, mem: int = 0):
    """A running job on one node, started a minute ago, ending at ``ends``."""
    alloc = an_alloc(node, cpus, mem, gpus)
    return a_running_job(len(gpus) + int(ends or 0), alloc, end_time=ends, now=NOW)


def gpu_node(name: str) -> NodeView:
    return a_node(name, cpus=32, mem=64000, gpus=8, index=0)


def timeline(nodes: list[NodeView], runs: list[RunningJob], now: float) -> Timeline:
    """A 60 s timeline; the nodes hold what ``runs`` hold on them (``with_allocations``)."""
    return Timeline(with_allocations(nodes, runs), runs, now, 60)


def test_rounding_and_masks():
    # 3661 s at 60 s resolution: down to 3660, up to 3720; exact multiples stay.
    assert (round_down(3661, 60), round_up(3661, 60), round_up(3660, 60)) == (3660, 3720, 3660)
    assert mask_of([0, 2]) == 0b101 and indices_of(0b101) == [0, 2]


def test_running_jobs_give_back_at_their_end_rounded_up():
    # n1: GPUs 0-5 held by a job ending at now + 1 h + 10 s -> free again at the next
    # minute, now + 3660 s.  Before: 2 free GPUs (6, 7) and 32 - 12 = 20 CPUs.
    run = held("n1", [0, 1, 2, 3, 4, 5], NOW + HOUR + 10, cpus=12)
    tl = timeline([gpu_node("n1")], [run], NOW)
    assert tl.ts[0] == [NOW, NOW + 3660]
    assert tl.window(0, NOW, NOW + 60) == (20, 64000, 0b11000000)
    assert tl.window(0, NOW + 3660, NOW + 7200) == (32, 64000, 0xFF)
    # a window across the release sees the least of both steps
    assert tl.window(0, NOW, NOW + 7200) == (20, 64000, 0b11000000)


def test_unlimited_and_overdue_jobs():
    # UNLIMITED (end None) keeps its GPU for a year; an overdue job (end in the past)
    # is still there now and frees at the next minute, never "now".
    unlimited = held("n1", [0], None)
    overdue = held("n1", [1], NOW - 600)
    tl = timeline([gpu_node("n1")], [unlimited, overdue], NOW + 30)
    assert tl.ts[0] == [NOW + 30, NOW + 60, round_up(NOW - 60 + YEAR, 60)]
    assert tl.gpu[0] == [0b11111100, 0b11111110, 0xFF]


def test_down_nodes_are_never_free():
    tl = Timeline([a_node("n1", usable=False, index=0)], [], NOW, 60)
    assert tl.window(0, NOW, INF) == (0, 0, 0)


def test_the_worked_example_of_the_module_docstring():
    # 6 of 8 GPUs busy until +1 h; reserve all 8 over [+1 h, +2 h) for a blocked job.
    tl = timeline([gpu_node("n1")], [held("n1", [0, 1, 2, 3, 4, 5], NOW + HOUR)], NOW)
    tl.reserve([NodeAlloc("n1", 1, 1000, list(range(8)))], NOW + HOUR, NOW + 2 * HOUR)
    assert [mask.bit_count() for mask in tl.gpu[0]] == [2, 0, 8]
    # gaps for "2 GPUs": before the reservation and after it
    assert tl.gaps(0, (1, 1000, 2)) == [(NOW, NOW + HOUR, 0), (NOW + 2 * HOUR, INF, 0)]
    index = tl.index_for("2gpu", [0], lambda n: (1, 1000, 2))
    # 60 min fits before the reservation; 61 min must wait for its end
    assert next(index.candidate_starts(HOUR, 1, NOW))[0] == NOW
    assert next(index.candidate_starts(HOUR + 60, 1, NOW))[0] == NOW + 2 * HOUR


def test_reserve_subtracts_per_resource_or_whole_node():
    tl = Timeline([gpu_node("n1"), gpu_node("n2")], [], NOW, 60)
    tl.reserve([NodeAlloc("n1", 8, 8000, [0, 1])], NOW + 60, NOW + 120)
    tl.reserve([NodeAlloc("n2", 8, 8000, [0, 1])], NOW + 60, NOW + 120, whole_node=True)
    # n1 keeps 32 - 8 = 24 CPUs, 64000 - 8000 = 56000 MiB, GPUs 2-7 during the reservation
    assert tl.window(0, NOW + 60, NOW + 120) == (24, 56000, 0b11111100)
    assert tl.window(1, NOW + 60, NOW + 120) == (0, 0, 0)
    assert tl.window(1, NOW + 120, INF) == (32, 64000, 0xFF)  # and all back after it


def test_multi_node_sweep_needs_enough_nodes_open_at_once():
    # n1 frees at +1 h, n2 at +2 h, n3 is reserved over [+2 h, +3 h) but free before.
    nodes = [gpu_node("n1"), gpu_node("n2"), gpu_node("n3")]
    runs = [held("n1", list(range(8)), NOW + HOUR), held("n2", list(range(8)), NOW + 2 * HOUR)]
    tl = timeline(nodes, runs, NOW)
    tl.reserve([NodeAlloc("n3", 32, 64000, list(range(8)))], NOW + 2 * HOUR, NOW + 3 * HOUR)
    index = tl.index_for("8gpu", [0, 1, 2], lambda n: (1, 1, 8))
    # two nodes for 1 h: n3 now..+2h and n1 from +1h overlap over [+1h, +2h) -> +1 h
    t, open_ids = next(index.candidate_starts(HOUR, 2, NOW))
    assert (t, sorted(open_ids)) == (NOW + HOUR, [0, 2])
    # two nodes for 2 h: n3's gap is too short until +3 h; n1 and n2 meet at +2 h
    t, open_ids = next(index.candidate_starts(2 * HOUR, 2, NOW))
    assert (t, sorted(open_ids)) == (NOW + 2 * HOUR, [0, 1])
    # three nodes for 2 h: only after n3's reservation, at +3 h
    assert next(index.candidate_starts(2 * HOUR, 3, NOW))[0] == NOW + 3 * HOUR


def test_index_follows_reservations_made_after_it_was_built():
    tl = Timeline([gpu_node("n1")], [], NOW, 60)
    index = tl.index_for("1gpu", [0], lambda n: (1, 1, 1))
    assert next(index.candidate_starts(HOUR, 1, NOW))[0] == NOW
    tl.reserve([NodeAlloc("n1", 32, 64000, list(range(8)))], NOW, NOW + HOUR)
    assert next(index.candidate_starts(HOUR, 1, NOW))[0] == NOW + HOUR


def test_gap_list_matches_a_plain_sorted_list():
    # Random adds and removes: long_gaps(d) must be exactly the sorted gaps >= d long.
    rng = random.Random(7)
    plain: list[tuple[float, float, int]] = []
    gaps = GapList([])
    for step in range(3000):
        if plain and rng.random() < 0.4:
            gap = plain.pop(rng.randrange(len(plain)))
            gaps.remove(gap)
        else:
            a = float(rng.randrange(0, 1000))
            gap = (a, a + rng.choice([1.0, 5.0, 50.0, INF]), step)
            plain.append(gap)
            gaps.add(gap)
        if step % 100 == 0:
            for d in (1.0, 10.0, 100.0):
                assert list(gaps.long_gaps(d)) == sorted(g for g in plain if g[1] - g[0] >= d)
