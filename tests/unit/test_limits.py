"""QOS limits in the pure scheduler: each reason, charging within a pass, the switch."""

from __future__ import annotations

import dataclasses

import pytest

from slurmlite.config import parse_config
from slurmlite.protocol import NodeAlloc
from slurmlite.scheduler.limits import (
    LimitTracker,
    QosLimits,
    TresLimitError,
    format_tres_limits,
    job_demand,
    parse_tres_limits,
)
from slurmlite.scheduler.snapshot import PartitionView, Policy, RunningJob, Start
from slurmlite.states import REASONS
from tests.builders import a_job, a_node, a_running_job, a_snapshot, an_alloc


def running(job_id: int, user: str = "alice", qos: str = "normal", **held: int) -> RunningJob:
    """A running job on n<id> holding ``cpus``/``mem``/``gpus`` (GPU indices 0..gpus-1)."""
    alloc = an_alloc(
        f"n{job_id}", held.get("cpus", 1), held.get("mem", 0), range(held.get("gpus", 0))
    )
    return a_running_job(job_id, alloc, user=user, qos=qos, partition="debug")


def tracker(*jobs: RunningJob, enforce: bool = True, **limits: object) -> LimitTracker:
    return LimitTracker({"normal": QosLimits("normal", **limits)}, jobs, enforce=enforce)  # type: ignore[arg-type]


# ------------------------------------------------------------------ parsing


def test_tres_limits_parse_names_any_case_and_memory_units_to_mib():
    # mem=16G -> 16 x 1024 = 16384 MiB; GRES/GPU -> gres/gpu
    assert parse_tres_limits("CPU=8,mem=16G,GRES/GPU=4") == {
        "cpu": 8,
        "mem": 16384,
        "gres/gpu": 4,
    }
    assert parse_tres_limits("mem=1T") == {"mem": 1024 * 1024}
    assert parse_tres_limits("mem=500") == {"mem": 500}  # no unit: MiB
    assert parse_tres_limits("node=2,cpu=-1") == {"node": 2}  # -1 clears a limit
    assert parse_tres_limits("") == {} and parse_tres_limits(None) == {}


@pytest.mark.parametrize("text", ["cpu", "cpu=x", "cpu=4G", "bogus=1", "mem=4Q", "cpu=-2"])
def test_unreadable_tres_limits_are_refused(text):
    with pytest.raises(TresLimitError):
        parse_tres_limits(text)


def test_tres_limits_format_back_in_slurm_order_with_memory_units():
    # Slurm's order: cpu, mem, node, then gres; 16384 MiB = 16G
    assert format_tres_limits({"gres/gpu": 4, "mem": 16384, "cpu": 8}) == "cpu=8,mem=16G,gres/gpu=4"
    assert format_tres_limits({"mem": 1500}) == "mem=1500M"


def test_a_jobs_size_is_its_request():
    # -n 4 -c 2 --mem-per-cpu=1000 --gres=gpu:1: 8 CPUs, 8 x 1000 MiB, 1 node, 1 GPU
    job = a_job(1, ntasks=4, cpus_per_task=2, mem_per_cpu=1000, gpus_per_node=1)
    assert job_demand(job) == {"cpu": 8, "mem": 8000, "node": 1, "gres/gpu": 1}
    # -N 2 --gres=gpu:2 --mem=3000: 2 GPUs on each of 2 nodes, 3000 MiB on each
    job = a_job(2, nodes_min=2, gpus_per_node=2, mem_per_node=3000)
    assert job_demand(job) == {"cpu": 2, "mem": 6000, "node": 2, "gres/gpu": 4}


# ------------------------------------------------------------------ reasons


def test_max_jobs_per_user_holds_the_third_job():
    # MaxJobsPerUser=2, alice runs 2: 2 + 1 = 3 > 2; bob runs none
    t = tracker(running(1), running(2), max_jobs_pu=2)
    assert t.reason(a_job(3, user="alice")) == "QOSMaxJobsPerUserLimit"
    assert t.reason(a_job(4, user="bob")) is None


def test_max_gres_per_user_is_the_gpu_cap_per_student():
    # MaxTRESPerUser=gres/gpu=4; alice holds 3 GPUs: 3 + 2 = 5 > 4, 3 + 1 = 4 is allowed
    t = tracker(running(1, gpus=3), max_tres_pu=parse_tres_limits("gres/gpu=4"))
    assert t.reason(a_job(2, user="alice", gpus_per_node=2)) == "QOSMaxGRESPerUser"
    assert t.reason(a_job(3, user="alice", gpus_per_node=1)) is None
    assert t.reason(a_job(4, user="bob", gpus_total=4)) is None


