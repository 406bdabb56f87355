"""``scontrol show`` records against Slurm 22.05's golden outputs, byte for byte.

Records are built from the golden capture's data (alice uid 1001, nodes n1/n2
with 2 CPUs, 4000 MB and 2 GPUs, partitions debug and long); TZ is UTC and
``now`` is 02:29:19, the moment of the live-queue captures.
"""

from __future__ import annotations

import calendar
import dataclasses
import os
import time

import pytest

from cli import scontrol_show as show
from slurmlite.protocol import JobInfo, NodeAlloc, NodeInfo, PartitionInfo
from tests.golden_path import GOLDEN


def at(hms: str) -> float:
    h, m, s = map(int, hms.split(":"))
    return float(calendar.timegm((2026, 11, 30, h, m, s)))


NOW = at("02:29:19")


def stdout_of(name: str) -> str:
    """The stdout part of a golden file (between the command and ``[exit``/``[stderr]``)."""
    lines = (GOLDEN / name).read_text().split("\n")[1:]
    end = next(i for i, line in enumerate(lines) if line.startswith(("[exit ", "[stderr]")))
    return "".join(line + "\n" for line in lines[:end])


def job(job_id: int, name: str, state: str, reason: str, submit: str, **kw: object) -> JobInfo:
    extra = {k: kw.pop(k) for k in ("array_task_str", "dependency") if k in kw}
    fields: dict[str, object] = dict(
        job_id=job_id, name=name, user="alice", uid=1001, gid=1001, group="alice",
        account="acct_a", qos="normal", partition="debug", state=state, flags=[],
        reason=reason, priority=4725, submit_time=at(submit), eligible_time=at(submit),
        work_dir="/home/alice/work", submit_dir="/home/alice/work", num_nodes=1,
        num_cpus=1, num_tasks=1, cpus_per_task=1, time_limit=None, mem_per_cpu=1000,
    )  # fmt: skip
    fields.update(kw)
    info = JobInfo(**fields)  # type: ignore[arg-type]
    info.alloc_node, info.alloc_sid = "localhost", 2327  # type: ignore[attr-defined]
    for key, value in extra.items():
        setattr(info, key, value)
    return info


JOBS = {
    50: job(50, "big-running", "RUNNING", "None", "02:29:09", priority=5350,
            start_time=at("02:29:10"), last_sched_eval=at("02:29:10"), nodes=["n2", "n1"],
            num_nodes=2, num_cpus=4, num_tasks=2, exclusive=True, batch_host="n1",
            alloc=[NodeAlloc("n1", 2, 2000, [0, 1]), NodeAlloc("n2", 2, 2000, [0, 1])]),
    51: job(51, "wants-2nodes", "PENDING", "Priority", "02:29:10", priority=5350,
            last_sched_eval=at("02:29:13"), num_nodes=2, nodes_max=2, num_cpus=2, num_tasks=2),
    53: job(53, "after-big", "PENDING", "Dependency", "02:29:10", eligible_time=None,
            last_sched_eval=at("02:29:10"), dependency="afterok:50(unfulfilled)"),
    54: job(54, "held", "PENDING", "JobHeldUser", "02:29:10", priority=0, eligible_time=None,
            last_sched_eval=at("02:29:10")),
    56: job(56, "gpu-job", "PENDING", "Resources", "02:29:10", priority=5725, gpus=2,
            last_sched_eval=at("02:29:13"), tres_per_node="gres:gpu:2"),
    57: job(57, "arr", "PENDING", "Priority", "02:29:10", eligible_time=at("02:29:13"),
            last_sched_eval=at("02:29:13"), array_job_id=57, array_task_str="0-9%2"),
    65: job(65, "ok", "COMPLETED", "None", "02:29:33", start_time=at("02:29:34"),
            end_time=at("02:29:34"), last_sched_eval=at("02:29:34"), nodes=["n1"], batch_host="n1",
            exit_code=0),
    67: job(67, "fail3", "FAILED", "NonZeroExitCode", "02:29:33", start_time=at("02:29:34"),
            end_time=at("02:29:34"), last_sched_eval=at("02:29:34"), nodes=["n2"], batch_host="n2",
            exit_code=3 << 8),  # "exit 3" is wait status 768 -> ExitCode=3:0
    18: job(18, "tmo", "TIMEOUT", "TimeLimit", "02:27:34", start_time=at("02:27:34"),
            end_time=at("02:28:43"), last_sched_eval=at("02:27:34"), nodes=["n1"], batch_host="n1",
            exit_code=15, time_limit=1, command="/home/alice/work/timeout_job.sh"),
}  # fmt: skip


