"""Job arrays: the ``--array`` specification and an array's pending remainder.

An array of 10,000 tasks is stored as ONE job row (the "master", whose id is
the array's id ``N``) until its tasks start: the row holds the indices not yet
split off as short range text, and the scheduler splits one task off each
time it starts one (a new row with its own job id, ``array_job_id=N`` and
``array_task_id=i``).  The master itself becomes the last task to run, which
is why, as in Slurm, the lowest job id usually carries the highest index
(spec §1.9).  So submitting a 10,000-task array is one small commit, and the
scheduler only ever looks at the tasks it is about to start.

The remainder text uses the tokens Slurm prints: ``5``, ``5-9999`` and
``0-15:4`` (every 4th), comma-separated, lowest first::

    >>> spec = parse_spec("1,3,5-7%2", max_array_size=1001)
    >>> spec.pending, spec.throttle, spec.count
    ('1,3,5-7', 2, 5)
    >>> first(spec.pending), remove(spec.pending, 6)
    (1, '1,3,5,7')
    >>> parse_spec("0-15:4", 1001).pending
    '0-12:4'

The operations parse the text each time; a remainder has a handful of
tokens however many tasks it holds, so each is a few microseconds.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

# a range token: start, stop (inclusive, reachable from start), step
_Range = tuple[int, int, int]
_TOKEN = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?")


class ArraySpecError(ValueError):
    """An ``--array`` value Slurm refuses ("Invalid job array specification")."""


@dataclass(frozen=True)
class ArraySpec:
    """A parsed ``--array``: the indices as remainder text, the ``%N`` throttle,
    and the facts every task's environment carries (``SLURM_ARRAY_TASK_*``)."""

    pending: str
    throttle: int | None
    count: int
    min: int
    max: int
    step: int  # the ``:S`` of the text, 1 when none was given (even for lists)

    @property
    def info(self) -> str:
        """``count,min,max,step`` as stored on every row of the array."""
        return f"{self.count},{self.min},{self.max},{self.step}"


def parse_spec(text: str, max_array_size: int) -> ArraySpec:
    """``0-15:4``, ``1,3,5-7%2`` -> :class:`ArraySpec`; indices below ``max_array_size``."""
    body, pct, limit = text.strip().partition("%")
    throttle: int | None = None
    if pct:
        if not limit.isdigit():
            raise ArraySpecError(text)
        throttle = int(limit) or None  # %0: no limit
    ranges: list[_Range] = []
    step_given = 1
    for word in body.split(","):
        m = _TOKEN.fullmatch(word)
        if m is None:
            raise ArraySpecError(text)
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        step = int(m.group(3)) if m.group(3) is not None else 1
        if hi < lo or step < 1:
            raise ArraySpecError(text)
        if m.group(3) is not None:
            step_given = step
        ranges.append((lo, lo + (hi - lo) // step * step, step))
    indices = _normalize(ranges)
    if not indices or indices[-1][1] >= max_array_size:
        raise ArraySpecError(text)
    return ArraySpec(
        pending=_format(indices),
        throttle=throttle,
        count=sum(_size(r) for r in indices),
        min=indices[0][0],
        max=max(r[1] for r in indices),
        step=step_given,
    )


def parse_info(info: str | None) -> tuple[int, int, int, int] | None:
    """A row's stored ``count,min,max,step`` (None for a job that is not an array)."""
    if not info:
        return None
    count, lo, hi, step = (int(x) for x in info.split(","))
    return count, lo, hi, step


# ------------------------------------------------------------ the remainder


def first(pending: str | None) -> int | None:
    """The lowest index still pending (None when nothing is)."""
    if not pending:
        return None
    return int(_TOKEN.match(pending).group(1))  # type: ignore[union-attr]


def count(pending: str | None) -> int:
    return sum(_size(r) for r in _parse(pending))


def contains(pending: str | None, index: int) -> bool:
    return any(_has(r, index) for r in _parse(pending))


def indices(pending: str | None) -> Iterator[int]:
    """Every pending index, lowest first (``squeue -r`` expands with this)."""
    for lo, hi, step in _parse(pending):
        yield from range(lo, hi + 1, step)


def remove(pending: str | None, index: int) -> str:
    """The remainder without ``index`` ("" when it was the last)."""
    out: list[_Range] = []
    for r in _parse(pending):
        if not _has(r, index):
            out.append(r)
            continue
        lo, hi, step = r
        if index > lo:
            out.append((lo, index - step, step))
        if index < hi:
            out.append((index + step, hi, step))
    return _format(out)


def remove_many(pending: str | None, wanted: set[int]) -> tuple[str, list[int]]:
    """The remainder without the indices of ``wanted`` it holds, and those indices."""
    hit = [i for i in sorted(wanted) if contains(pending, i)]
    rest = pending or ""
    for i in hit:
        rest = remove(rest, i)
    return rest, hit


def with_throttle(pending: str, throttle: int | None) -> str:
    """What squeue and scontrol print for a pending remainder: ``0-9%2``."""
    return f"{pending}%{throttle}" if throttle else pending


# ------------------------------------------------------------ internals


def _parse(pending: str | None) -> list[_Range]:
    if not pending:
        return []
    out: list[_Range] = []
    for word in pending.split(","):
        m = _TOKEN.fullmatch(word)
        if m is None:
            raise ValueError(f"bad array remainder {pending!r}")
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        out.append((lo, hi, int(m.group(3) or 1)))
    return out


def _size(r: _Range) -> int:
    return (r[1] - r[0]) // r[2] + 1


def _has(r: _Range, index: int) -> bool:
    return r[0] <= index <= r[1] and (index - r[0]) % r[2] == 0


def _normalize(ranges: list[_Range]) -> list[_Range]:
    """Sorted, without repeats; runs of single indices joined into ``a-b``.

    Overlapping stepped ranges are rare in practice; when two ranges overlap
    they are expanded and rebuilt as plain runs (bounded by MaxArraySize).
    """
    ranges = sorted(ranges)
    overlap = any(ranges[i + 1][0] <= ranges[i][1] for i in range(len(ranges) - 1))
    if overlap:
        every = sorted({i for lo, hi, st in ranges for i in range(lo, hi + 1, st)})
        ranges = [(i, i, 1) for i in every]
    out: list[_Range] = []
    for lo, hi, step in ranges:
        if lo == hi:
            step = 1
        if out and out[-1][2] == 1 and step == 1 and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, 1)
        else:
            out.append((lo, hi, step))
    return out


def _format(ranges: list[_Range]) -> str:
    words = []
    for lo, hi, step in ranges:
        if lo == hi:
            words.append(str(lo))
        elif step == 1:
            words.append(f"{lo}-{hi}")
        else:
            words.append(f"{lo}-{hi}:{step}")
    return ",".join(words)
