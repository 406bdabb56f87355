"""Output/error/input file-name patterns (``--output=job-%j.out``), spec §6.3.

The pattern is expanded on the node that opens the file, one token at a time
from left to right:

* ``%%`` -> ``%``;
* ``%j`` job id (an array task's own id), ``%J`` the same plus ``.step`` for
  a numbered step (the batch step shows just the id), ``%A`` the array's
  master id (a non-array job: its id), ``%a`` the array index (a non-array
  job: 4294967294, Slurm's NO_VAL), ``%b`` the array index mod 10, ``%s``
  the step (``batch``), ``%n`` the node index, ``%t`` the task rank, ``%r``
  the restart count -- all numeric;
* ``%x`` job name, ``%u`` user, ``%N`` node name -- text;
* a width between ``%`` and the letter zero-pads numeric fields
  (``%4j`` -> ``0128``; widths above 9 count as 10) and is ignored for text;
* an unknown letter is kept as written (``%q`` stays ``%q``), and so is a
  ``%`` at the very end;
* if the pattern contains any backslash, nothing is expanded and the
  backslashes are removed (``job\\%j.out`` -> ``job%j.out``).

``%N`` is the Slurm node name.  The 22.05 golden file shows the machine's
hostname (``vm``) there, an artefact of running both test nodes on one host;
with one node per machine the two agree, and with several agents on one
machine the node name keeps their files apart.

Worked example (job 37, user alice, node n1, batch step)::

    >>> expand_pattern("pat-%j-%x-%N-%u-%t-%J-%%.out", job_id=37, job_name="patname",
    ...                user="alice", node="n1")
    'pat-37-patname-n1-alice-0-37-%.out'
"""

from __future__ import annotations

import os

__all__ = ["NO_VAL", "default_output", "expand_pattern", "resolve_output"]

NO_VAL = 4294967294  # what %a shows for a job that is not an array task
_MAX_WIDTH = 10


def default_output(array: bool) -> str:
    """sbatch's default stdout (and stderr) pattern."""
    return "slurm-%A_%a.out" if array else "slurm-%j.out"


def resolve_output(pattern: str, work_dir: str) -> str:
    """Make a pattern or path absolute: relative ones are under the job's work dir."""
    if os.path.isabs(pattern):
        return pattern
    return os.path.join(work_dir, pattern)


def expand_pattern(
    pattern: str,
    *,
    job_id: int,
    array_job_id: int | None = None,
    array_task_id: int | None = None,
    step: str = "batch",
    job_name: str = "",
    user: str = "",
    node: str = "",
    node_index: int = 0,
    task: int = 0,
    restarts: int = 0,
) -> str:
    """Expand ``pattern`` for one file (see the module docstring)."""
    if "\\" in pattern:
        return pattern.replace("\\", "")
    task_index = NO_VAL if array_task_id is None else array_task_id
    numeric: dict[str, int] = {
        "j": job_id,
        "A": job_id if array_job_id is None else array_job_id,
        "a": task_index,
        "b": task_index % 10,
        "n": node_index,
        "t": task,
        "r": restarts,
    }
    text = {"x": job_name, "u": user, "N": node}
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch != "%" or i + 1 >= len(pattern):
            out.append(ch)
            i += 1
            continue
        j = i + 1
        while j < len(pattern) and pattern[j].isdigit():
            j += 1
        if j >= len(pattern):  # "%12" at the end: nothing to expand
            out.append(pattern[i:])
            break
        letter = pattern[j]
        width = min(int(pattern[i + 1 : j]), _MAX_WIDTH) if j > i + 1 else 0
        if letter == "%" and j == i + 1:
            out.append("%")
        elif letter in numeric:
            out.append(f"{numeric[letter]:0{width}d}")
        elif letter == "J":
            out.append(f"{job_id:0{width}d}")
            if step.isdigit():
                out.append(f".{step}")
        elif letter == "s":
            out.append(f"{int(step):0{width}d}" if step.isdigit() else step)
        elif letter in text:
            out.append(text[letter])
        else:  # unknown token: keep it exactly as written
            out.append(pattern[i : j + 1])
        i = j + 1
    return "".join(out)
