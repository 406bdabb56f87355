"""The dashboard's small memories: utilization intervals from running totals, login links."""

from __future__ import annotations

from controller.api.ui.sparkline import UsageHistory, spark_svg
from controller.api.ui.tokens import UiTokens
from slurmlite.clock import FakeClock
from slurmlite.usage import GpuUsage, JobUsage


def usage(samples: int, util_sum: float, run: int = 0) -> JobUsage:
    return JobUsage(job_id=7, restarts=run, gpus=[("n1", GpuUsage(0, samples, util_sum))])


def test_intervals_are_differences_of_the_running_totals():
    h = UsageHistory()
    h.observe([usage(10, 900.0)])  # first reading: the run's mean so far, 90 %
    h.observe([usage(10, 900.0)])  # the same report again: nothing new
    h.observe([usage(20, 1100.0)])  # (1100 - 900) / (20 - 10) = 20 %
    assert h.series(7, 0, "n1", 0) == [90.0, 20.0]
    h.observe([usage(5, 50.0, run=1)])  # a requeued run starts its own line
    assert h.series(7, 1, "n1", 0) == [10.0]


def test_the_sparkline_is_numbers_only_and_says_the_latest_value():
    svg = spark_svg([90.0, 20.0])
    assert svg.startswith("<svg") and "20 % now" in svg
    assert spark_svg([]) == ""


def test_a_link_is_good_once_and_for_two_minutes():
    clock = FakeClock(1000.0)
    t = UiTokens(clock)
    first, _ = t.issue_link(1001, 1001)
    assert t.redeem(first) == (1001, 1001)
    assert t.redeem(first) is None  # used up
    late, expires = t.issue_link(1001, 1001)
    assert expires == 1120.0
    clock.advance(120)
    assert t.redeem(late) is None
    sid = t.open_session(1001, 1001)
    assert t.session(sid) is not None and t.session("guess") is None
    clock.advance(12 * 3600)
    assert t.session(sid) is None
