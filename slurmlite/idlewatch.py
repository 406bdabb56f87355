"""Judging a running job's GPUs idle: window, threshold, grace (pure; time is a parameter).

The agents report each run's GPU usage as *cumulative* counters per GPU
(``slurmlite.usage.GpuUsage``: ``util_sum`` over ``samples``).  The
controller reads them every so often; between two reads each GPU that took
new samples has a mean over that *interval*::

    mean = (util_sum_now - util_sum_before) / (samples_now - samples_before)

An interval is *idle* when every GPU that took samples in it stayed under
the policy's ``threshold``, *busy* when one did not, and tells nothing when
no GPU took a sample (no heartbeat came; the state is left as it was).  The
first read of a run only records its counters: the watch starts there, so
after a controller restart (this state is kept in memory) the window starts
again.  A GPU whose counters went down (its agent started over) is read
afresh, as on a first read.

The state machine of one run::

    watching --idle for ``window``--> flagged --``grace`` later--> due (requeue/cancel)
        ^                                |
        +-------- any busy interval -----+  (clears the flag: "cleared")

``window`` counts from the start of the first idle interval of the streak;
the action is due ``grace`` after the read that flagged the job, so a user
always gets the whole grace after the warning.  ``action=warn`` is never
due: "not now" and "never" differ (DESIGN.md §4 rule 3).

Worked example (threshold 5 %, window 600 s, grace 120 s; one GPU reads
at t=0, 300, 600, 700, 900 with util_sum 0, 300, 600, 900, 1200 and
samples 0, 100, 200, 300, 400): t=0 records; t=300 mean 3 % -> idle since
0; t=600: idle, 600 - 0 >= 600 -> FLAGGED, due at 720; t=700 idle, not
due; t=900 idle, 900 >= 720 -> DUE.  Had the interval to t=700 averaged
10 %, the flag would have cleared (CLEARED) and the streak started again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from slurmlite.idlegpus import IdleGpuPolicy

GpuKey = tuple[str, int]  # (node, GPU index on it)
Counters = dict[GpuKey, tuple[float, int]]  # -> (util_sum, samples), cumulative for the run


class Change(Enum):
    """What one read changed for a run."""

    NONE = "none"  # nothing new to do
    FLAGGED = "flagged"  # idle for the window: warn now
    CLEARED = "cleared"  # a busy interval ended the flag
    DUE = "due"  # flagged, the grace is over: requeue or cancel now


@dataclass
class Flag:
    """A flagged run, as ``squeue``/``explain`` describe it."""

    idle_since: float  # start of the idle streak
    flagged_at: float
    action_at: float | None  # None: action=warn, never acted on
    policy: IdleGpuPolicy


@dataclass
class RunWatch:
    """What the watch remembers of one run between reads."""

    restarts: int
    base: Counters = field(default_factory=dict)  # the counters at ``base_time``
    base_time: float = 0.0
    idle_since: float | None = None
    flag: Flag | None = None
    acted: bool = False


def interval(before: Counters, now: Counters) -> dict[GpuKey, float]:
    """Mean utilization per GPU over the samples taken between two reads (module doc).

    Only GPUs read both times whose counters grew: ``{("n1", 0): (0.0, 0)}`` then
    ``{("n1", 0): (300.0, 100)}`` -> ``{("n1", 0): 3.0}``."""
    means = {}
    for key, (util_sum, samples) in now.items():
        if key not in before:
            continue
        old_sum, old_samples = before[key]
        if samples > old_samples and util_sum >= old_sum:
            means[key] = (util_sum - old_sum) / (samples - old_samples)
    return means


class IdleWatch:
    """Every watched run, by job id; :meth:`observe` is the whole state machine."""

    def __init__(self) -> None:
        self.runs: dict[int, RunWatch] = {}

    def observe(
        self, job_id: int, restarts: int, policy: IdleGpuPolicy, counters: Counters, now: float
    ) -> Change:
        """One read of a run's counters at ``now``; what it changed (module doc)."""
        run = self.runs.get(job_id)
        if run is None or run.restarts != restarts:  # first read of this run: the baseline
            self.runs[job_id] = RunWatch(restarts, dict(counters), now)
            return Change.NONE
        means = interval(run.base, counters)
        # the counters are cumulative: a GPU without new samples reads as before, and one
        # read afresh (new, or started over) starts from what it reads now
        run.base = dict(counters)
        if not means:
            return Change.DUE if self._due(run, now) else Change.NONE
        start, run.base_time = run.base_time, now
        if any(mean >= policy.threshold for mean in means.values()):
            was_flagged = run.flag is not None
            run.idle_since, run.flag, run.acted = None, None, False
            return Change.CLEARED if was_flagged else Change.NONE
        if run.idle_since is None:
            run.idle_since = start
        if run.flag is None and now - run.idle_since >= policy.window:
            due = now + policy.grace if policy.acts else None
            run.flag = Flag(run.idle_since, now, due, policy)
            return Change.DUE if self._due(run, now) else Change.FLAGGED
        return Change.DUE if self._due(run, now) else Change.NONE

    @staticmethod
    def _due(run: RunWatch, now: float) -> bool:
        """Flagged, acting, the grace over, not acted on yet (marks it acted on)."""
        flag = run.flag
        if flag is None or flag.action_at is None or run.acted or now < flag.action_at:
            return False
        run.acted = True
        return True

    def flag(self, job_id: int) -> Flag | None:
        """The flag of ``job_id``'s watched run, if it is flagged."""
        run = self.runs.get(job_id)
        return run.flag if run is not None else None

    def keep_only(self, job_ids: set[int]) -> None:
        """Forget the runs of jobs no longer watched (ended, requeued, policy off)."""
        for job_id in [j for j in self.runs if j not in job_ids]:
            del self.runs[job_id]