def node(name: str, port: int, boot: str, start: str, busy: str) -> NodeInfo:
    return NodeInfo(
        name=name, addr="127.0.0.1", hostname=name, port=port, cpus=2, real_memory=4000,
        gres="gpu:2", gpus=2, state="ALLOCATED", flags=[], alloc_cpus=2, alloc_mem=2000,
        alloc_gpus=[0, 1], partitions=["debug", "long"], boot_time=at(boot),
        slurmd_start_time=at(start), last_busy_time=at(busy), version="22.05.8", arch="x86_64",
        os="Linux 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0", cpu_load=1.68, free_mem=23494,
    )  # fmt: skip


NODES = [
    node("n1", 6818, "01:52:11", "02:17:43", "02:29:04"),
    node("n2", 6922, "01:52:12", "02:17:44", "02:28:43"),  # not SlurmdPort: shows Port=
]
PARTS = [
    PartitionInfo("debug", ["n1", "n2"], True, None, None, "UP", 1, 1, 4, 2, 8000, 4),
    PartitionInfo("long", ["n1", "n2"], False, None, None, "UP", 10, 1, 4, 2, 8000, 4),
]


@pytest.fixture(autouse=True)
def utc():
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    os.environ.pop("SLURM_TIME_FORMAT", None)
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


LATER = at("02:31:00")  # the 60_ captures ran after those jobs had ended


def variant(info: JobInfo, **changes: object) -> JobInfo:
    """A copy with ``changes``, keeping the extra attributes (alloc_node...)."""
    copy = dataclasses.replace(info, **changes)  # type: ignore[arg-type]
    for key in ("alloc_node", "alloc_sid", "dependency", "array_task_str"):
        if hasattr(info, key):
            setattr(copy, key, getattr(info, key))
    return copy


@pytest.mark.parametrize(
    ("job_id", "golden"),
    [
        (50, "50_scontrol_show_job_running.txt"),  # BatchHost line, TRES from the allocation
        (51, "50_scontrol_show_job_pending_resources.txt"),  # NumNodes=2-2
        (53, "50_scontrol_show_job_pending_dependency.txt"),  # EligibleTime=Unknown
        (54, "50_scontrol_show_job_held.txt"),
        (56, "50_scontrol_show_job_gpu_pending.txt"),  # TresPerNode after Power=
        (57, "50_scontrol_show_job_array_pending.txt"),  # slurm-57_4294967294.out
        (65, "60_scontrol_show_job_completed.txt"),
        (67, "60_scontrol_show_job_failed.txt"),
        (18, "60_scontrol_show_job_timeout.txt"),  # RunTime 69 s, TimeLimit 1 min
    ],
)
def test_job_record_matches_golden(job_id, golden):
    now = LATER if golden.startswith("60_") else NOW
    assert show.job_text(JOBS[job_id], now) == stdout_of(golden)


def test_end_time_unknown_while_an_unlimited_job_may_still_run():
    # Slurm prints Unknown for an unlimited job whose end lies after "now"
    assert "EndTime=Unknown " in show.job_text(JOBS[65], at("02:29:30"))


def test_job_one_liner_matches_golden():
    assert show.job_text(JOBS[50], NOW, one_liner=True) == stdout_of(
        "50_scontrol_show_job_oneliner.txt"
    )


def test_job_details_add_the_derived_exit_code():
    lines = show.job_lines(JOBS[67], NOW, details=True)
    assert lines[4].endswith("ExitCode=3:0") and lines[5] == "DerivedExitCode=0:0"


