"""Named shortfalls: node selection's own "no", typed (select.node_shortfalls).

Nodes are 4 CPUs / 8000 MiB unless told otherwise; DefMemPerCPU=1000, so a
share of c CPUs also asks c x 1000 MiB.
"""

from __future__ import annotations

import random

from slurmlite.scheduler import shortfall as lack
from slurmlite.scheduler.explain_nodes import per_node_need
from slurmlite.scheduler.select import node_shortfalls, select_nodes
from slurmlite.scheduler.shape import memory_rule
from slurmlite.scheduler.shortfall import Shortfall
from slurmlite.scheduler.snapshot import NodeView, PendingJob
from tests.builders import a_job, a_node, a_policy

POLICY = a_policy(def_mem_per_cpu=1000)


def lacks(job: PendingJob, node: NodeView, cpus: int, gpus: int = 0) -> list[Shortfall]:
    return node_shortfalls(job, memory_rule(job, POLICY), node, cpus, gpus)


def test_each_resource_short_is_named_with_wanted_free_and_total():
    # 3 CPUs and 5000 MiB held, GPU 0 of 2 held: a share of 2 CPUs (2000 MiB), 2 GPUs
    node = a_node("n1", gpus=2, alloc_cpus=3, alloc_mem=5000, alloc_gpus=[0])
    assert lacks(a_job(1, gpus_per_node=2), node, cpus=2, gpus=2) == [
        Shortfall("n1", lack.CPUS, wanted=2, free=1, total=4),
        Shortfall("n1", lack.GPUS, wanted=2, free=1, total=2),
    ]
    big = a_job(2, mem_per_node=6000)  # --mem=6000: 3000 free
    assert lacks(big, node, cpus=1) == [Shortfall("n1", lack.MEMORY, 6000, 3000, 8000)]


def test_static_shortfalls_name_what_was_asked_and_what_the_node_has():
    node = a_node("n1", features=["slow", "ib"], usable=False)
    job = a_job(1, exc_nodes=["n1"], features="fast", gpus_per_node=1, gpu_type="a100")
    assert lacks(job, node, cpus=1, gpus=1) == [
        Shortfall("n1", lack.STATE),
        Shortfall("n1", lack.EXCLUDED),
        Shortfall("n1", lack.FEATURES, asked="fast", have="ib,slow"),
        Shortfall("n1", lack.GPU_TYPE, total=0, asked="a100", have=""),  # no GPUs at all
    ]
    typed = a_node("n2", gpus=2, gpu_type="v100")
    assert lacks(a_job(2, gpus_per_node=1, gpu_type="a100"), typed, cpus=1, gpus=1) == [
        Shortfall("n2", lack.GPU_TYPE, total=2, asked="a100", have="v100")
    ]


def test_exclusive_wants_the_node_idle():
    # one CPU held: not idle, and the whole node's 4 CPUs are not free (4000 MiB are)
    node = a_node("n1", alloc_cpus=1, alloc_mem=1000)
    assert lacks(a_job(1, exclusive=True), node, cpus=4) == [
        Shortfall("n1", lack.IDLE),
        Shortfall("n1", lack.CPUS, wanted=4, free=3, total=4),
    ]


def _random_single_node_case(rng: random.Random) -> tuple[PendingJob, NodeView]:
    cpus, mem, gpus = rng.choice([2, 4, 8]), rng.choice([2000, 8000]), rng.choice([0, 0, 2, 4])
    node = a_node(
        "n1",
        cpus=cpus,
        mem=mem,
        gpus=gpus,
        gpu_type=rng.choice([None, "a100"]) if gpus else None,
        features=rng.choice([(), ("fast",)]),
        alloc_cpus=rng.randint(0, cpus),
        alloc_mem=rng.choice([0, 1000, mem // 2]),
        alloc_gpus=range(rng.randint(0, gpus)),
        index=0,
    )
    memory = rng.choice(
        [
            {},
            {"mem_per_node": 0},
            {"mem_per_node": 1500},
            {"mem_per_cpu": 700},
            {"mem_per_gpu": 900},
        ]
    )
    asked_gpus = rng.choice([{}, {}, {"gpus_per_node": rng.randint(1, 3)}, {"gpus_total": 2}])
    job = a_job(
        1,
        nodes_max=1,
        ntasks=rng.choice([None, 1, 2, 3]),
        cpus_per_task=rng.choice([1, 2]),
        exclusive=rng.random() < 0.2,
        features=rng.choice([None, "fast"]),
        gpu_type=rng.choice([None, "a100"]) if asked_gpus else None,
        **memory,
        **asked_gpus,
    )
    return job, node


def test_a_single_node_job_is_placed_exactly_when_no_rule_names_a_shortfall():
    # the two statements of the fit rules -- select's placement and its shortfalls --
    # agree: on 3,000 random one-node cases, None from select_nodes <=> a shortfall
    rng = random.Random(13)
    for case in range(3000):
        job, node = _random_single_node_case(rng)
        cpus, gpus = per_node_need(job)  # one node: the whole request (tasks x CPUs)
        placed = select_nodes(job, POLICY, [node]) is not None
        assert placed == (not lacks(job, node, cpus, gpus)), (case, job, node)
