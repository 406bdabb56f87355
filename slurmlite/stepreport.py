"""What srun says about a step's tasks: labels, exit status, failures, status lines.

Labels (``-l``, spec §7.1): each line a task writes is prefixed with its rank
right-aligned to the width of the largest rank, then ``": "``.  With 4 tasks
the largest rank is 3 (width 1): ``0: vm``; with 12 tasks it is 11 (width
2): `` 3: text``.  :class:`LineLabeler` keeps a partial line until its newline
arrives, so two tasks' lines never mix; :meth:`LineLabeler.flush` writes what
is left when the task ends (labelled, with a newline so that the next
task's line starts on its own).

srun's exit status (spec §1.5): the highest task exit code, unless a task
died from a signal: then 128 + the highest signal number (signals beat exit
codes).  A task the OOM killer ended (raw status ``OOM_STATUS``) counts as
exit code 1.  Worked example: statuses ``[0, 3 << 8, 9]`` (exit 0, exit 3,
SIGKILL) -> 128 + 9 = 137; ``[0, 3 << 8]`` -> 3.

Failed tasks (spec §7.3, golden ``60_stepfail_job_output``): one line per
node and outcome, tasks grouped into ranges::

    srun: error: n1: task 0: Exited with exit code 1
    srun: error: n2: tasks 2-3: Killed
    srun: error: n1: task 1: Out Of Memory

Status lines (first Ctrl-C, ``-W``): ``srun: StepId=12.0 tasks 0-3:
running``, also ``exited`` and ``exited abnormally``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from slurmlite.states import OOM_STATUS, signal_description
from slurmlite.taskranges import format_task_ranges


def label_width(ntasks: int) -> int:
    """Digits of the largest rank: 4 tasks -> 1, 12 tasks -> 2."""
    return len(str(max(ntasks - 1, 0)))


class LineLabeler:
    """Turns one task's output bytes into labelled complete lines.

    A line longer than ``max_line`` bytes is let out in pieces of that size
    (each labelled), so a task that never writes a newline cannot make srun
    hold its output, or copy an ever longer buffer.
    """

    def __init__(self, task: int, width: int, max_line: int = 65536) -> None:
        self.prefix = f"{task:>{width}}: ".encode()
        self.max_line = max_line
        self._partial = b""

    def feed(self, data: bytes) -> bytes:
        """Complete lines of ``data`` (with what was kept before), each labelled."""
        cut = data.rfind(b"\n") + 1
        if not cut:
            self._partial += data
            if len(self._partial) < self.max_line:
                return b""
            rest, self._partial = self._partial, b""
            return self.prefix + rest if self.prefix else rest
        lines = (self._partial + data[:cut]).split(b"\n")[:-1]
        self._partial = data[cut:]
        if not self.prefix:
            return b"\n".join(lines) + b"\n"
        return b"".join(self.prefix + line + b"\n" for line in lines)

    def flush(self) -> bytes:
        """The unfinished last line; labelled, it gets its newline (``b""`` if none)."""
        rest, self._partial = self._partial, b""
        if not rest:
            return b""
        return self.prefix + rest + b"\n" if self.prefix else rest


def _signal(status: int) -> int:
    """The signal that ended a task (0: it exited)."""
    if status == OOM_STATUS:
        return 0
    term = status & 0x7F
    return term if term not in (0, 0x7F) else 0


def _code(status: int) -> int:
    return 1 if status == OOM_STATUS else (status >> 8) & 0xFF


def exit_code(statuses: Iterable[int]) -> int:
    """srun's exit status for its tasks' raw wait statuses (see the docstring)."""
    values = list(statuses)
    signals = [_signal(s) for s in values if _signal(s)]
    if signals:
        return 128 + max(signals)
    return max((_code(s) for s in values), default=0)


def worst_status(statuses: Iterable[int]) -> int:
    """The raw status that decides :func:`exit_code` (0 if none): what a job's
    ExitCode should record for the step."""
    values = list(statuses)
    signalled = [s for s in values if _signal(s)]
    if signalled:
        return max(signalled, key=_signal)
    return max(values, key=_code, default=0)


def outcome(status: int) -> str:
    """``Exited with exit code 3``, ``Killed``, ``Out Of Memory``... ("" for success)."""
    if status == OOM_STATUS:
        return "Out Of Memory"
    sig = _signal(status)
    if sig:
        core = " (core dumped)" if status & 0x80 else ""
        return f"{signal_description(sig)}{core}"
    code = _code(status)
    return f"Exited with exit code {code}" if code else ""


def _tasks(ids: list[int]) -> str:
    return f"{'task' if len(ids) == 1 else 'tasks'} {format_task_ranges(ids)}"


def failed_task_lines(prog: str, host: str, exits: Mapping[int, int]) -> list[str]:
    """``prog: error: host: task(s) R: outcome`` for one node's failed tasks."""
    groups: dict[str, list[int]] = {}
    for task in sorted(exits):
        text = outcome(exits[task])
        if text:
            groups.setdefault(text, []).append(task)
    ordered = sorted(groups.items(), key=lambda item: item[1][0])
    return [f"{prog}: error: {host}: {_tasks(ids)}: {text}" for text, ids in ordered]


def status_lines(prog: str, step: str, ntasks: int, exits: Mapping[int, int]) -> list[str]:
    """``prog: StepId=N.S tasks 0-3: running`` and friends, one line per state."""
    states: dict[str, list[int]] = {}
    for task in range(ntasks):
        status = exits.get(task)
        state = "running" if status is None else "exited" if status == 0 else "exited abnormally"
        states.setdefault(state, []).append(task)
    order = ("running", "exited", "exited abnormally")
    return [f"{prog}: StepId={step} {_tasks(states[s])}: {s}" for s in order if s in states]
