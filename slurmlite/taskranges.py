"""Job-array task ranges as Slurm writes them: ``0-9%2``, ``1,3-7:2``.

``parse_task_ranges`` turns the text into task ids (a ``%N`` throttle is
dropped, a ``:S`` step honoured); ``format_task_ranges`` writes ids back in
the compact form squeue and scontrol print::

    >>> parse_task_ranges("1,3-7:2%4")
    [1, 3, 5, 7]
    >>> format_task_ranges([5, 0, 1, 2, 9])
    '0-2,5,9'
"""

from __future__ import annotations

from collections.abc import Sequence


def parse_task_ranges(text: str) -> list[int]:
    """``"0-9%2"`` -> 0..9; ``"1,3-5:2"`` -> [1, 3, 5] (throttle dropped)."""
    out: list[int] = []
    for item in text.split("%", 1)[0].split(","):
        if not item:
            continue
        rng, _, step = item.partition(":")
        lo, _, hi = rng.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1, int(step or 1)))
    return sorted(set(out))


def format_task_ranges(ids: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> ``"0-2,5"``."""
    parts: list[str] = []
    ordered = sorted(set(ids))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
