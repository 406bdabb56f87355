"""Node selection inside a partition: best fit, weights, GPUs, memory, layout."""

from __future__ import annotations

from slurmlite.scheduler.select import constraint_matches, select_nodes
from slurmlite.scheduler.shape import job_shape, min_nodes
from slurmlite.scheduler.snapshot import NodeView, PendingJob, Policy
from tests.builders import a_job, a_node, a_policy, a_snapshot

MEM_PER_CPU = a_policy(def_mem_per_cpu=1000)


def place(job: PendingJob, nodes: list[NodeView], policy: Policy = MEM_PER_CPU):
    """Select on nodes numbered in list order; returns {node: (cpus, mem, gpus)}, tasks."""
    pool = a_snapshot(nodes=nodes).nodes
    start = select_nodes(job, policy, pool)
    if start is None:
        return None
    return {a.node: (a.cpus, a.mem, a.gpus) for a in start.allocs}, start.tasks


def test_shares_a_partly_used_node_by_cpus():
    # n1: 4 CPUs, 2 held by another job -> 2 free; -n 2 fits: 2 CPUs x 1000 MiB.
    got = place(a_job(1, ntasks=2), [a_node("n1", cpus=4, alloc_cpus=2, alloc_mem=2000)])
    assert got == ({"n1": (2, 2000, [])}, (2,))


def test_does_not_fit_when_free_cpus_are_too_few():
    # 4 CPUs - 3 held = 1 free < 2 asked.
    assert place(a_job(1, ntasks=2), [a_node("n1", cpus=4, alloc_cpus=3)]) is None


def test_best_fit_takes_the_node_with_fewest_free_cpus_that_still_fits():
    # n1 has 4 free, n2 has 3 free, n3 has 1 free; -n 3: n3 too small, n2 tightest.
    nodes = [a_node("n1"), a_node("n2", alloc_cpus=1), a_node("n3", alloc_cpus=3)]
    got, _ = place(a_job(1, ntasks=3), nodes)
    assert list(got) == ["n2"]


def test_cpu_jobs_prefer_nodes_without_free_gpus():
    # gpu1 comes first in config, but it has 2 free GPUs; cpu1 has none -> cpu1.
    nodes = [a_node("gpu1", gpus=2), a_node("cpu1")]
    got, _ = place(a_job(1), nodes)
    assert list(got) == ["cpu1"]


def test_ties_go_to_config_order():
    got, _ = place(a_job(1), [a_node("n2"), a_node("n1")])
    assert list(got) == ["n2"]  # n2 is first in the list = config index 0


def test_lowest_weight_first():
    nodes = [a_node("heavy", weight=10), a_node("light", weight=1)]
    got, _ = place(a_job(1), nodes)
    assert list(got) == ["light"]


def test_heavier_group_used_only_when_lighter_cannot_hold_the_job():
    # light has 4 CPUs, all busy but 1 -> -N 1 -n 2 does not fit there; heavy is used.
    nodes = [a_node("heavy", weight=10), a_node("light", weight=1, alloc_cpus=3)]
    got, _ = place(a_job(1, ntasks=2, nodes_max=1), nodes)
    assert list(got) == ["heavy"]


def test_lighter_nodes_are_filled_before_a_heavier_one():
    # -n 6: light (w1) holds 4 tasks, heavy (w5, 8 CPUs) could hold all 6 alone,
    # but lighter nodes are used first: light 4 + heavy 2 = 6.
    nodes = [a_node("heavy", cpus=8, mem=16000, weight=5), a_node("light", weight=1)]
    got, tasks = place(a_job(1, ntasks=6), nodes)
    assert got == {"heavy": (2, 2000, []), "light": (4, 4000, [])}
    assert tasks == (2, 4)  # config order: heavy is index 0


def test_block_layout_fills_the_first_node_then_the_next():
    # -n 6 on two idle 4-CPU nodes: none holds 6 alone; n1 gets 4, n2 the other 2.
    got, tasks = place(a_job(1, ntasks=6), [a_node("n1"), a_node("n2")])
    assert got == {"n1": (4, 4000, []), "n2": (2, 2000, [])}
    assert tasks == (4, 2)


