"""One rule for what a node holds: ``snapshot.with_allocations``, and the builders on it."""

from __future__ import annotations

import pytest

from slurmlite.scheduler.snapshot import with_allocations
from tests.builders import a_node, a_running_job, a_snapshot, an_alloc


def test_cpus_and_memory_add_up_and_gpu_indices_unite():
    # n1: 2 + 1 = 3 CPUs, 1000 + 500 = 1500 MiB, GPUs {0} | {3}; n2: nothing
    runs = [
        a_running_job(1, an_alloc("n1", 2, 1000, [0])),
        a_running_job(2, an_alloc("n1", 1, 500, [3]), an_alloc("n2", 0, 0)),
    ]
    n1, n2, n3 = with_allocations([a_node("n1", gpus=4), a_node("n2"), a_node("n3")], runs)
    assert (n1.alloc_cpus, n1.alloc_mem, n1.alloc_gpus) == (3, 1500, frozenset({0, 3}))
    assert n1.free_gpus == (1, 2) and n2.idle and n3.idle


def test_a_node_no_job_holds_is_emptied_and_an_idle_one_kept_as_it_is():
    busy, idle = a_node("n1", alloc_cpus=4, alloc_mem=8000), a_node("n2")
    emptied, kept = with_allocations([busy, idle], [])
    assert emptied.idle and kept is idle


def test_a_snapshot_derives_its_nodes_use_from_its_running_jobs():
    run = a_running_job(1, an_alloc("n1", 3, 100), ends_in=60)
    snap = a_snapshot([a_node("n1"), a_node("n2")], running=[run])
    assert [n.alloc_cpus for n in snap.nodes] == [3, 0]
    assert snap.running == (run,) and run.end_time == 10_000.0 + 60


def test_a_snapshot_refuses_a_nodes_use_stated_twice():
    with pytest.raises(ValueError, match="n1"):
        a_snapshot([a_node("n1", alloc_cpus=1)], running=[a_running_job(1)])
