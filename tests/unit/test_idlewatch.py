"""The idle-GPU state machine (slurmlite.idlewatch) and its policy (slurmlite.idlegpus).

Counters are cumulative, as the agents report them: a GPU sampled 100 times
at 2 % adds util_sum 200 and samples 100.  Reads happen on a FakeClock.
"""

from __future__ import annotations

import pytest

from slurmlite.clock import FakeClock
from slurmlite.config import ConfigError, parse_config
from slurmlite.idlegpus import IdleGpuPolicy, duration, enabled_partitions, policy_for, settings
from slurmlite.idlewatch import Change, IdleWatch, interval

POLICY = IdleGpuPolicy(threshold=5, window=600, grace=120, action="requeue")


class Gpu:
    """One GPU's cumulative counters, fed ``secs`` seconds at a time (one sample a second)."""

    def __init__(self) -> None:
        self.util_sum, self.samples = 0.0, 0

    def run(self, secs: int, util: float) -> None:
        self.util_sum += secs * util
        self.samples += secs


def read(watch, clock, *gpus, policy=POLICY, job=7, restarts=0):  # type: ignore[no-untyped-def]
    counters = {("n1", i): (g.util_sum, g.samples) for i, g in enumerate(gpus)}
    return watch.observe(job, restarts, policy, counters, clock())


def test_idle_for_the_window_flags_then_the_grace_makes_it_due():
    watch, clock, gpu = IdleWatch(), FakeClock(0), Gpu()
    assert read(watch, clock, gpu) is Change.NONE  # t=0: the baseline
    for t in (300, 599):
        gpu.run(t - clock(), 1.0)
        clock.now = t
        assert read(watch, clock, gpu) is Change.NONE  # idle since 0, 599 - 0 < 600
    gpu.run(1, 1.0)
    clock.now = 600
    assert read(watch, clock, gpu) is Change.FLAGGED  # 600 - 0 >= 600
    flag = watch.flag(7)
    assert (flag.idle_since, flag.flagged_at, flag.action_at) == (0, 600, 720)  # 600 + 120
    gpu.run(119, 1.0)
    clock.now = 719
    assert read(watch, clock, gpu) is Change.NONE  # 719 < 720
    gpu.run(1, 1.0)
    clock.now = 720
    assert read(watch, clock, gpu) is Change.DUE
    clock.now = 800
    assert read(watch, clock, gpu) is Change.NONE  # due once


def test_a_busy_interval_clears_the_flag_and_the_window_starts_again():
    watch, clock, gpu = IdleWatch(), FakeClock(0), Gpu()
    read(watch, clock, gpu)
    gpu.run(600, 0.0)
    clock.now = 600
    assert read(watch, clock, gpu) is Change.FLAGGED
    gpu.run(60, 10.0)  # mean of the interval 600..660: 10 % >= 5 %
    clock.now = 660
    assert read(watch, clock, gpu) is Change.CLEARED
    assert watch.flag(7) is None
    gpu.run(599, 0.0)
    clock.now = 1259
    assert read(watch, clock, gpu) is Change.NONE  # idle since 660: 599 s < 600 s
    gpu.run(1, 0.0)
    clock.now = 1260
    assert read(watch, clock, gpu) is Change.FLAGGED


def test_one_busy_gpu_keeps_the_job_busy_and_only_the_interval_counts():
    watch, clock, idle, busy = IdleWatch(), FakeClock(0), Gpu(), Gpu()
    busy.run(3600, 90.0)  # busy for an hour before the first read: that history is not judged
    read(watch, clock, idle, busy)
    idle.run(600, 0.0)
    busy.run(600, 6.0)  # 6 % >= 5 %: the job uses a GPU
    clock.now = 600
    assert read(watch, clock, idle, busy) is Change.NONE
    idle.run(300, 0.0)
    busy.run(300, 4.0)  # both under 5 % over 600..900 (the hour at 90 % is long past)
    clock.now = 900
    assert read(watch, clock, idle, busy) is Change.NONE  # idle since 600: 300 s < 600 s
    idle.run(300, 0.0)
    busy.run(300, 4.9)
    clock.now = 1200
    assert read(watch, clock, idle, busy) is Change.FLAGGED  # 1200 - 600 >= 600


def test_reads_without_new_samples_tell_nothing_but_the_grace_still_runs_out():
    watch, clock, gpu = IdleWatch(), FakeClock(0), Gpu()
    read(watch, clock, gpu)
    clock.now = 900
    assert read(watch, clock, gpu) is Change.NONE  # no heartbeat came: no interval
    gpu.run(600, 0.0)  # the samples of 0..900 arrive at once: one idle interval from 0
    clock.now = 901
    assert read(watch, clock, gpu) is Change.FLAGGED  # 901 - 0 >= 600; due at 1021
    clock.now = 1021
    assert read(watch, clock, gpu) is Change.DUE  # no new samples, but the time is up