def test_nodes_only_gives_one_task_per_node():
    # -N 2: one task, one CPU on each of 2 nodes (golden NumCPUs=2 NumTasks=2).
    got, tasks = place(a_job(1, nodes_min=2, nodes_max=2), [a_node("n1"), a_node("n2")])
    assert got == {"n1": (1, 1000, []), "n2": (1, 1000, [])}
    assert tasks == (1, 1)


def test_ntasks_per_node_and_cpus_per_task():
    # -N 2 --ntasks-per-node=2 -c 2: 2 tasks x 2 CPUs = 4 CPUs on each node.
    job = a_job(1, nodes_min=2, nodes_max=2, ntasks_per_node=2, cpus_per_task=2)
    got, tasks = place(job, [a_node("n1"), a_node("n2"), a_node("n3")])
    assert got == {"n1": (4, 4000, []), "n2": (4, 4000, [])}
    assert tasks == (2, 2)


def test_gpus_are_the_lowest_free_indices():
    # GPUs 0 and 2 held by others; --gres=gpu:2 gets 1 and 3.
    node = a_node("n1", gpus=4, alloc_cpus=2, alloc_mem=1000, alloc_gpus=[0, 2])
    got, _ = place(a_job(1, gpus_per_node=2), [node])
    assert got["n1"][2] == [1, 3]


def test_gpus_per_node_needs_that_many_free_on_the_node():
    node = a_node("n1", gpus=2, alloc_gpus=[0])  # 1 free < 2 asked
    assert place(a_job(1, gpus_per_node=2), [node]) is None


def test_gpus_per_job_spread_with_at_least_one_per_node():
    # --gpus=3 on two 2-GPU nodes: neither holds 3; n1 gives 2, n2 the last 1.
    got, _ = place(a_job(1, gpus_total=3), [a_node("n1", gpus=2), a_node("n2", gpus=2)])
    assert {n: g for n, (_, _, g) in got.items()} == {"n1": [0, 1], "n2": [0]}


def test_gpu_type_must_match():
    nodes = [a_node("n1", gpus=2, gpu_type="l40"), a_node("n2", gpus=2, gpu_type="a100")]
    got, _ = place(a_job(1, gpus_per_node=1, gpu_type="a100"), nodes)
    assert list(got) == ["n2"]


def test_memory_per_cpu_limits_how_many_tasks_a_node_takes():
    # n1 has 4 free CPUs but 8000 - 6000 = 2000 MiB free: at 1000 MiB/CPU only 2 of
    # the 3 tasks fit there, so the job goes to n2 (by CPUs alone n1 would win the tie).
    nodes = [a_node("n1", alloc_mem=6000), a_node("n2")]
    got, tasks = place(a_job(1, ntasks=3, mem_per_cpu=1000), nodes)
    assert got == {"n2": (3, 3000, [])} and tasks == (3,)
    # -n 6: n1 gives 2 (memory), n2 gives 4 (CPUs) -> both nodes.
    got, tasks = place(a_job(1, ntasks=6, mem_per_cpu=1000), nodes)
    assert got == {"n1": (2, 2000, []), "n2": (4, 4000, [])}


def test_memory_rules_in_order():
    node = [a_node("n1", cpus=4, mem=8000, gpus=2)]
    # --mem=3000 per node
    assert place(a_job(1, mem_per_node=3000), node)[0]["n1"][1] == 3000
    # --mem=0: the whole node's RealMemory
    assert place(a_job(1, mem_per_node=0), node)[0]["n1"][1] == 8000
    # --mem-per-gpu=1500 x 2 GPUs = 3000
    assert place(a_job(1, gpus_per_node=2, mem_per_gpu=1500), node)[0]["n1"][1] == 3000
    # DefMemPerGPU=2500 x 1 GPU (GPU job, nothing asked) = 2500, before DefMemPerCPU
    both = a_policy(def_mem_per_cpu=1000, def_mem_per_gpu=2500)
    assert place(a_job(1, gpus_per_node=1), node, both)[0]["n1"][1] == 2500
    # DefMemPerCPU=1000 x 2 CPUs = 2000
    assert place(a_job(1, ntasks=2), node)[0]["n1"][1] == 2000
    # nothing set anywhere: the whole node
    assert place(a_job(1, ntasks=2), node, a_policy())[0]["n1"][1] == 8000


