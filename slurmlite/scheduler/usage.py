"""Fair-share usage over time: decay with a half-life, and periodic resets.

Usage is counted in billing-seconds (``billing.py``).  Every
``PriorityCalcPeriod`` the controller does, for ``dt`` seconds since the last
time (spec §3.1):

1. multiplies every association's raw usage by ``D ** dt``
   (:func:`decay`), root included;
2. adds each running job's share of the period, ``dt * D**dt * billing``
   (:func:`running_charge`), to the job's association and every ancestor
   up to root — so an account's usage is the sum of its users';
3. recomputes fair-share factors and pending priorities.

``D`` is the per-second decay factor.  Slurm linearises ``2 ** (-1/H)`` for a
half-life of ``H`` seconds as ``D = 1 - 0.693 / H`` (:func:`decay_factor`), so
after exactly one half-life a usage keeps ``D ** H`` of itself: 0.50007 for
H = 7 days, 0.498 for H = 60 s.  ``PriorityDecayHalfLife=0`` means no decay
(``D = 1``); then only a reset period ever lowers usage.

Worked example (H = 1 hour = 3600 s): 1000 billing-seconds decay to
``1000 * (1 - 0.693/3600) ** 3600 = 500.04`` an hour later; a 4-CPU job that
ran for a 60 s period is charged ``60 * D**60 * 4 = 237.24`` for it.

``PriorityUsageResetPeriod`` zeroes every usage at a calendar boundary, in
the controller's local time zone (passed in as ``tz``): DAILY at midnight,
WEEKLY at Sunday 00:00, MONTHLY on the 1st, QUARTERLY on 1 January, April,
July and October, YEARLY on 1 January.  :func:`next_reset` gives the first
boundary after the last reset; :func:`should_reset` says whether one lies in
``(last_reset, now]``.  NOW resets once, when the controller starts (or
re-reads its configuration), then behaves as NONE.

Reference: ``S:src/plugins/priority/multifactor/priority_multifactor.c``
(``_init_decay_vars``, ``_apply_new_usage``, ``_next_reset``),
``S:doc/man/man5/slurm.conf.5`` (PriorityDecayHalfLife, PriorityUsageResetPeriod).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

RESET_PERIODS = ("NONE", "NOW", "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY")
_DAY = 86400


def decay_factor(half_life: float) -> float:
    """Per-second decay factor for a half-life in seconds (0 or less: no decay)."""
    return 1.0 - 0.693 / half_life if half_life > 0 else 1.0


def decay(usage: float, elapsed: float, half_life: float) -> float:
    """``usage`` after ``elapsed`` seconds of decay (no new usage meanwhile)."""
    if elapsed <= 0:
        return usage
    return usage * decay_factor(half_life) ** elapsed


def running_charge(
    billing_count: float, elapsed: float, half_life: float, usage_factor: float = 1.0
) -> float:
    """What a running job adds for one period of ``elapsed`` seconds (step 2 above)."""
    if elapsed <= 0:
        return 0.0
    return elapsed * decay_factor(half_life) ** elapsed * billing_count * usage_factor


def _midnight(moment: float, tz: tzinfo) -> datetime:
    local = datetime.fromtimestamp(moment, tz)
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def next_reset(period: str, last_reset: float, tz: tzinfo = UTC) -> float | None:
    """The first reset boundary after ``last_reset`` (None: NONE or NOW).

    DAILY and WEEKLY count whole days of 86400 s from the local midnight of
    ``last_reset``, as Slurm does (so a DST change shifts them by an hour);
    the longer periods are calendar dates at local midnight.
    """
    period = period.upper()
    if period not in RESET_PERIODS:
        raise ValueError(f"unknown PriorityUsageResetPeriod '{period}'")
    day = _midnight(last_reset, tz)
    if period == "DAILY":
        return day.timestamp() + _DAY
    if period == "WEEKLY":  # Python: Monday = 0 ... Sunday = 6; Slurm counts from Sunday = 0
        days_since_sunday = (day.weekday() + 1) % 7
        return day.timestamp() + _DAY * (7 - days_since_sunday)
    if period == "MONTHLY":
        year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    elif period == "QUARTERLY":
        month = next((m for m in (4, 7, 10) if day.month < m), 13)
        year, month = (day.year + 1, 1) if month == 13 else (day.year, month)
    elif period == "YEARLY":
        year, month = day.year + 1, 1
    else:
        return None
    return datetime(year, month, 1, tzinfo=tz).timestamp()


def should_reset(
    period: str, last_reset: float, now: float, tz: tzinfo = UTC, *, starting: bool = False
) -> bool:
    """True when usage must be zeroed now.

    ``last_reset`` is when usage was last zeroed (or, never having been, when
    the controller first started); ``starting`` is True on the first check
    after the controller (re)read its configuration — the moment NOW acts.
    """
    period = period.upper()
    if period == "NOW":
        return starting
    boundary = next_reset(period, last_reset, tz)
    return boundary is not None and now >= boundary


def days(n: float) -> float:
    """Seconds in ``n`` days (half-lives and ages are often written ``7-0``)."""
    return timedelta(days=n).total_seconds()
