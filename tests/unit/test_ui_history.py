"""The dashboard's small pieces: the sparkline's SVG, login links."""

from __future__ import annotations

from controller.api.ui.sparkline import spark_svg
from controller.api.ui.tokens import UiTokens
from slurmlite.clock import FakeClock


def test_the_sparkline_is_numbers_only_and_says_the_latest_value():
    svg = spark_svg([90.0, 20.0])
    assert svg.startswith("<svg") and "20 % now" in svg
    assert 'points="0.0,3.2 120.0,18.6"' in svg  # 23 - 0.9 * 22, 23 - 0.2 * 22
    assert "last 1 readings: 50 % now" in spark_svg([50.0])  # drawn flat, counted once
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