def test_exclusive_takes_all_cpus_and_gpus_and_memory_for_every_cpu():
    # n1 is partly used, so --exclusive must go to idle n2: 4 CPUs, both GPUs, and
    # per-CPU memory for all 4 CPUs it holds: 4 x 1000 MiB (golden
    # 50_scontrol_show_job_running: MinMemoryCPU=1000M, NumCPUs=4 -> mem=4000M).
    nodes = [a_node("n1", gpus=2, alloc_cpus=1, alloc_mem=1000), a_node("n2", gpus=2)]
    got, tasks = place(a_job(1, exclusive=True), nodes)
    assert got == {"n2": (4, 4000, [0, 1])}
    assert tasks == (1,)


def test_exclusive_memory_is_capped_at_the_nodes_memory():
    # 4 CPUs x 3000 MiB = 12000 MiB, but the node has 8000: it is charged 8000
    got, _ = place(a_job(1, exclusive=True, mem_per_cpu=3000), [a_node("n1", mem=8000)])
    assert got == {"n1": (4, 8000, [])}


def test_excluded_nodes_are_never_used():
    got, _ = place(a_job(1, exc_nodes=["n1"]), [a_node("n1"), a_node("n2")])
    assert list(got) == ["n2"]


def test_required_nodes_are_included_even_when_another_fits_better():
    # Best fit alone would pick n1 (fewest free CPUs), but -w n2 wins.
    nodes = [a_node("n1", alloc_cpus=2), a_node("n2")]
    got, _ = place(a_job(1, req_nodes=["n2"]), nodes)
    assert list(got) == ["n2"]


def test_required_node_missing_from_pool_means_no_placement():
    assert place(a_job(1, req_nodes=["n9"]), [a_node("n1")]) is None


def test_constraint_expressions():
    assert constraint_matches("a", {"a", "b"})
    assert constraint_matches("a&b", {"a", "b"}) and not constraint_matches("a&c", {"a", "b"})
    assert constraint_matches("a,b", {"a", "b"})  # comma is AND too
    assert constraint_matches("c|b", {"a", "b"}) and not constraint_matches("c|d", {"a"})
    assert constraint_matches(None, set())


def test_constraint_picks_the_nodes_with_the_features():
    nodes = [a_node("n1", features=["intel"]), a_node("n2", features=["amd", "ib"])]
    got, _ = place(a_job(1, features="amd&ib"), nodes)
    assert list(got) == ["n2"]
    assert place(a_job(2, features="arm"), nodes) is None


def test_min_nodes_is_the_shapes_node_minimum():
    # every pass asks each pending job for it: a cheap copy that must agree with job_shape
    cases = [
        {},  # 1
        {"nodes_min": 3},  # -N 3 -> 3
        {"ntasks": 5, "ntasks_per_node": 2},  # ceil(5 / 2) = 3
        {"ntasks": 2, "nodes_min": 4},  # never more nodes than tasks -> 2
        {"ntasks": 8, "ntasks_per_node": 3, "nodes_min": 2},  # max(2, ceil(8 / 3) = 3) = 3
        {"ntasks": 4, "nodes_min": 0},  # at least 1
    ]
    for kw in cases:
        job = a_job(1, **kw)
        assert min_nodes(job) == job_shape(job).nodes_min, kw
    assert [min_nodes(a_job(1, **kw)) for kw in cases] == [1, 3, 3, 2, 3, 1]
