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
  warnings; an array task is ``Slurm Array Task Job_id=10_3 (13) ...``).

Pure: the commands import it (sbatch checks ``--mail-type`` before talking to
the controller) and the controller records and words events with it; what
only the subjects need is imported inside them (sbatch's start-up time).
"""

from __future__ import annotations

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


def events_for(mail_type: str | None, old: str | None, new: str) -> list[str]:
    """The events a state change from ``old`` to ``new`` raises for this job (see above)."""
    wanted = words(mail_type)
    if not wanted or old == new:
        return []
    found: list[str] = []
    if new == "RUNNING" and old == "PENDING":
        found.append("BEGIN")
    elif new == "PENDING" and old is not None and old != "PENDING":
        found.append("REQUEUE")
    elif new in _ENDED and old not in _ENDED:
        if new == "TIMEOUT":
            found.append("TIME_LIMIT")
        if new in _ENDED_WELL or "FAIL" not in wanted:
            found.append("END")
        else:
            found.append("FAIL")
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
) -> str:
    """Slurm's subject line for ``event`` (see the module docstring).

    ``array_summary``: the one mail of a whole array (no ARRAY_TASKS), ``Slurm
    Array Summary Job_id=10_* (13) ...``, worded with the task that raised it.
    """
    if array_summary and array_job_id is not None:
        head = f"Slurm Array Summary Job_id={array_job_id}_* ({job_id})"
    elif array_job_id is not None and array_task_id is not None:
        head = f"Slurm Array Task Job_id={array_job_id}_{array_task_id} ({job_id})"
    else:
        head = f"Slurm Job_id={job_id}"
    when = _interval(event, start_time, end_time, submit_time, now)
    return f"{head} Name={name} {VERBS[event]}{when}{_term(event, state, exit_code)}"