def test_warn_is_never_due_and_grace_zero_acts_at_the_flag():
    warn = IdleGpuPolicy(threshold=5, window=60, grace=0, action="warn")
    now = IdleGpuPolicy(threshold=5, window=60, grace=0, action="cancel")
    for policy, expected in ((warn, Change.FLAGGED), (now, Change.DUE)):
        watch, clock, gpu = IdleWatch(), FakeClock(0), Gpu()
        read(watch, clock, gpu, policy=policy)
        gpu.run(60, 0.0)
        clock.now = 60
        assert read(watch, clock, gpu, policy=policy) is expected
        gpu.run(6000, 0.0)
        clock.now = 6060
        assert read(watch, clock, gpu, policy=policy) is Change.NONE
    assert watch.flag(7).action_at == 60  # cancel, grace 0: at the flag


def test_a_new_run_and_a_counter_that_started_over_are_read_afresh():
    watch, clock, gpu = IdleWatch(), FakeClock(0), Gpu()
    read(watch, clock, gpu)
    gpu.run(600, 0.0)
    clock.now = 600
    assert read(watch, clock, gpu) is Change.FLAGGED
    clock.now = 700
    assert read(watch, clock, Gpu(), restarts=1) is Change.NONE  # requeued: a new baseline
    assert watch.flag(7) is None
    # counters that went down (the agent started over) give no interval
    assert interval({("n1", 0): (500.0, 100)}, {("n1", 0): (10.0, 5)}) == {}
    assert interval({}, {("n1", 0): (10.0, 5)}) == {}  # a GPU seen the first time
    assert interval({("n1", 0): (0.0, 0)}, {("n1", 0): (300.0, 100)}) == {("n1", 0): 3.0}
    watch.keep_only(set())
    assert watch.runs == {}


# ----------------------------------------------------------------- the policy


def test_settings_are_checked_and_kept_as_written():
    assert settings("window=2h, action=Cancel") == {"window": "2h", "action": "Cancel"}
    assert settings("OFF") == {"off": ""}
    for bad, word in (
        ("threshold=101", "threshold"),
        ("window=0", "window"),
        ("grace=-5", "grace"),
        ("action=kill", "action"),
        ("idle=5", "'idle=5'"),
        ("window", "'window'"),
    ):
        with pytest.raises(ValueError, match=word):
            settings(bad)
    # Slurm's time format (a bare number is minutes) or a number with a unit
    assert [duration(t) for t in ("120", "30:00", "2:00:00", "1-0", "90s", "2h")] == [
        7200, 1800, 7200, 86400, 90, 7200,
    ]  # fmt: skip


CONF = """
NodeName=g[1-2] Gres=gpu:4
PartitionName=gpu Nodes=ALL Default=YES
PartitionName=interactive Nodes=ALL SlurmliteIdleGpuPolicy=action=warn,threshold=2
PartitionName=bench Nodes=ALL SlurmliteIdleGpuPolicy=off
SlurmliteIdleGpuPolicy=window=60,grace=10:00,action=requeue
"""


def test_partitions_lay_their_keys_over_the_global_policy():
    cfg = parse_config(CONF)
    # window 60 minutes, grace 10 minutes, threshold from the defaults
    assert policy_for(cfg, "gpu") == IdleGpuPolicy(5.0, 3600, 600, "requeue")
    assert policy_for(cfg, "interactive") == IdleGpuPolicy(2.0, 3600, 600, "warn")
    assert policy_for(cfg, "bench") is None
    assert sorted(enabled_partitions(cfg)) == ["gpu", "interactive"]


def test_off_by_default_and_a_partition_may_turn_it_on_alone():
    cfg = parse_config(CONF.replace("SlurmliteIdleGpuPolicy=window", "#"))
    assert policy_for(cfg, "gpu") is None
    assert policy_for(cfg, "interactive") == IdleGpuPolicy(2.0, 7200, 1800, "warn")


def test_a_bad_value_names_its_line():
    with pytest.raises(ConfigError, match="slurm.conf:2: invalid value 'window=soon'"):
        parse_config("NodeName=g1\nSlurmliteIdleGpuPolicy=window=soon\n")


def test_a_qos_layer_is_the_most_specific():
    cfg = parse_config(CONF)
    # global window 60 min, grace 10 min, requeue; the QOS cancels after 30 minutes
    assert policy_for(cfg, "gpu", "window=30,action=cancel") == IdleGpuPolicy(
        5.0, 1800, 600, "cancel"
    )
    assert policy_for(cfg, "gpu", "off") is None  # a QOS exempt everywhere
    # bench is off, but a QOS that says something decides: bench's "off" adds no key
    assert policy_for(cfg, "bench", "threshold=1") == IdleGpuPolicy(1.0, 3600, 600, "requeue")
    with pytest.raises(ValueError, match="action"):
        policy_for(cfg, "gpu", "action=maybe")
