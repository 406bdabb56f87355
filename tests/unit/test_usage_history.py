"""Utilization over time from the agents' cumulative summaries, as they arrive."""

from __future__ import annotations

from controller.accounting import usage_history
from controller.accounting.usage_history import UsageHistory
from slurmlite.clock import FakeClock
from slurmlite.usage import GpuUsage, UsageSummary


def summary(
    samples: int, util_sum: float, *, run: int = 0, first: float = 100.0, job: int = 7
) -> UsageSummary:
    """Job ``job``'s GPU 0, sampled every 30 s since ``first``."""
    last = first + 30.0 * (samples - 1)
    gpu = GpuUsage(0, samples, util_sum)
    return UsageSummary(job, run, samples, first_sample=first, last_sample=last, gpus=[gpu])


def test_each_point_is_the_mean_of_the_interval_since_the_previous_summary():
    h = UsageHistory(FakeClock(1000.0))
    h.add("n1", [summary(10, 900.0)])  # from the run's start: 900 / 10 = 90 %
    h.add("n1", [summary(10, 900.0)])  # the same summary again (a retry): nothing new
    h.add("n1", [summary(20, 1100.0)])  # (1100 - 900) / (20 - 10) = 20 %
    h.add("n1", [summary(15, 1000.0)])  # a late report, overtaken: nothing
    # times: the last sample of each, 100 + 30 * 9 = 370 and 100 + 30 * 19 = 670
    assert h.series(7, 0, "n1", 0) == [(370.0, 90.0), (670.0, 20.0)]
    h.add("n1", [summary(5, 50.0, run=1)])  # a requeued run starts its own line
    assert h.series(7, 1, "n1", 0) == [(220.0, 10.0)]
    assert h.series(7, 0, "n2", 0) == [] and len(h) == 2


def test_counters_that_start_again_are_a_new_baseline():
    h = UsageHistory(FakeClock(1000.0))
    h.add("n1", [summary(20, 1000.0)])  # 50 %
    # the agent lost its counters: 4 samples since 5000, 320 / 4 = 80 %
    h.add("n1", [summary(4, 320.0, first=5000.0)])
    h.add("n1", [summary(6, 340.0, first=5000.0)])  # (340 - 320) / 2 = 10 %
    assert [p for _, p in h.series(7, 0, "n1", 0)] == [50.0, 80.0, 10.0]


def test_a_ring_keeps_the_last_points_and_goes_some_time_after_its_job(monkeypatch):
    monkeypatch.setattr(usage_history, "MAX_POINTS", 3)
    clock = FakeClock(1000.0)
    h = UsageHistory(clock)
    for n in range(1, 6):  # 5 intervals at 10, 20, 30, 40, 50 %: each adds 10 * n
        h.add("n1", [summary(n, 10.0 * n * (n + 1) / 2)])
    assert [p for _, p in h.series(7, 0, "n1", 0)] == [30.0, 40.0, 50.0]
    clock.advance(usage_history.KEEP_SECONDS - 1)
    h.add("n1", [summary(1, 99.0, job=8)])  # job 7 ended an hour ago, less one second
    assert len(h) == 2
    clock.advance(usage_history.PRUNE_EVERY)
    h.add("n1", [summary(2, 198.0, job=8)])  # job 8 still reports: only job 7 goes
    assert h.series(7, 0, "n1", 0) == [] and len(h.series(8, 0, "n1", 0)) == 2


def test_the_number_of_rings_is_bounded_least_recently_fed_first(monkeypatch):
    monkeypatch.setattr(usage_history, "MAX_GPUS", 2)
    h = UsageHistory(FakeClock(1000.0))
    for job in (1, 2):
        h.add("n1", [summary(1, 10.0, job=job)])
    h.add("n1", [summary(2, 20.0, job=1)])  # job 1 fed again: job 2 is now the oldest
    h.add("n1", [summary(1, 30.0, job=3)])
    assert len(h) == 2 and h.series(2, 0, "n1", 0) == [] and h.series(1, 0, "n1", 0)


def test_gpus_never_sampled_have_no_line():
    h = UsageHistory(FakeClock(1000.0))
    h.add("n1", [UsageSummary(7, 0, 0, gpus=[GpuUsage(0)])])
    assert len(h) == 0
