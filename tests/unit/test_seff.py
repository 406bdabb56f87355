"""seff's report and sacct's usage columns, as pure functions of a job and its usage.

The job used throughout: 4 cores and 4 GPUs on g1 for 100 s (start 1000, end
1100) with 8000 MiB; the agent measured 100 s of CPU time, a 2 GiB memory
peak, and only GPU 0 busy (90 % on average, 2 GiB of its 80 GiB).
"""

from __future__ import annotations

from cli import sacct_format as af
from cli.sacct_usage import exact_units, total_cpu_str
from slurmlite.config import ConfigError, parse_config
from slurmlite.protocol import JobInfo, NodeAlloc, StepInfo, from_dict, to_dict
from slurmlite.seff import kbytes_str, seff_text, time_str
from slurmlite.usage import GpuUsage, NodeUsage, UsageSummary, combine

GIB = 1 << 30


def gpu(index: int, util: float, mem_mib: float) -> GpuUsage:
    return GpuUsage(index=index, samples=4, util_sum=4 * util, util_max=util,
                    mem_sum_mib=4 * mem_mib, mem_max_mib=mem_mib, mem_total_mib=81920.0)  # fmt: skip


def job(state: str = "COMPLETED", exit_code: int = 0, cpus: int = 4, gpus: int = 4) -> JobInfo:
    summary = UsageSummary(42, 0, samples=4, first_sample=1025.0, last_sample=1100.0,
                           cpu_seconds=100.0, max_rss_bytes=2 * GIB, rss_sum_bytes=4 * 1.5 * GIB,
                           gpus=[gpu(i, 90.0 if i == 0 else 0.0, 2048.0 if i == 0 else 0.0)
                                 for i in range(gpus)])  # fmt: skip
    return JobInfo(
        job_id=42, name="train", user="alice", uid=1001, gid=1001, group="alice",
        account="lab", qos="normal", partition="gpu", state=state, flags=[], reason="None",
        priority=1, submit_time=900.0, work_dir="/w", submit_dir="/w", num_nodes=1,
        num_cpus=cpus, num_tasks=1, cpus_per_task=cpus, time_limit=60, start_time=1000.0,
        end_time=1100.0 if state not in ("RUNNING", "PENDING") else None, exit_code=exit_code,
        gpus=gpus, nodes=["g1"], alloc=[NodeAlloc("g1", cpus, 8000, list(range(gpus)))],
        steps=[StepInfo(42, "batch", "batch", state, exit_code, 1000.0, 1100.0, ["g1"], cpus)],
        usage=[NodeUsage("g1", summary)],
    )  # fmt: skip


def usage(j: JobInfo):  # type: ignore[no-untyped-def]
    return combine(j.job_id, j.restarts, j.usage)


def test_seff_prints_slurms_lines_then_the_gpus_and_one_advice():
    j = job()
    assert seff_text(j, usage(j), cluster="lab").splitlines() == [
        "Job ID: 42",
        "Cluster: lab",
        "User/Group: alice/alice",
        "State: COMPLETED (exit code 0)",
        "Nodes: 1",
        "Cores per node: 4",
        "CPU Utilized: 00:01:40",  # 100 s
        "CPU Efficiency: 25.00% of 00:06:40 core-walltime",  # 100 / (100 s x 4 cores)
        "Job Wall-clock time: 00:01:40",
        "Memory Utilized: 2.00 GB",
        # 2 GiB = 2097152 KB over 8000 MiB = 8192000 KB -> 25.60 %
        "Memory Efficiency: 25.60% of 7.81 GB (7.81 GB/node)",
        "GPU 0 on g1: utilization 90.00% (max 90%), memory 2.00 GB of 80.00 GB (2.50%)",
        "GPU 1 on g1: utilization 0.00% (max 0%), memory 0.00 MB of 80.00 GB (0.00%)",
        "GPU 2 on g1: utilization 0.00% (max 0%), memory 0.00 MB of 80.00 GB (0.00%)",
        "GPU 3 on g1: utilization 0.00% (max 0%), memory 0.00 MB of 80.00 GB (0.00%)",
        "GPU Utilization: 22.50% average over 4 GPUs (time a kernel ran)",  # 90 / 4
        "GPU Memory Efficiency: 0.62% (peak used over memory held)",  # 2048 / (4 x 81920)
        "Advice: this job used 1 of its 4 GPUs; ask for --gpus=1",
    ]


