"""``--mail-type``: which job events notify, and the subject line of each.

The values and their arithmetic are Slurm's (``proc_args.c``'s
``parse_mail_type``/``print_mail_type``, ``slurmctld/agent.c``'s subjects):

* a comma list, any case; ``ALL`` is BEGIN, END, FAIL, REQUEUE,
  INVALID_DEPEND and STAGE_OUT (not the TIME_LIMIT ones, not ARRAY_TASKS);
  ``NONE`` anywhere clears the list;  an unknown word is skipped, and a list
  with no known word at all is an error (``Invalid --mail-type
  specification``, exit 255, as sbatch 22.05 says it);
* the canonical form (what ``scontrol show job`` prints as ``MailType=``)
  lists the words in Slurm's fixed order, ``NONE`` for the empty set:
  ``parse("end,Begin") == "BEGIN,END"``, ``parse("ALL") ==
  "INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT"``;
* :func:`events_for` is the one rule that turns a job's state change into
  events: PENDING -> RUNNING is BEGIN; RUNNING -> PENDING is REQUEUE; an end
  in COMPLETED or CANCELLED is END; any other end (FAILED, TIMEOUT,
  NODE_FAIL, OUT_OF_MEMORY, ...) is FAIL, or END for a job that asked for END
  only; TIMEOUT is also TIME_LIMIT.  TIME_LIMIT_50/80/90 come from the
  controller's periodic check (``controller.notify.timelimits``), not from
  a state change;
* :func:`subject` is Slurm's subject line: ``Slurm Job_id=12 Name=train
  Ended, Run time 00:01:02, COMPLETED, ExitCode 0`` (queued time for
  BEGIN, run time for END/FAIL/REQUEUE, elapsed time for the time-limit
  warnings; an array task is ``Slurm Array Task Job_id=10_3 (13) ...``);
* a dependency found never satisfiable is INVALID_DEPEND (``Slurm
  Job_id=12 Name=post Invalid dependency``), raised before the END of the
  cancel that follows it with ``--kill-on-invalid-dep=yes`` (job_mgr.c's
  ``handle_invalid_dependency``);
* an array without ARRAY_TASKS ends with one summary (:class:`ArraySummary`,
  agent.c's ``_set_job_term_info``): the lowest and highest raw exit status
  of its tasks, a task that ended other than COMPLETED with status 0 counting
  as 9 (killed).  Both normal exits: ``ExitCode [0-3]``, the state ``Mixed``
  when the lowest is 0 and the highest not; otherwise ``Mixed, MaxSignal
  [9]`` or ``Mixed, MaxExitCode [3]`` (whichever the highest status is), and
  ``, with requeued tasks`` when a task was requeued.  Its event is FAIL when
  the highest is a non-zero exit (and FAIL was asked for), else END:
  ``Slurm Array Summary Job_id=20_* (20) Name=sweep Failed, Mixed, ExitCode
  [0-3]`` -- no run time, as in Slurm.

Pure: the commands import it (sbatch checks ``--mail-type`` before talking to
the controller) and the controller records and words events with it; what
only the subjects need is imported inside them (sbatch's start-up time).
"""

from __future__ import annotations

from collections.abc import Iterable

# Slurm's print order (print_mail_type)
ORDER: tuple[str, ...] = (
    "ARRAY_TASKS", "INVALID_DEPEND", "BEGIN", "END", "FAIL", "REQUEUE", "STAGE_OUT",
    "TIME_LIMIT_50", "TIME_LIMIT_80", "TIME_LIMIT_90", "TIME_LIMIT",
)  # fmt: skip
ALL = frozenset(("BEGIN", "END", "FAIL", "REQUEUE", "INVALID_DEPEND", "STAGE_OUT"))
NONE = "NONE"
INVALID = "Invalid --mail-type specification"

