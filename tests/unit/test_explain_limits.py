"""``explain`` of jobs that cannot run now or ever: who counts as ahead, ``never`` with
the one limit to fix first and the request that fits, and the user's own QOS limit.

Snapshots come from ``tests.builders``; the plan from backfill (``POLICY``'s
SchedulerType), as in ``test_explain.py``.
"""

from __future__ import annotations

from slurmlite.protocol_policy import JobExplanation
from slurmlite.scheduler.explain import explain
from slurmlite.scheduler.limits import QosLimits
from slurmlite.scheduler.snapshot import Snapshot
from tests.builders import a_job, a_node, a_partition, a_policy, a_running_job, a_snapshot, an_alloc

NOW = 36_000.0
HOUR = 3600.0
POLICY = a_policy(def_mem_per_cpu=1000)
TWO_GPU_NODES = [a_node(f"n{i}", cpus=16, mem=64000, gpus=8) for i in (1, 2)]


def _explain(snap: Snapshot, job_id: int, viewer: str | None = None) -> JobExplanation:
    return explain(snap, POLICY, job_id, viewer=viewer)


def _one(job, *, max_time: int | None = None, running=(), qos=None) -> JobExplanation:  # type: ignore[no-untyped-def]
    parts = [a_partition("debug", ["n1", "n2"], max_time=max_time)]
    snap = a_snapshot(TWO_GPU_NODES, [job], parts, NOW, running=running, qos=qos)
    return _explain(snap, job.job_id)


# ------------------------------------------------------------- who is ahead


def test_jobs_that_cannot_run_now_are_not_ahead_nor_blockers():
    # debug: n1 (4 CPUs); other: n2, where alice's job 1 runs.  QOS normal lets a user
    # run one job.  Above bob's job 6 (1 CPU) wait: alice's job 2 (QOS-limited), job 3
    # (held), job 4 (dependency), job 7 (begin time tomorrow) and job 5, which takes all
    # of n1 now.  Only job 5 is ahead of job 6, and only job 5 blocks it.
    parts = [a_partition("debug", ["n1"]), a_partition("other", ["n2"])]
    jobs = [
        a_job(2, user="alice", priority=50, time_limit=30),
        a_job(3, user="carol", priority=40, held="JobHeldUser", time_limit=30),
        a_job(4, user="dave", priority=35, external_reason="Dependency", time_limit=30),
        a_job(7, user="erin", priority=32, begin_time=NOW + 24 * HOUR, time_limit=30),
        a_job(5, user="carol", priority=30, ntasks=4, time_limit=60),
        a_job(6, user="bob", priority=10, time_limit=30),
    ]
    alice = a_running_job(1, an_alloc("n2"), user="alice", partition="other", ends_in=HOUR, now=NOW)
    qos = {"normal": QosLimits("normal", max_jobs_pu=1)}
    snap = a_snapshot([a_node("n1"), a_node("n2")], jobs, parts, NOW, running=[alice], qos=qos)
    out = _explain(snap, 6)
    assert out.queue is not None and out.queue.ahead_on_nodes == 1
    assert [(b.job_id, b.kind) for b in out.blockers] == [(5, "starting")]
    assert out.never == []
    # alice's own job waits for her limit, which the report names
    two = _explain(snap, 2, viewer="alice")
    assert two.reason == "QOSMaxJobsPerUserLimit"
    assert two.user_limit == (
        "your QOS normal allows 1 running job per user; 1 of your jobs (1) is running"
    )


# ------------------------------------------------------------------- never


def test_more_nodes_than_the_partition_has_is_never_with_the_node_count_to_ask():
    busy = a_running_job(1, an_alloc("n1", 16, 0, range(8)), user="ann", ends_in=HOUR, now=NOW)
    out = _one(a_job(9, nodes_min=4), running=[busy])
    assert out.reason == "PartitionNodeLimit" and out.estimated_start is None
    assert out.never == ["partition debug has 2 nodes; ask for -N 2 or fewer"]
    assert out.blockers == []  # job 1's end would not help: it is not listed
    assert "--nodes=2" in [s.flag for s in out.suggestions]  # verified by the pass
    assert out.notes[0].startswith("as asked it can never run")


