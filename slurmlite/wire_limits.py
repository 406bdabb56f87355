"""What a number or a string arriving on the wire may be.

JSON has no size limit for integers and Python none either, but the store
has: an ``INTEGER`` column of PostgreSQL holds 32 bits (SQLite's 64), so a
submission with ``nice = 2**70`` used to get as far as the ``INSERT`` and
fail there, an internal error (HTTP 500) for what is the client's mistake.
Likewise a NUL character, which PostgreSQL refuses in text and the kernel in
paths, arguments and environment variables, and ``NaN``/``Infinity`` floats.
This module says, once, what is acceptable; both daemons' request models are
built from it (``controller.api.schemas``, ``agent.app``: out of range is a
422 naming the field), and the submission path, which validates without
those models, asks ``first_problem`` (a 400 with Slurm's errno).

Ranges go by field name, whatever the message:

* ids and counts (job ids, restarts, CPUs, tasks, nodes, MiB, minutes,
  seconds): ``0 .. 2**31 - 1``, what the store's columns hold;
* a launch's ``time_limit_s``: ``0 .. (2**31 - 1) * 60``, the seconds of the
  longest time limit a submission may carry in minutes.  One table serves
  both ends, so every job the controller accepts is one its agents will
  launch (``sbatch --time=99999999`` runs, as in Slurm: 99,999,999 minutes
  are 5,999,999,940 seconds, past a 32-bit count);
* uids and gids: ``0 .. 2**32 - 2`` (``2**32 - 1`` is ``(uid_t) -1``, "no
  user");
* ``nice``: Slurm's ``-2147483645 .. 2147483645``; signals ``0 .. 64``;
  ports ``0 .. 65535``;
* any other integer: a signed 32-bit value.

Worked example::

    >>> from slurmlite.protocol import JobSubmit
    >>> first_problem(JobSubmit(script="x", name="j", work_dir="/", submit_dir="/",
    ...                          submit_host="h", nice=2**40))
    ('nice', 'nice=1099511627776 is out of range (-2147483645..2147483645)')

Reference: Slurm's own limits (``NICE_OFFSET`` in ``slurm.h``, job ids and
counts as 32-bit unsigned integers) and PostgreSQL's numeric types.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

INT32_MAX = 2**31 - 1
COUNT = (0, INT32_MAX)
SIGNED = (-(2**31), INT32_MAX)
ID = (0, 2**32 - 2)

RANGES: dict[str, tuple[int, int]] = {
    **dict.fromkeys(
        (
            "job_id",
            "job_ids",
            "running_jobs",
            "array_job_id",
            "array_task_id",
            "restarts",
            "alloc_sid",
            "nodes_min",
            "nodes_max",
            "ntasks",
            "ntasks_per_node",
            "cpus_per_task",
            "mem_per_node",
            "mem_per_cpu",
            "mem_per_gpu",
            "gpus_per_node",
            "gpus_total",
            "gpus",
            "time_limit",
            "kill_wait",
            "cpus",
            "real_memory",
            "free_mem",
            "mem_mib",
        ),
        COUNT,
    ),
    # a launch's limit in seconds is the job's in minutes times 60: any time limit
    # the controller accepts (up to 2**31 - 1 minutes) must reach the agent intact
    "time_limit_s": (0, INT32_MAX * 60),
    **dict.fromkeys(("uid", "gid"), ID),
    "nice": (-(2**31 - 3), 2**31 - 3),
    "signal": (0, 64),
    "warn_signal": (1, 64),
    "warn_time": (0, 65535),
    "port": (0, 65535),
    # usage summaries (slurmlite.usage): a memory peak in bytes, a sample count, a GPU index
    "max_rss_bytes": (0, 2**63 - 1),
    "mem_peak": (0, 2**63 - 1),  # JobCompletion: the cgroup's peak of an OOM-killed run, bytes
    **dict.fromkeys(("samples", "index"), COUNT),
}


# text fields that take one of a few words; anything else is a 422 naming the field
JOB_STATE_FILTERS = (
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT",
    "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
    "COMPLETING", "CONFIGURING", "STAGE_OUT", "REQUEUE", "REQUEUE_HOLD", "SPECIAL_EXIT",
    "RESIZING", "SIGNALING", "STOPPED", "REVOKED",
)  # fmt: skip
CHOICES: dict[str, tuple[str, ...]] = {
    "open_mode": ("truncate", "append"),
    "script_encoding": ("base64",),
    "failed_script": ("prolog", "epilog"),  # JobCompletion: which site script failed
    "states": JOB_STATE_FILTERS,  # scancel --state (long names, as scancel sends them)
}


def bad_choice(obj: Any) -> tuple[str, str] | None:
    """(field, message) of the first field of ``obj`` outside its ``CHOICES``, or None.

    ``JobSubmit(..., open_mode="junk")`` -> ``("open_mode", "open_mode must be one of
    truncate, append, not 'junk'")``."""
    for name, allowed in CHOICES.items():
        value = getattr(obj, name, None)
        if value is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            if item not in allowed:
                return name, f"{name} must be one of {', '.join(allowed)}, not {item!r:.80}"
    return None


def bounds(field: str) -> tuple[int, int]:
    """The inclusive range of integer field ``field`` (a signed 32-bit value by default)."""
    return RANGES.get(field, SIGNED)


def no_nul(text: str) -> str:
    """``text`` unchanged; ``ValueError`` if it holds a NUL character."""
    if "\x00" in text:
        raise ValueError("must not contain a NUL character")
    return text


def first_problem(obj: Any) -> tuple[str, str] | None:
    """(field, message) of the first value of dataclass ``obj`` that may not travel, or None.

    Looks into lists, dict keys and values, and nested dataclasses (the
    field returned is the top-level one, the message names the inner one).  A submission's check costs a few
    microseconds: most fields are None, and an environment's text is
    searched for NUL in one pass (``str.join``), not entry by entry.
    """
    for name, value in _items(obj):
        kind = type(value)
        if kind is str:  # the common cases inline: this runs for every submission
            if "\x00" in value:
                return name, f"{name} contains a NUL character"
        elif value is None or kind is bool or not value:
            continue
        elif kind is int:
            lo, hi = RANGES.get(name, SIGNED)
            if not lo <= value <= hi:
                return name, f"{name}={value} is out of range ({lo}..{hi})"
        else:
            why = _problem(name, value)
            if why is not None:
                return name, why
    return None


def _items(obj: Any) -> Any:
    values = getattr(obj, "__dict__", None)
    if values is not None:
        return values.items()
    return ((f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj))


def _problem(name: str, value: Any) -> str | None:
    kind = type(value)
    if kind is str:
        return f"{name} contains a NUL character" if "\x00" in value else None
    if kind is bool:
        return None
    if kind is int:
        lo, hi = bounds(name)
        return None if lo <= value <= hi else f"{name}={value} is out of range ({lo}..{hi})"
    if kind is float:
        return None if math.isfinite(value) else f"{name}={value} is not a finite number"
    if kind is dict or kind is list:
        try:  # all text (the usual case): one search; join raises TypeError otherwise
            text = "".join(value) + ("".join(value.values()) if kind is dict else "")
        except TypeError:
            return _first(name, [*value, *value.values()] if kind is dict else value)
        return f"{name} contains a NUL character" if "\x00" in text else None
    if dataclasses.is_dataclass(value):
        inner = first_problem(value)
        return None if inner is None else inner[1]
    return None


def _first(name: str, values: list[Any]) -> str | None:
    for item in values:
        why = None if item is None else _problem(name, item)
        if why is not None:
            return why
    return None