def test_state_lines_follow_slurms_seff():
    failed = seff_text(job("FAILED", exit_code=3 << 8), None)
    assert "State: FAILED (exit code 3)" in failed and "CPU Utilized: 00:00:00" in failed
    running = seff_text(job("RUNNING"), None, now=1050.0).splitlines()
    assert running[2] == "State: RUNNING" and "Job Wall-clock time: 00:00:50" in running
    assert running[-1].startswith("WARNING: Efficiency statistics can only be obtained after")
    pending = seff_text(job("PENDING"), None).splitlines()
    assert pending[-1] == "Efficiency not available for jobs in the PENDING state."
    assert seff_text(job(cpus=1, gpus=0), None).splitlines()[3] == "Cores: 1"  # no Cluster line


def test_advice_for_busy_but_waiting_gpus_and_for_idle_cores():
    j = job(gpus=1)
    j.usage[0].summary.gpus = [gpu(0, 30.0, 100.0)]
    assert seff_text(j, usage(j)).splitlines()[-1] == (
        "Advice: the GPUs ran kernels only 30% of the time; find what they wait for "
        "(data loading, CPU, I/O)"
    )
    cpu_only = job(cpus=8, gpus=0)  # 100 s CPU in 100 s wall on 8 cores: 1 core busy
    assert seff_text(cpu_only, usage(cpu_only)).splitlines()[-1] == (
        "Advice: this job kept 1.0 of its 8 cores busy on average; ask for 1"
    )


def test_seffs_units():
    assert [time_str(s) for s in (59, 3723, 93784)] == ["00:00:59", "01:02:03", "1-02:03:04"]
    assert [kbytes_str(k) for k in (0, 1536, 1048576)] == ["0.00 MB", "1.50 MB", "1.00 GB"]


# ------------------------------------------------------------------- sacct


def test_sacct_units_and_cpu_times():
    assert [exact_units(b) for b in (0, 1159168, 2 * GIB, 1500)] == ["0", "1132K", "2G", "1500"]
    assert [total_cpu_str(s) for s in (0, 3.277, 3723.5)] == ["00:00:00", "00:03.277", "01:02:03"]


def test_sacct_shows_the_usage_on_the_batch_step_and_total_cpu_on_the_job():
    j = from_dict(JobInfo, to_dict(job()))  # as it travels
    names = (
        "jobid,maxrss,averss,avecpu,totalcpu,cputime,tresusageinave,tresusageinmax,tresusageintot"
    )
    cols = af.parse_fields(names + ",")
    ctx = af.Ctx(now=2000.0)
    row = af.row_values(cols, j, None, ctx)
    assert row[:6] == ["42", None, None, None, "00:01:40", 400]  # CPUTime: 100 s x 4 cores
    step = af.row_values(cols, j, j.steps[0], ctx)
    assert step[:5] == ["42.batch", "2G", "1.50G", "00:01:40", "00:01:40"]
    # GPU memory in bytes and utilization summed over the step's GPUs (only GPU 0 busy)
    assert step[6:] == [
        "cpu=00:01:40,energy=0,gres/gpumem=2147483648,gres/gpuutil=90,mem=1610612736",
        "cpu=00:01:40,energy=0,gres/gpumem=2147483648,gres/gpuutil=90,mem=2147483648",
        "cpu=00:01:40,energy=0,gres/gpumem=2147483648,gres/gpuutil=90,mem=2147483648",
    ]
    unmeasured = from_dict(JobInfo, {**to_dict(job()), "usage": []})
    step = af.row_values(cols, unmeasured, unmeasured.steps[0], ctx)
    assert step[1:] == [None, None, None, "00:00:00", 400, "energy=0", None, "energy=0"]


# ------------------------------------------------------------------ config


def test_job_acct_gather_frequency_takes_slurms_forms():
    def freq(value: str | None) -> int:
        line = f"JobAcctGatherFrequency={value}\n" if value is not None else ""
        return parse_config(line + "NodeName=n1 CPUs=1\n").job_acct_gather_frequency

    assert [freq(v) for v in (None, "10", "task=5,energy=0", "energy=60", "0")] == [
        30,
        10,
        5,
        30,
        0,
    ]
    try:
        freq("task=soon")
    except ConfigError as e:
        assert "invalid value 'soon' for JobAcctGatherFrequency" in str(e)
    else:
        raise AssertionError("task=soon accepted")
