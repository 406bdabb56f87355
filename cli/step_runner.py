"""srun's main loop while a step runs: start it, watch it, act on signals, end it.

:func:`run_step` launches the granted step (``cli.srun_io.StepRun``), starts
the stdin pump, and then loops every 0.1 s until every node's stream has
ended, doing what srun must do meanwhile:

* Ctrl-C and forwarded signals (``cli.srun_control``);
* ``-K``: the first task that fails ends the step (``srun: Terminating
  StepId=N.S``);
* ``-W S``: S seconds after the first task ended, ``srun: error: First task
  exited Ss ago``, the tasks' state, and the step is ended;
* a node that could not launch, or srun's stdout gone (``srun ... |
  head``): the step is ended.

Ending a step: SIGCONT and SIGTERM to every task, and SIGKILL after the
job's KillWait (``StepLaunch.kill_wait``) if some are still running.  An
interrupted step reports no per-task failure lines (the user asked for it).

It returns srun's exit status and the raw status that decided it (for the
allocation's ExitCode when srun made the allocation).
"""

from __future__ import annotations

import os
import signal
import sys
import time

from cli.srun_control import FORWARDED, InterruptPolicy, SignalQueue, Terminal, stdin_is_ours
from cli.srun_io import Output, StdinPump, StepRun
from slurmlite.stepreport import exit_code, status_lines, worst_status

TYPE_CHECKING = False  # importing typing costs a command ~3 ms
if TYPE_CHECKING:
    from typing import Any

    from slurmlite.srun_request import SrunCommand

TICK = 0.1


class StepWatch:
    """The loop's state: what has been asked of the step so far."""

    def __init__(self, step: StepRun, cmd: SrunCommand, prog: str) -> None:
        self.step, self.cmd, self.prog = step, cmd, prog
        self.policy = InterruptPolicy(cmd.quit_on_interrupt, cmd.disable_status)
        launches = step.nodes[0].launch if step.nodes else {}
        self.kill_wait = int(launches.get("kill_wait", 30) or 0)
        self.kill_at: float | None = None  # when SIGKILL follows the SIGTERM
        self.killed = False
        self.leave = False  # a third Ctrl-C: exit now

    def say(self, text: str) -> None:
        self.step.output.message(f"{self.prog}: {text}")

    def terminate(self, now: float) -> None:
        if self.kill_at is not None:
            return
        self.kill_at = now + self.kill_wait
        self.step.signal(signal.SIGCONT)
        self.step.signal(signal.SIGTERM)

    def status(self) -> None:
        for line in status_lines(self.prog, self.step.label, self.step.ntasks, self.step.exits):
            self.step.output.message(line)

    def on_signal(self, signum: int, now: float) -> None:
        if signum == signal.SIGWINCH:
            self.resize()
            return
        if signum != signal.SIGINT:
            self.step.signal(signum)
            return
        action = self.policy.on_interrupt(now)
        if action == "status":
            self.say("interrupt (one more within 1 sec to abort)")
            self.status()
        elif action == "forward":
            self.say(f"sending Ctrl-C to StepId={self.step.label}")
            self.step.signal(signal.SIGINT)
        elif action == "abort":
            self.step.report_failures = False
            self.say(f"sending Ctrl-C to StepId={self.step.label}")
            self.step.signal(signal.SIGINT)
            self.say(
                f"Job step aborted: Waiting up to {self.kill_wait + 2} seconds for job step to finish."
            )
            self.terminate(now)
        else:
            self.say(f"Force Terminated StepId={self.step.label}")
            self.leave = True

    def resize(self) -> None:
        size = Terminal().size()
        if size is not None:
            self.step.resize(*size)

    def tick(self, now: float) -> None:
        step, cmd = self.step, self.cmd
        if self.kill_at is None:
            if cmd.kill_on_bad_exit and step.bad_exit:
                self.say(f"Terminating StepId={step.label}")
                self.terminate(now)
            elif cmd.wait_s and step.first_exit is not None and now - step.first_exit >= cmd.wait_s:
                step.output.message(f"{self.prog}: error: First task exited {cmd.wait_s}s ago")
                self.status()
                self.terminate(now)
            elif step.launch_failed:
                self.terminate(now)
        if step.output.broken and not self.killed:
            self.killed = True
            step.signal(signal.SIGKILL)
        if self.kill_at is not None and not self.killed and now >= self.kill_at:
            self.killed = True
            step.signal(signal.SIGKILL)


def run_step(
    grant: Any, cmd: SrunCommand, prog: str = "srun", stdin_fd: int = 0
) -> tuple[int, int]:
    """Run the granted step to its end: (srun's exit status, deciding raw status).

    ``stdin_fd``: what srun forwards as the tasks' stdin (srun's own by default).
    """
    output = Output(int(grant.ntasks), cmd.label, cmd.unbuffered, cmd.out_task, cmd.err_task)
    step = StepRun(grant, output, prog)
    watch = StepWatch(step, cmd, prog)
    terminal = Terminal()
    numbers = (signal.SIGINT, *FORWARDED) + ((signal.SIGWINCH,) if cmd.pty else ())
    with SignalQueue(numbers) as signals:
        if cmd.pty:
            terminal.raw()
        try:
            step.start()
            if cmd.read_stdin:
                ours = stdin_is_ours(stdin_fd)
                fd = stdin_fd if ours else os.open(os.devnull, os.O_RDONLY)
                StdinPump(step, cmd.step.get("stdin_task"), fd, close_fd=not ours).start()
            if cmd.pty and step.nodes:
                step.nodes[0].ready.wait()
                watch.resize()
            while not step.wait(TICK):
                now = time.monotonic()
                for signum in signals.drain():
                    watch.on_signal(signum, now)
                if watch.leave:
                    break
                watch.tick(now)
        finally:
            terminal.restore()
    output.close()
    statuses = list(step.exits.values())
    code, raw = exit_code(statuses), worst_status(statuses)
    if (step.launch_failed or watch.leave) and code == 0:
        code, raw = 1, 1 << 8
    sys.stdout.flush()
    return code, raw