@pytest.mark.parametrize(
    ("limit", "held", "job", "reason"),
    [
        # 6 CPUs held + 4 asked = 10 > 8
        ("cpu=8", {"cpus": 6}, {"ntasks": 4}, "QOSMaxCpuPerUserLimit"),
        # 3000 MiB held + 2 x 1000 = 5000 > 4096 (mem=4G)
        ("mem=4G", {"mem": 3000}, {"ntasks": 2, "mem_per_cpu": 1000}, "QOSMaxMemoryPerUser"),
        # 1 node held + 2 asked = 3 > 2
        ("node=2", {}, {"nodes_min": 2}, "QOSMaxNodePerUserLimit"),
    ],
)
def test_per_user_tres_limits_name_their_resource(limit, held, job, reason):
    t = tracker(running(1, **held), max_tres_pu=parse_tres_limits(limit))
    assert t.reason(a_job(2, user="alice", **job)) == reason


@pytest.mark.parametrize(
    ("limit", "job", "reason"),
    [
        ("cpu=4", {"ntasks": 5}, "QOSMaxCpuPerJobLimit"),
        ("mem=1G", {"mem_per_node": 2000}, "QOSMaxMemoryPerJob"),
        ("node=1", {"nodes_min": 2}, "QOSMaxNodePerJobLimit"),
        ("gres/gpu=2", {"gpus_total": 3}, "QOSMaxGRESPerJob"),
    ],
)
def test_per_job_tres_limits_hold_a_job_too_big_whoever_runs_what(limit, job, reason):
    t = tracker(max_tres_pj=parse_tres_limits(limit))
    assert t.reason(a_job(1, **job)) == reason
    assert t.reason(a_job(2)) is None  # 1 CPU, 1 node, no GPU: within every limit


def test_max_wall_holds_a_longer_or_unlimited_time_limit():
    t = tracker(max_wall=60)
    assert t.reason(a_job(1, time_limit=61)) == "QOSMaxWallDurationPerJobLimit"
    assert t.reason(a_job(2, time_limit=None)) == "QOSMaxWallDurationPerJobLimit"
    assert t.reason(a_job(3, time_limit=60)) is None


def test_every_reason_is_in_the_closed_vocabulary():
    names = {
        "QOSMaxJobsPerUserLimit", "QOSMaxWallDurationPerJobLimit", "QOSMaxSubmitJobPerUserLimit",
        "QOSMaxCpuPerJobLimit", "QOSMaxMemoryPerJob", "QOSMaxNodePerJobLimit", "QOSMaxGRESPerJob",
        "QOSMaxCpuPerUserLimit", "QOSMaxMemoryPerUser", "QOSMaxNodePerUserLimit",
        "QOSMaxGRESPerUser",
    }  # fmt: skip
    assert names <= REASONS


def test_a_job_of_an_unknown_qos_or_a_qos_without_limits_is_never_held():
    t = tracker(running(1), running(2), max_jobs_pu=2)
    assert t.reason(a_job(3, user="alice", qos="other")) is None
    assert LimitTracker({"normal": QosLimits("normal")}, [running(1)]).reason(a_job(2)) is None


# ------------------------------------------------------------ within a pass


def test_a_job_started_in_the_pass_counts_for_the_next_one():
    # MaxTRESPerUser=gres/gpu=2: job 1 starts with 2 GPUs, then job 2 (1 GPU) must wait
    t = tracker(max_tres_pu={"gres/gpu": 2})
    first = a_job(1, user="alice", gpus_per_node=2)
    assert t.reason(first) is None
    t.charge(first, Start(1, (NodeAlloc("n1", 1, 1000, [0, 1]),)))
    assert t.usage("normal", "alice") == (1, {"cpu": 1, "mem": 1000, "node": 1, "gres/gpu": 2})
    assert t.reason(a_job(2, user="alice", gpus_per_node=1)) == "QOSMaxGRESPerUser"


def test_the_placement_given_to_reason_is_what_counts():
    # --exclusive on an 8-CPU node: the request says 1 CPU, the placement 8 > cpu=4
    t = tracker(max_tres_pj={"cpu": 4})
    job = a_job(1, exclusive=True)
    assert t.reason(job) is None
    assert t.reason(job, Start(1, (NodeAlloc("n1", 8, 8000, []),))) == "QOSMaxCpuPerJobLimit"


