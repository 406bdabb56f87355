"""``simloop.simulate``: the module docstring's worked example, and bad workloads refused."""

from __future__ import annotations

import pytest

from slurmlite.protocol import NodeAlloc
from slurmlite.scheduler.simloop import SimulationError, WorkloadJob, simulate
from slurmlite.scheduler.snapshot import NodeView, PartitionView, PendingJob, Policy

N1 = NodeView("n1", 0, cpus=4, real_memory=4000)
DEBUG = PartitionView("debug", ("n1",))
POLICY = Policy(def_mem_per_cpu=100, scheduler_type="sched/backfill")


def test_worked_example_of_the_module_doc():
    a = WorkloadJob(PendingJob(1, 1, 0.0, "debug", ntasks=4, time_limit=10), 300.0)
    b = WorkloadJob(PendingJob(2, 1, 60.0, "debug", ntasks=2, time_limit=10), 600.0)
    result = simulate([N1], [DEBUG], POLICY, [b, a])  # any order in, arrivals by submit time
    # A runs 0..300; B waits from 60, told "600" (A's start + its 10-minute limit), and
    # starts at 300 when A ends early, ending 300 + 600 = 900; no pass at 900: nothing pends
    assert result.starts == {1: 0.0, 2: 300.0}
    assert result.ends == {1: 300.0, 2: 900.0}
    assert result.allocs[2] == (NodeAlloc("n1", 2, 200, []),)  # 2 CPUs x 100 MiB
    assert result.estimates == {2: [(60.0, 600.0)]}
    assert result.passes == [0.0, 60.0, 300.0]
    assert result.never_started == []


def test_a_job_that_never_fits_keeps_its_reason():
    big = WorkloadJob(PendingJob(1, 1, 0.0, "debug", ntasks=8, time_limit=1), 60.0)
    result = simulate([N1], [DEBUG], POLICY, [big])
    assert result.never_started == [1]
    assert result.reasons == {1: "BadConstraints"}


@pytest.mark.parametrize(
    "jobs",
    [
        [WorkloadJob(PendingJob(1, 1, 0.0, "debug", time_limit=1), 61.0)],  # over 1 minute
        [WorkloadJob(PendingJob(1, 1, 0.0, "debug", time_limit=1), 0.0)],
        [WorkloadJob(PendingJob(1, 1, 0.0, "debug"), 5.0)] * 2,  # the same id twice
    ],
)
def test_malformed_workloads_are_refused(jobs: list[WorkloadJob]):
    with pytest.raises(SimulationError):
        simulate([N1], [DEBUG], POLICY, jobs)