# event -> the verb of the subject (agent.c's _mail_type_str)
VERBS: dict[str, str] = {
    "BEGIN": "Began",
    "END": "Ended",
    "FAIL": "Failed",
    "REQUEUE": "Requeued",
    "STAGE_OUT": "StageOut/Teardown",
    "TIME_LIMIT": "Reached time limit",
    "TIME_LIMIT_90": "Reached 90% of time limit",
    "TIME_LIMIT_80": "Reached 80% of time limit",
    "TIME_LIMIT_50": "Reached 50% of time limit",
    "INVALID_DEPEND": "Invalid dependency",
}
# the time-limit warnings, with the share of the limit each is due at (checked in this order)
WARNINGS: tuple[tuple[str, float], ...] = (
    ("TIME_LIMIT_90", 0.9),
    ("TIME_LIMIT_80", 0.8),
    ("TIME_LIMIT_50", 0.5),
)
_ENDED_WELL = frozenset(("COMPLETED", "CANCELLED"))
_ENDED = frozenset(
    ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED")
    + ("BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY")
)


def parse(text: str) -> str:
    """``--mail-type`` -> its canonical form; ValueError(:data:`INVALID`) if nothing is known."""
    words: set[str] = set()
    for word in (w.strip().upper() for w in text.split(",")):
        if word == NONE:
            return NONE
        if word == "ALL":
            words |= ALL
        elif word in VERBS or word == "ARRAY_TASKS":
            words.add(word)
    if not words:
        raise ValueError(INVALID)
    return ",".join(w for w in ORDER if w in words)


def combine(first: str | None, second: str) -> str:
    """Two ``--mail-type`` options add up (Slurm ORs them): ``combine("BEGIN", "END")``."""
    if not first or first == NONE:
        return second
    if second == NONE:
        return first
    both = set(first.split(",")) | set(second.split(","))
    return ",".join(w for w in ORDER if w in both)


def words(mail_type: str | None) -> frozenset[str]:
    """The set of a stored canonical form (None and NONE: empty)."""
    if not mail_type or mail_type == NONE:
        return frozenset()
    return frozenset(mail_type.split(","))


class ArraySummary:
    """What an array's one END/FAIL says of all its tasks (see the module docstring).

    A plain class, not a dataclass: sbatch imports this module to check
    ``--mail-type``, and commands start without ``dataclasses``
    (tests/cli/test_import_budget.py)."""

    __slots__ = ("state", "lowest", "highest", "requeued")

    def __init__(self, state: str, lowest: int, highest: int, requeued: bool = False) -> None:
        self.state = state  # the array's own row (its master, the highest index), as Slurm words it
        self.lowest, self.highest = lowest, highest  # raw wait statuses
        self.requeued = requeued

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArraySummary) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__
        )

    def __repr__(self) -> str:
        return f"ArraySummary({self.state!r}, {self.lowest}, {self.highest}, {self.requeued})"

    @property
    def failed(self) -> bool:
        """Slurm's "a task failed": the highest status is a normal non-zero exit."""
        return _exited(self.highest) and self.highest >> 8 != 0

    def term(self) -> str:
        lo, hi = self.lowest, self.highest
        if _exited(lo) and _exited(hi):
            shown = "Mixed" if lo >> 8 == 0 and hi >> 8 > 0 else self.state
            text = f", {shown}, ExitCode [{lo >> 8 & 0xFF}-{hi >> 8 & 0xFF}]"
        elif hi & 0x7F not in (0, 0x7F):
            text = f", Mixed, MaxSignal [{hi & 0x7F}]"
        elif _exited(hi):
            text = f", Mixed, MaxExitCode [{hi >> 8 & 0xFF}]"
        else:
            text = f", {self.state}"
        return text + (", with requeued tasks" if self.requeued else "")


def _exited(status: int) -> bool:
    return status & 0x7F == 0  # WIFEXITED


