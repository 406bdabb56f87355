"""Job and node states, reasons, exit codes, signals: names as Slurm prints them.

Jobs (spec §1.1-§1.2)
---------------------
A job has one *base* state (``JOB_STATES``, in Slurm's numeric order, so
"finished" is simply index >= COMPLETED) plus optional *flags*.  The state a
user sees is the first flag present in ``JOB_FLAG_ORDER``, else the base:
``job_state_long("CANCELLED", ["COMPLETING"]) == "COMPLETING"`` and its
compact form is ``CG``.

Filters (``squeue -t``, ``scancel -t``) take long or compact names in any
case, or ``all``; a flag name matches every job carrying that flag, a base
name matches jobs in that base state that are not COMPLETING (those show and
filter as ``CG``, as in Slurm).

Nodes (spec §5.4)
-----------------
A node has a base (IDLE, ALLOCATED, MIXED, DOWN, UNKNOWN, FUTURE) and flags
(DRAIN, COMPLETING, NOT_RESPONDING, FAIL, ...).  scontrol prints base plus
every flag (``IDLE+DRAIN``, ``DOWN+NOT_RESPONDING``); sinfo folds them into
one word with a suffix: DRAIN on a busy node is ``draining``/``drng``, on an
idle one ``drained``/``drain``; not responding appends ``*`` (``down*``).

Exit codes (spec §1.5)
----------------------
A raw wait status prints as ``exit:signal``: ``exit 3`` is status
``3 << 8 == 768`` -> ``3:0``; SIGKILL is status 9 -> ``0:9``.

Counts (spec §6.8)
------------------
``compress_counts([2, 2, 2, 1]) == "2(x3),1"``.
"""

from __future__ import annotations

import os
import signal as _signal
from collections.abc import Iterable, Sequence

from slurmlite import reasons

# ---------------------------------------------------------------- job states

JOB_STATES: tuple[str, ...] = (
    "PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED",
    "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY",
)  # fmt: skip

# The raw wait status a job killed by the OOM killer is reported with: the low
# byte 253 reads as "signal 125", which sacct prints as ExitCode 0:125, as Slurm does.
OOM_STATUS = 253

_JOB_COMPACT = {
    "PENDING": "PD", "RUNNING": "R", "SUSPENDED": "S", "COMPLETED": "CD",
    "CANCELLED": "CA", "FAILED": "F", "TIMEOUT": "TO", "NODE_FAIL": "NF",
    "PREEMPTED": "PR", "BOOT_FAIL": "BF", "DEADLINE": "DL", "OUT_OF_MEMORY": "OOM",
}  # fmt: skip

# flag -> (long display name, compact name or None); order = display precedence
JOB_FLAG_ORDER: tuple[tuple[str, str, str | None], ...] = (
    ("COMPLETING", "COMPLETING", "CG"),
    ("STAGE_OUT", "STAGE_OUT", "SO"),
    ("CONFIGURING", "CONFIGURING", "CF"),
    ("EXPEDITING", "EXPEDITING", None),
    ("RESIZING", "RESIZING", "RS"),
    ("REQUEUE", "REQUEUED", "RQ"),
    ("REQUEUE_FED", "REQUEUE_FED", "RF"),
    ("REQUEUE_HOLD", "REQUEUE_HOLD", "RH"),
    ("SPECIAL_EXIT", "SPECIAL_EXIT", "SE"),
    ("STOPPED", "STOPPED", "ST"),
    ("REVOKED", "REVOKED", "RV"),
    ("RESV_DEL_HOLD", "RESV_DEL_HOLD", "RD"),
    ("SIGNALING", "SIGNALING", "SI"),
)