def test_limits_off_never_name_a_reason():
    # AccountingStorageEnforce without limits: same usage, no reason, charge is harmless
    t = tracker(running(1), running(2), enforce=False, max_jobs_pu=1)
    job = a_job(3, user="alice")
    assert t.reason(job) is None
    t.charge(job, Start(3, (NodeAlloc("n3", 1, 0, []),)))
    assert t.reason(a_job(4, user="alice")) is None


# ----------------------------------------------------------- partition QOS


def test_a_partition_qos_limits_every_job_of_the_partition_over_the_jobs_own_qos():
    # partition gpu has QOS=gpuq (MaxTRESPerUser gres/gpu=2); the job's QOS normal allows 8.
    # The partition QOS is asked first: alice holds 2 GPUs in gpu -> 2 + 1 = 3 > 2.
    qos = {
        "normal": QosLimits("normal", max_tres_pu={"gres/gpu": 8}),
        "gpuq": QosLimits("gpuq", max_tres_pu={"gres/gpu": 2}),
    }
    part = PartitionView("gpu", ("n1",), qos="gpuq")
    held = dataclasses.replace(running(1, gpus=2), partition="gpu")
    t = LimitTracker(qos, [held], partitions=[part])
    assert t.reason(a_job(2, "gpu", user="alice", gpus_per_node=1)) == "QOSMaxGRESPerUser"
    # the same job in another partition only meets normal's 8: 2 + 1 <= 8
    assert t.reason(a_job(3, "debug", user="alice", gpus_per_node=1)) is None


def test_the_jobs_qos_fills_in_what_the_partition_qos_leaves_unset():
    # gpuq sets no MaxJobsPerUser; normal's MaxJobsPerUser=1 still applies
    qos = {"normal": QosLimits("normal", max_jobs_pu=1), "gpuq": QosLimits("gpuq", max_wall=600)}
    part = PartitionView("gpu", ("n1",), qos="gpuq")
    t = LimitTracker(qos, [running(1)], partitions=[part])
    assert t.reason(a_job(2, "gpu", user="alice", time_limit=10)) == "QOSMaxJobsPerUserLimit"
    assert t.reason(a_job(3, "gpu", user="bob", time_limit=601)) == (
        "QOSMaxWallDurationPerJobLimit"
    )


def test_over_part_qos_lets_the_jobs_qos_speak_first():
    # with OverPartQOS on normal, normal's cpu=8 wins over gpuq's cpu=2: 4 <= 8
    qos = {
        "normal": QosLimits("normal", max_tres_pj={"cpu": 8}, flags=frozenset({"OverPartQOS"})),
        "gpuq": QosLimits("gpuq", max_tres_pj={"cpu": 2}),
    }
    t = LimitTracker(qos, [], partitions=[PartitionView("gpu", ("n1",), qos="gpuq")])
    assert t.reason(a_job(1, "gpu", ntasks=4)) is None
    plain = dict(qos, normal=QosLimits("normal", max_tres_pj={"cpu": 8}))
    t = LimitTracker(plain, [], partitions=[PartitionView("gpu", ("n1",), qos="gpuq")])
    assert t.reason(a_job(1, "gpu", ntasks=4)) == "QOSMaxCpuPerJobLimit"


def test_for_snapshot_reads_the_snapshot_and_the_policy_switch():
    qos = {"normal": QosLimits("normal", max_tres_pu={"gres/gpu:a100": 1})}
    nodes = [a_node("n1", gpus=2, gpu_type="a100")]
    gone = dataclasses.replace(running(2, gpus=1), end_time=9_000.0)  # ended: only completing
    on_n1 = dataclasses.replace(running(1, gpus=1), allocs=(an_alloc("n1", 1, 0, [0]),))
    snap = a_snapshot(nodes, now=10_000.0, running=[on_n1, gone], qos=qos)
    t = LimitTracker.for_snapshot(snap, Policy())
    # the running job holds an a100 (its node's type): 1 + 1 > 1
    assert t.reason(a_job(3, user="alice", gpus_per_node=1, gpu_type="a100")) == (
        "QOSMaxGRESPerUser"
    )
    assert t.usage("normal", "alice")[0] == 1  # the completing job 2 no longer counts

    class Off:
        enforce_limits = False

    assert (
        LimitTracker.for_snapshot(snap, Off()).reason(
            a_job(3, user="alice", gpus_per_node=1, gpu_type="a100")
        )
        is None
    )


def test_the_partition_qos_key_is_read_from_slurm_conf():
    cfg = parse_config(
        "NodeName=n1 CPUs=2\nPartitionName=gpu Nodes=n1 QOS=gpuq\nPartitionName=cpu Nodes=n1\n"
    )
    assert [(p.name, p.qos) for p in cfg.partitions] == [("gpu", "gpuq"), ("cpu", "")]
