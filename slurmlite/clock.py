"""Time as a parameter (DESIGN.md §4 rule 2).

Mechanism code takes a ``clock`` callable returning Unix seconds; production
passes ``system_clock``, tests and the simulator a ``FakeClock`` they move by
hand.  Policy code never calls either: ``now`` arrives inside its snapshot.

    clock = FakeClock(1000.0)
    clock()          # 1000.0
    clock.advance(61)
    clock()          # 1061.0

``Clock`` names the type: any callable returning seconds.  ``system_clock``
gives Unix seconds (time stamps, expiries); code that only measures waits
(a grace period, a retry gap) takes ``monotonic_clock``, which never jumps
when the wall clock is set; a ``FakeClock`` stands in for either.
"""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]


def system_clock() -> float:
    return time.time()


def monotonic_clock() -> float:
    return time.monotonic()


class FakeClock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now