def array_summary(state: str, tasks: Iterable[tuple[str, int | None, int]]) -> ArraySummary:
    """The summary of tasks given as (state, raw exit status, restarts); ``state``: the master's.

    >>> array_summary("COMPLETED", [("FAILED", 3 << 8, 0), ("COMPLETED", 0, 0)]).term()
    ', Mixed, ExitCode [0-3]'
    """
    statuses, requeued = [], False
    for task_state, status, restarts in tasks:
        status = status or 0
        statuses.append(9 if status == 0 and task_state != "COMPLETED" else status)
        requeued = requeued or restarts > 0
    return ArraySummary(state, min(statuses, default=0), max(statuses, default=0), requeued)


def is_end(old: str | None, new: str) -> bool:
    """Does this change end the job (from a live state to a final one)?"""
    return new in _ENDED and old not in _ENDED


def events_for(
    mail_type: str | None,
    old: str | None,
    new: str,
    *,
    dep_failed: bool = False,
    summary: ArraySummary | None = None,
) -> list[str]:
    """The events a state change from ``old`` to ``new`` raises for this job (see above).

    ``dep_failed``: the change also found the job's dependency never satisfiable;
    ``summary``: the job is an array's last task to end (no ARRAY_TASKS), and
    this is the whole array's summary, which decides between END and FAIL.
    """
    wanted = words(mail_type)
    if not wanted:
        return []
    found: list[str] = ["INVALID_DEPEND"] if dep_failed else []
    if old == new:
        pass
    elif new == "RUNNING" and old == "PENDING":
        found.append("BEGIN")
    elif new == "PENDING" and old is not None and old != "PENDING":
        found.append("REQUEUE")
    elif is_end(old, new):
        if new == "TIMEOUT":
            found.append("TIME_LIMIT")
        failed = summary.failed if summary is not None else new not in _ENDED_WELL
        found.append("FAIL" if failed and "FAIL" in wanted else "END")
    return [e for e in found if e in wanted]


def _interval(event: str, start: float | None, end: float | None, submit: float, now: float) -> str:
    from slurmlite.timefmt import fmt_fixed  # the controller's words: sbatch never loads it

    if event == "BEGIN" and start:
        return f", Queued time {fmt_fixed(max(0, int(start - submit)))}"
    if event in ("END", "FAIL", "REQUEUE") and start and end:
        return f", Run time {fmt_fixed(max(0, int(end - start)))}"
    if event.startswith("TIME_LIMIT") and start:
        return f" Elapsed time {fmt_fixed(max(0, int(now - start)))}"
    return ""


def _term(event: str, state: str, exit_code: int | None) -> str:
    if event not in ("END", "FAIL"):
        return ""
    from slurmlite.states import exit_code_str

    status = exit_code or 0
    if status & 0x7F:  # killed by a signal: no exit code shown
        return f", {state}"
    return f", {state}, ExitCode {exit_code_str(status).split(':')[0]}"


def subject(
    event: str,
    job_id: int,
    name: str,
    state: str,
    *,
    exit_code: int | None = None,
    submit_time: float = 0.0,
    start_time: float | None = None,
    end_time: float | None = None,
    now: float = 0.0,
    array_job_id: int | None = None,
    array_task_id: int | None = None,
    array_summary: bool = False,
    summary: ArraySummary | None = None,
) -> str:
    """Slurm's subject line for ``event`` (see the module docstring).

    ``array_summary``: an event of a whole array (no ARRAY_TASKS), ``Slurm Array
    Summary Job_id=10_* (10) ...``, named by the array's own id, with no times
    (its tasks ran at different times); its END/FAIL is worded from ``summary``.
    """
    if array_summary and array_job_id is not None:
        head = f"Slurm Array Summary Job_id={array_job_id}_* ({array_job_id})"
        term = summary.term() if summary is not None and event in ("END", "FAIL") else ""
        return f"{head} Name={name} {VERBS[event]}{term}"
    if array_job_id is not None and array_task_id is not None:
        head = f"Slurm Array Task Job_id={array_job_id}_{array_task_id} ({job_id})"
    else:
        head = f"Slurm Job_id={job_id}"
    when = _interval(event, start_time, end_time, submit_time, now)
    return f"{head} Name={name} {VERBS[event]}{when}{_term(event, state, exit_code)}"