def test_job_with_a_time_limit_shows_its_expected_end():
    running = variant(JOBS[50], time_limit=90)
    text = show.job_text(running, NOW)
    # 02:29:10 + 90 min = 03:59:10; the limit prints in the fixed style
    assert "StartTime=2026-11-30T02:29:10 EndTime=2026-11-30T03:59:10 Deadline=N/A" in text
    assert "TimeLimit=01:30:00" in text


def test_state_description_replaces_spaces():
    pending = variant(JOBS[56], state_desc="ReqNodeNotAvail, UnavailableNodes:n1")
    assert "Reason=ReqNodeNotAvail,_UnavailableNodes:n1 Dependency" in show.job_text(pending, NOW)


def test_node_records_match_golden():
    text = "".join(show.node_text(n, slurmd_port=6818) for n in NODES)
    assert text == stdout_of("50_scontrol_show_node.txt")


def test_node_one_liner_matches_golden():
    text = show.node_text(NODES[0], one_liner=True, slurmd_port=6818)
    assert text == stdout_of("50_scontrol_show_node_n1_oneliner.txt")


def test_drained_node_shows_state_and_reason():
    drained = NodeInfo(
        name="n3", addr="n3", hostname="n3", port=6818, cpus=4, real_memory=1000, gres="(null)",
        gpus=0, state="IDLE", flags=["DRAIN"], reason="disk full", reason_user="root",
        reason_time=at("02:00:00"),
    )  # fmt: skip
    lines = show.node_lines(drained, 6818, layout=(1, 2, 2, 1))
    assert lines[0] == "NodeName=n3 CoresPerSocket=2 "
    assert "Sockets=2 Boards=1" in lines[6]
    assert lines[7].startswith("State=IDLE+DRAIN ThreadsPerCore=1")
    assert lines[-1] == "Reason=disk full [root@2026-11-30T02:00:00]"
    assert "AllocTRES=" in lines and "CPULoad=N/A" in lines[1] and "FreeMem=N/A" in lines[6]


def test_load_keeps_two_decimals_and_an_unset_last_busy_time_is_unknown():
    quiet = dataclasses.replace(NODES[0], cpu_load=0.5, free_mem=0, last_busy_time=None)
    lines = show.node_lines(quiet, 6818)
    assert lines[1].endswith(" CPULoad=0.50")  # Slurm prints the load with %.2f
    assert " FreeMem=0 " in lines[7]  # none free is a value, not N/A
    assert "LastBusyTime=Unknown" in lines


def test_partition_records_match_golden():
    assert "".join(show.partition_text(p) for p in PARTS) == stdout_of(
        "50_scontrol_show_partition.txt"
    )


def test_partition_limits_in_the_fixed_style():
    part = PartitionInfo("short", ["n1"], False, max_time=30, default_time=10, state="DOWN")
    lines = show.partition_lines(part)
    assert lines[3].startswith("DefaultTime=00:10:00 ")
    assert " MaxTime=00:30:00 " in lines[4] and lines[8].startswith("State=DOWN")


def test_partition_shows_its_qos():
    part = PartitionInfo("gpu", ["n1"], False, None, None, "UP", qos="gpuq")
    assert show.partition_lines(part)[2].endswith(" QoS=gpuq")  # N/A without one (golden)


def test_config_listing():
    text = show.config_text([("ClusterName", "anchor"), ("MinJobAge", "300 sec")], NOW)
    assert text == (
        "Configuration data as of 2026-11-30T02:29:19\n"
        "ClusterName             = anchor\n"  # names padded to 23 columns
        "MinJobAge               = 300 sec\n"
    )


def test_output_paths_expand_patterns_relative_to_workdir():
    info = variant(JOBS[65], std_out="logs/%x-%j.out", std_err="/tmp/%u.err")
    assert show.std_paths(info) == (
        "/tmp/alice.err",
        "/dev/null",
        "/home/alice/work/logs/ok-65.out",
    )