def test_more_gpus_per_node_than_any_node_has_names_the_largest_node_and_the_spread():
    out = _one(a_job(9, gpus_per_node=9))
    assert out.reason == "BadConstraints"
    assert out.never == [
        "the largest node of partition debug has 8 GPUs; ask for --gpus-per-node=8 or "
        "fewer, or spread with -N 2 --gpus-per-node=5"
    ]


def test_more_gpus_in_all_than_its_nodes_can_hold_offers_fewer_or_more_nodes():
    out = _one(a_job(9, gpus_total=9, nodes_max=1))
    assert out.never == [
        "the largest node of partition debug has 8 GPUs; ask for --gpus=8 or fewer, "
        "or spread with -N 2"
    ]


def test_more_memory_than_any_node_has_names_the_memory_to_ask():
    out = _one(a_job(9, mem_per_node=100_000))
    assert out.never == [
        "the largest node of partition debug has 64000 MiB of memory; ask for --mem=64000M or less"
    ]
    per_cpu = _one(a_job(9, ntasks=4, nodes_max=1, mem_per_cpu=20_000))
    assert per_cpu.never == [
        "the largest node of partition debug has 64000 MiB of memory for 4 CPUs; "
        "ask for --mem-per-cpu=16000M or less"
    ]


def test_more_cpus_per_task_than_any_node_has():
    out = _one(a_job(9, cpus_per_task=40))
    assert out.never == [
        "the largest node of partition debug has 16 CPUs; ask for --cpus-per-task=16 or fewer"
    ]


def test_time_over_max_time_is_never_with_the_max_time_to_ask():
    out = _one(a_job(9, time_limit=120), max_time=60)
    assert out.reason == "PartitionTimeLimit"
    assert out.never == [
        "partition debug allows at most 1:00:00 (MaxTime); ask for --time=1:00:00 or less"
    ]


def test_several_limits_come_in_the_order_that_leads_to_running():
    # Slurm's reason is PartitionTimeLimit, but fixing the time alone would leave it at
    # PartitionNodeLimit, then BadConstraints: the node count comes first, then the
    # GPUs (for the 2 nodes it can have), then the time
    out = _one(a_job(9, nodes_min=4, gpus_per_node=9, time_limit=120), max_time=60)
    assert out.reason == "PartitionTimeLimit"
    assert out.never == [
        "partition debug has 2 nodes; ask for -N 2 or fewer",
        "the largest node of partition debug has 8 GPUs; ask for --gpus-per-node=8 or fewer",
        "partition debug allows at most 1:00:00 (MaxTime); ask for --time=1:00:00 or less",
    ]


def test_qos_limits_no_running_job_is_needed_to_break_are_never():
    qos = {"normal": QosLimits("normal", max_wall=60, max_tres_pu={"gres/gpu": 4})}
    out = _one(a_job(9, gpus_per_node=6, time_limit=120), qos=qos)
    assert out.never == [
        "QOS normal allows at most 1:00:00 (MaxWall); ask for --time=1:00:00 or less",
        "QOS normal allows at most 4 GPUs per user (MaxTRESPerUser); this job alone asks "
        "for 6: ask for 4 or fewer",
    ]


def test_a_job_that_fits_is_not_never():
    assert _one(a_job(9, nodes_min=2, gpus_per_node=8)).never == []


# ------------------------------------------------------- the user's own limit


def test_a_gpu_cap_per_user_names_the_jobs_holding_it_to_their_owner_and_others():
    qos = {"normal": QosLimits("normal", max_tres_pu={"gres/gpu": 4})}
    held = [
        a_running_job(i, an_alloc(f"n{i}", 1, 0, range(2)), user="alice", ends_in=HOUR, now=NOW)
        for i in (1, 2)
    ]
    parts = [a_partition("debug", ["n1", "n2"])]
    snap = a_snapshot(TWO_GPU_NODES, [a_job(3, user="alice", gpus_per_node=1)], parts, NOW,
                      running=held, qos=qos)  # fmt: skip
    out = _explain(snap, 3, viewer="alice")
    assert out.reason == "QOSMaxGRESPerUser" and out.never == []
    assert out.user_limit == (
        "your QOS normal allows 4 GPUs per user; 2 of your running jobs (1,2) hold 4 "
        "and this job asks for 1"
    )
    other = _explain(snap, 3, viewer="root").user_limit
    assert other.startswith("alice's QOS normal allows 4 GPUs per user; 2 of alice's")