DEFAULT_SQUEUE_STATES: frozenset[str] = frozenset(
    {"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "STAGE_OUT"}
)

# every accepted spelling (upper case) -> canonical base or flag name
_STATE_NAMES: dict[str, str] = {}
for _base in JOB_STATES:
    _STATE_NAMES[_base] = _base
    _STATE_NAMES[_JOB_COMPACT[_base]] = _base
for _flag, _long, _compact in JOB_FLAG_ORDER:
    _STATE_NAMES[_flag] = _flag
    _STATE_NAMES[_long] = _flag
    if _compact:
        _STATE_NAMES[_compact] = _flag


def _check_base(base: str) -> str:
    if base not in _JOB_COMPACT:
        raise ValueError(f"unknown job state: {base!r}")
    return base


def is_finished(base: str) -> bool:
    """True for COMPLETED and every state after it (spec: base >= 3)."""
    return JOB_STATES.index(_check_base(base)) >= JOB_STATES.index("COMPLETED")


def job_state_long(base: str, flags: Iterable[str]) -> str:
    """squeue %T / scontrol JobState: first flag by precedence, else base."""
    if flags:
        present = set(flags)
        for flag, long, _ in JOB_FLAG_ORDER:
            if flag in present:
                return long
    return _check_base(base)


def job_state_compact(base: str, flags: Iterable[str]) -> str:
    """squeue %t: ``PD``, ``R``, ``CG``, ``CD``, ``OOM`` ...

    A flag without a compact code (EXPEDITING) is skipped.
    """
    if flags:  # most jobs have none: skip the scan (squeue calls this per row)
        present = set(flags)
        for flag, _, compact in JOB_FLAG_ORDER:
            if flag in present and compact:
                return compact
    try:
        return _JOB_COMPACT[base]
    except KeyError:
        raise ValueError(f"unknown job state: {base!r}") from None


def parse_job_states(text: str) -> set[str] | None:
    """``"pd,R,cg"`` -> ``{"PENDING", "RUNNING", "COMPLETING"}``; ``"all"`` -> None.

    Raises ``ValueError("Invalid job state specified: X")``.
    """
    wanted: set[str] = set()
    for word in text.split(","):
        key = word.strip().upper()
        if key == "ALL":
            return None
        if key not in _STATE_NAMES:
            raise ValueError(f"Invalid job state specified: {word.strip()}")
        wanted.add(_STATE_NAMES[key])
    return wanted


def job_matches_states(base: str, flags: Iterable[str], wanted: set[str] | frozenset[str]) -> bool:
    """Does a job pass a ``-t`` filter (a set from :func:`parse_job_states`)?"""
    present = set(flags)
    if present & wanted:
        return True
    return base in wanted and "COMPLETING" not in present


# ------------------------------------------------------------------- reasons

# The vocabulary and its check live in ``slurmlite.reasons`` (one named constant per
# reason); these names stay here for the callers that read states and reasons together.
REASONS = reasons.REASONS
check_reason = reasons.check_reason


# ---------------------------------------------------------------- exit codes


def exit_code_str(status: int | None) -> str:
    """Raw wait status -> ``E:S``: 768 -> ``3:0``, 9 -> ``0:9``, None -> ``0:0``."""
    if status is None:
        return "0:0"
    term = status & 0x7F
    signalled = term not in (0, 0x7F)
    return f"{(status >> 8) & 0xFF}:{term if signalled else 0}"


# --------------------------------------------------------------- node states

_NODE_BASES = ("IDLE", "ALLOCATED", "MIXED", "DOWN", "UNKNOWN", "FUTURE")
# flag order used by scontrol's BASE+FLAG+FLAG form
_NODE_FLAG_ORDER = (
    "CLOUD", "COMPLETING", "DRAIN", "INVALID_REG", "FAIL", "MAINTENANCE", "POWER_DOWN",
    "POWER_UP", "POWERED_DOWN", "REBOOT_REQUESTED", "REBOOT_ISSUED", "RESERVED",
    "NOT_RESPONDING", "PLANNED", "POWERING_UP", "POWERING_DOWN",
)  # fmt: skip
# flag -> suffix character, in the precedence sinfo uses
_NODE_SUFFIX = (
    ("MAINTENANCE", "$"), ("REBOOT_ISSUED", "^"), ("REBOOT_REQUESTED", "@"),
    ("POWERING_UP", "#"), ("POWERING_DOWN", "%"), ("POWERED_DOWN", "~"),
    ("POWER_DOWN", "!"), ("NOT_RESPONDING", "*"),
)  # fmt: skip
_NODE_SHORT = {
    "IDLE": "IDLE", "ALLOCATED": "ALLOC", "MIXED": "MIX", "DOWN": "DOWN",
    "UNKNOWN": "UNK", "FUTURE": "FUTR", "COMPLETING": "COMP", "DRAINING": "DRNG",
    "DRAINED": "DRAIN", "FAILING": "FAILG", "FAIL": "FAIL", "RESERVED": "RESV",
    "PLANNED": "PLND", "INVAL": "INVAL", "MAINT": "MAINT", "REBOOT": "BOOT",
}  # fmt: skip


def _node_parts(base: str, flags: Iterable[str]) -> tuple[str, set[str]]:
    present = {"MAINTENANCE" if f == "MAINT" else f for f in flags}
    if base == "COMPLETING":  # protocol may send it as a base: idle + completing
        base = "IDLE"
        present.add("COMPLETING")
    if base not in _NODE_BASES:
        raise ValueError(f"unknown node state: {base!r}")
    return base, present


def node_state_long(base: str, flags: Iterable[str]) -> str:
    """scontrol ``State=``: ``IDLE``, ``MIXED+DRAIN``, ``DOWN+NOT_RESPONDING``."""
    base, present = _node_parts(base, flags)
    return "+".join([base] + [f for f in _NODE_FLAG_ORDER if f in present])


def _node_display(base: str, present: set[str]) -> tuple[str, str]:
    """(upper-case word, suffix) following the precedence of Slurm's sinfo."""
    no_resp = "*" if "NOT_RESPONDING" in present else ""
    suffix = next((ch for flag, ch in _NODE_SUFFIX if flag in present), "")
    busy = base in ("ALLOCATED", "MIXED")
    completing = "COMPLETING" in present
    if "INVALID_REG" in present:
        return "INVAL", ""
    if "MAINTENANCE" in present and not ("DRAIN" in present or busy or base == "DOWN"):
        return "MAINT", no_resp
    if present & {"REBOOT_REQUESTED", "REBOOT_ISSUED"} and not busy:
        return "REBOOT", "^" if "REBOOT_ISSUED" in present else no_resp
    if "DRAIN" in present:
        return ("DRAINING" if completing or busy else "DRAINED"), suffix
    if "FAIL" in present:
        return ("FAILING" if completing or base == "ALLOCATED" else "FAIL"), no_resp
    if base == "ALLOCATED":
        return base, suffix or ("+" if completing else "")
    if base != "DOWN" and completing:
        return "COMPLETING", suffix
    if base == "IDLE" and not suffix:
        for special in ("RESERVED", "PLANNED"):
            if special in present:
                return special, ""
    if base == "MIXED":
        return base, suffix or ("-" if "PLANNED" in present else "")
    return base, (no_resp if base == "UNKNOWN" else suffix)


def node_state_sinfo(base: str, flags: Iterable[str], long: bool) -> str:
    """sinfo ``%T`` (long) / ``%t``: ``allocated``/``alloc``, ``drng``, ``down*``."""
    word, suffix = _node_display(*_node_parts(base, flags))
    return ((word if long else _NODE_SHORT[word]) + suffix).lower()


# ------------------------------------------------------------ counts, signals


def compress_counts(values: Sequence[int]) -> str:
    """Run-length list: ``[2, 2, 2, 1]`` -> ``"2(x3),1"``; ``[4, 4]`` -> ``"4(x2)"``."""
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        parts.append(f"{values[i]}(x{j - i})" if j - i > 1 else str(values[i]))
        i = j
    return ",".join(parts)


def parse_signal(text: str) -> int:
    """``"USR1"``, ``"sigusr1"``, ``"10"`` -> 10 (this host's numbering).

    Raises ``ValueError`` for unknown names and numbers outside 1..NSIG-1.
    """
    word = text.strip()
    if word.isdigit():
        number = int(word)
        if 1 <= number < _signal.NSIG:
            return number
        raise ValueError(f"Invalid signal: {text}")
    name = word.upper()
    name = name if name.startswith("SIG") else "SIG" + name
    member = _signal.Signals.__members__.get(name)
    if member is None:
        raise ValueError(f"Invalid signal: {text}")
    return int(member)


def signal_description(number: int) -> str:
    """``9`` -> ``"Killed"`` (for ``RaisedSignal:9(Killed)``)."""
    return _signal.strsignal(number) or f"Signal {number}"


def final_state(status: int) -> tuple[str, str]:
    """(state, reason) of a job whose batch script or command ended with raw ``status``.

    The OOM marker of the node's cgroup -> OUT_OF_MEMORY; killed by a signal ->
    FAILED (RaisedSignal); a non-zero exit -> FAILED (NonZeroExitCode); else
    COMPLETED.  E.g. ``3 << 8`` -> ("FAILED", "NonZeroExitCode"), 9 ->
    ("FAILED", "RaisedSignal").
    """
    if status & 0xFF == OOM_STATUS:
        return "OUT_OF_MEMORY", reasons.OUT_OF_MEMORY
    if os.WIFSIGNALED(status):
        return "FAILED", reasons.RAISED_SIGNAL
    if os.WEXITSTATUS(status) != 0:
        return "FAILED", reasons.NON_ZERO_EXIT_CODE
    return "COMPLETED", reasons.NONE
