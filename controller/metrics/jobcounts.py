"""The job counts kept up to date as jobs change, so a scrape never counts 10,000 jobs.

``/metrics/jobs`` and its siblings show :mod:`controller.metrics.jobstats`'
counts of the jobs squeue lists.  Counting them all again after every change
costs milliseconds with 10,000 jobs in the queue, and a busy queue changes
between any two scrapes.  So :class:`JobCounts` follows the live job cache
(``controller.store.live_cache``, a ``Follower`` of its view): the view tells
it each row it replaces, adds or forgets, as (old row, new row), with the
view's lock held; it takes the old row's contribution off its key and adds
the new one's.  A scrape then folds a few dozen keys
(:func:`jobstats.fold`).

Invariant: ``groups == jobstats.count(r for r in view.rows.values() if
shown(r, cutoff))``, the count made from scratch.  It is not a second record
of the jobs that could drift from them: it changes only inside the view's
own updates, under its lock, by the rows' old and new values; and every case
it cannot follow by differences goes back to counting from scratch:

* the view loads everything again (first use, a write it could not pin to
  rows): ``reset``, and the next reader counts anew;
* the cutoff (now - MinJobAge) moves back (the clock stepped back, MinJobAge
  raised): counted anew.

Time passing needs no change: a finished job is shown until its end time
falls behind the cutoff, so the finished jobs counted are also kept in a heap
by end time, and a reader at a later cutoff takes off those it passed (a row
replaced since is skipped there: its change already took the old row off).

Example (MinJobAge 300): job 7 pending, counted under ``("debug", "alice",
"physics", "PENDING", "", "Priority")``; it starts: the view re-reads row 7
and calls ``changed([(pending 7, running 7)])``, which moves 1 from that key
to the RUNNING one, with 7's CPUs and GPUs; it ends at t=1000: moved again,
and pushed on the heap at 1000; a scrape at t=1301 (cutoff 1001) takes it off.
``tests/api/test_metrics_counts.py`` checks the invariant after random
submissions, starts, ends, cancels, listings and the passing of time.
"""

from __future__ import annotations

import heapq
import itertools
import math

from controller.metrics.jobstats import Key, count, holder_figures, key_of
from controller.store.live_cache import Live, LiveJobs

Pairs = list[tuple[Live | None, Live | None]]


def shown(r: Live, cutoff: float) -> bool:
    """Whether the metrics count ``r`` at ``cutoff``: live, completing, or ended since."""
    return r.live or r.completing or (r.end_time is not None and r.end_time >= cutoff)


class JobCounts:
    """The count of a view's rows shown at ``cutoff``, kept by differences (module doc).

    Every method is called with the view's lock held."""

    def __init__(self) -> None:
        self.groups: dict[Key, list[int]] = {}
        self.cutoff = math.inf  # the cutoff ``groups`` is for
        self.stale = True  # count from scratch at the next read
        self.serial = 0  # grows whenever ``groups`` changes: readers may cache what they fold
        self._ending: list[tuple[float, int, Live]] = []  # (end time, tie, row) of finished rows
        self._tie = itertools.count()
        self._finished = 0  # finished rows counted: the live part of ``_ending``

    # ------------------------------------------------------ the view's calls

    def reset(self) -> None:
        self.stale = True

    def changed(self, pairs: Pairs) -> None:
        if self.stale:
            return
        cutoff, moved = self.cutoff, False
        for old, new in pairs:
            was = old if old is not None and shown(old, cutoff) else None
            now = new if new is not None and shown(new, cutoff) else None
            if was is not None and now is not None and _same(was, now):
                continue  # a new priority, estimate...: nothing counted moved
            if was is not None:
                self._add(was, -1)
                moved = True
            if now is not None:
                self._add(now, 1)
                moved = True
        if moved:
            self.serial += 1

    # --------------------------------------------------------------- readers

    def at(self, rows: dict[int, Live], cutoff: float) -> dict[Key, list[int]]:
        """The count of ``rows`` (the view's, just refreshed at ``cutoff``) shown at ``cutoff``."""
        if self.stale or cutoff < self.cutoff:
            self._recount(rows, cutoff)
        elif cutoff > self.cutoff:
            self._age(rows, cutoff)
        return self.groups

    # -------------------------------------------------------------- inside

    def _recount(self, rows: dict[int, Live], cutoff: float) -> None:
        counted = [r for r in rows.values() if shown(r, cutoff)]
        self.groups = count(counted)
        self._ending = []
        for r in counted:
            if _ages(r):
                self._ending.append((r.end_time or 0.0, next(self._tie), r))
        heapq.heapify(self._ending)
        self._finished = len(self._ending)
        self.cutoff, self.stale = cutoff, False
        self.serial += 1

    def _age(self, rows: dict[int, Live], cutoff: float) -> None:
        """Move the cutoff on: take off the finished rows whose end it passed."""
        ending, moved = self._ending, False
        while ending and ending[0][0] < cutoff:
            _, _, r = heapq.heappop(ending)
            if rows.get(r.id) is r:  # still the row counted (not replaced nor forgotten)
                self._add(r, -1)
                moved = True
        self.cutoff = cutoff
        if len(ending) > 2 * self._finished + 64:  # mostly replaced rows: drop them
            self._ending = [e for e in ending if rows.get(e[2].id) is e[2]]
            heapq.heapify(self._ending)
        if moved:
            self.serial += 1

    def _add(self, r: Live, sign: int) -> None:
        key = key_of(r.values)
        into = self.groups.get(key)
        if into is None:
            into = self.groups[key] = [0, 0, 0, 0, 0, 0]
        into[0] += sign
        if r.state != "PENDING":
            for i, x in enumerate(holder_figures(r.values), 1):
                into[i] += sign * x
        if into[0] == 0:
            del self.groups[key]  # its figures are 0 too: sums over no job
        if _ages(r):
            self._finished += sign
            if sign > 0:
                heapq.heappush(self._ending, (r.end_time or 0.0, next(self._tie), r))


def _same(old: Live, new: Live) -> bool:
    """Whether two versions of a pending row count the same (pending: only the key)."""
    return old.state == new.state == "PENDING" and key_of(old.values) == key_of(new.values)


def _ages(r: Live) -> bool:
    """Whether ``r`` is shown only until the cutoff passes its end."""
    return not (r.live or r.completing) and r.end_time is not None


def of(view: LiveJobs) -> JobCounts:
    """The view's :class:`JobCounts`, made and attached at the first call (lock held)."""
    for f in view.followers:
        if isinstance(f, JobCounts):
            return f
    made = JobCounts()
    view.followers.append(made)
    return made
