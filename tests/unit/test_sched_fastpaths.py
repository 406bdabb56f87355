"""The scheduler's shortcuts give exactly the answers of the long way round.

Each test checks one shortcut against the general code it stands in for, on
random cases: the start-now question of backfill (``Timeline.holds_from_now``,
``_Walk.earliest`` with ``latest`` = now), the memo of ``BackfillParams``, and
the cheap node copies of ``select`` (``as_idle``, ``consume``).
"""

from __future__ import annotations

import dataclasses
import random

from slurmlite.protocol import NodeAlloc
from slurmlite.scheduler.backfill import BackfillParams, _Walk
from slurmlite.scheduler.select import as_idle, consume
from slurmlite.scheduler.snapshot import Plan, Policy
from slurmlite.scheduler.timeline import Timeline
from tests.builders import a_job, a_node, a_running_job, a_snapshot, an_alloc


def random_timeline(rng: random.Random, now: float) -> Timeline:
    nodes = [a_node(f"n{k}", cpus=8, mem=800, gpus=rng.choice([0, 4])) for k in range(3)]
    runs = []
    for job_id in range(rng.randint(0, 6)):
        node = rng.choice(nodes)
        gpus = rng.sample(range(node.gpus), rng.randint(0, 1)) if node.gpus else []
        ends = rng.choice([None, 30.0, 61.5, 600.0, 3600.0])
        runs.append(a_running_job(job_id, an_alloc(node.name, 1, 50, gpus), ends_in=ends, now=now))
    snap = a_snapshot(nodes, [], running=runs, now=now)
    timeline = Timeline(snap.nodes, snap.running, now, rng.choice([1, 60]))
    for _ in range(rng.randint(0, 6)):
        node = rng.choice(snap.nodes)
        start = now + rng.choice([0.0, 0.5, 60.0, 120.0, 1000.0])
        end = start + rng.choice([1.0, 60.0, 7.25, 5000.0])
        gpus = [rng.randrange(node.gpus)] if node.gpus and rng.random() < 0.5 else []
        alloc = NodeAlloc(node.name, rng.randint(1, 4), rng.randint(0, 300), gpus)
        timeline.reserve([alloc], start, end, whole_node=rng.random() < 0.1)
    return timeline


def test_holds_from_now_is_a_gap_that_begins_now_and_lasts_the_duration():
    rng = random.Random(7)
    for _ in range(400):
        now = rng.choice([36_000.0, 1_712_345_678.123456])
        timeline = random_timeline(rng, now)
        for i in range(len(timeline.nodes)):
            need = (rng.randint(0, 8), rng.randint(0, 800), rng.randint(0, 2))
            gaps = timeline.gaps(i, need)
            for duration in (1.0, 60.0, 61.0, 999.0, 4000.0, 1e9):
                expected = any(g[0] == now and g[1] - now >= duration for g in gaps)
                assert timeline.holds_from_now(i, need, duration) == expected


def test_earliest_by_now_is_the_sweeps_answer_when_that_is_now():
    rng = random.Random(11)
    policy = Policy(def_mem_per_cpu=10)
    params = BackfillParams(bf_resolution=1)
    for _ in range(200):
        now = rng.choice([36_000.0, 36_000.5])
        nodes = [a_node(f"n{k}", cpus=8, mem=800, gpus=rng.choice([0, 2])) for k in range(3)]
        runs = [
            a_running_job(
                k, an_alloc(rng.choice(nodes).name, rng.randint(1, 6), 60), ends_in=600, now=now
            )
            for k in range(rng.randint(0, 5))
        ]
        jobs = [
            a_job(
                100 + k,
                ntasks=rng.randint(1, 12),
                nodes_max=rng.choice([None, 1, 2]),
                gpus_total=rng.choice([None, None, 1, 3]),
                time_limit=rng.choice([1, 10.5, 30, 240]),
            )
            for k in range(6)
        ]
        snap = a_snapshot(nodes, jobs, running=runs, now=now)
        sweep, direct = _Walk(snap, policy, params, Plan()), _Walk(snap, policy, params, Plan())
        for job in jobs:
            general = sweep.earliest(job)
            expected = general if general is not None and general[0] <= now else None
            assert direct.earliest(job, now) == expected
            if general is not None:  # both maps take the same reservation
                sweep.plan_later(job, *general)
                direct.plan_later(job, *general)


def test_backfill_params_follow_a_changed_mapping():
    params = {"bf_resolution": "1"}
    policy = Policy(scheduler_parameters=params)
    assert BackfillParams.from_policy(policy).bf_resolution == 1
    assert BackfillParams.from_policy(policy) is BackfillParams.from_policy(policy)
    params["bf_resolution"] = "30"  # the same mapping, changed: read again
    assert BackfillParams.from_policy(policy).bf_resolution == 30


def test_node_copies_equal_dataclasses_replace():
    node = a_node("n1", cpus=8, mem=100, gpus=4, alloc_cpus=2, alloc_mem=10, alloc_gpus=[1])
    idle = dataclasses.replace(node, usable=True, alloc_cpus=0, alloc_mem=0, alloc_gpus=frozenset())
    assert as_idle(node) == idle and hash(as_idle(node)) == hash(idle)
    used = consume(node, NodeAlloc("n1", 3, 20, [0, 2]))
    assert used == dataclasses.replace(
        node, alloc_cpus=5, alloc_mem=30, alloc_gpus=frozenset({0, 1, 2})
    )
    assert node.alloc_cpus == 2  # the original is untouched
