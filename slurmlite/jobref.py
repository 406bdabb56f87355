"""A job reference as the job commands take it: ``123``, ``123_4``, ``123_[1-3,7]``.

``scancel``, ``scontrol hold/release/update/requeue``, ``squeue -j`` and
``sacct -j`` all name jobs the same way: a job id, optionally followed by
``_`` and one array task index or a bracketed index list (the ``--array``
syntax without ``%``), optionally followed by ``.step`` (kept as text for the
commands that take steps)::

    >>> parse_ref("57")
    JobRef(job_id=57, tasks=None, step=None)
    >>> parse_ref("57_[1,3-5]").tasks
    (1, 3, 4, 5)
    >>> parse_ref("57_9").text
    '57_9'
    >>> parse_ref("12x")
    Traceback (most recent call last):
    ...
    slurmlite.jobref.JobRefError: 12x

A reference without tasks means the whole job; for an array's id that is
every task of it (the master row and every task split off it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from slurmlite.arrays import ArraySpecError, indices, parse_spec
from slurmlite.jobwords import split_words

MAX_INDEX = 4_000_000  # far above any MaxArraySize; a bigger index is a typo
INT32 = 2**31 - 1
_REF = re.compile(r"(\d+)(?:_(\d+|\[[0-9,:\-]+\]))?(?:\.([A-Za-z0-9_+-]+))?")


class JobRefError(ValueError):
    """Not a job reference (``scancel: error: Invalid job id <text>``)."""


@dataclass(frozen=True)
class JobRef:
    job_id: int
    tasks: tuple[int, ...] | None = None  # None: the whole job (every task of an array)
    step: str | None = None

    @property
    def text(self) -> str:
        """How Slurm names it back: ``57``, ``57_9``, ``57_[1-3]``."""
        out = str(self.job_id)
        if self.tasks is not None:
            out += f"_{self.tasks[0]}" if len(self.tasks) == 1 else f"_[{_ranges(self.tasks)}]"
        return out if self.step is None else f"{out}.{self.step}"

    def label(self, task: int | None) -> str:
        """The name of one task of this reference (``57_4``), or of the job itself."""
        return str(self.job_id) if task is None else f"{self.job_id}_{task}"


def parse_ref(text: str) -> JobRef:
    m = _REF.fullmatch(text.strip())
    if m is None or int(m.group(1)) > INT32 or int(m.group(1)) == 0:
        raise JobRefError(text)
    tasks: tuple[int, ...] | None = None
    spec = m.group(2)
    if spec is not None:
        body = spec.strip("[]")
        try:
            tasks = tuple(indices(parse_spec(body, MAX_INDEX).pending))
        except (ArraySpecError, ValueError):
            raise JobRefError(text) from None
    return JobRef(int(m.group(1)), tasks, m.group(3))


def parse_refs(text: str) -> list[JobRef]:
    """A comma list, where commas inside brackets belong to the task list."""
    return [parse_ref(word) for word in split_words(text)]


def _ranges(tasks: tuple[int, ...]) -> str:
    out: list[str] = []
    start = prev = tasks[0]
    for i in (*tasks[1:], None):
        if i is not None and i == prev + 1:
            prev = i
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return ",".join(out)
