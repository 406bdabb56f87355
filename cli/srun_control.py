"""srun's signals and terminal: Ctrl-C as Slurm's srun reads it, ``--pty``'s raw mode.

Ctrl-C (spec §7.4) -- :class:`InterruptPolicy` turns each SIGINT into one
action, from the time since the previous one:

==========================  =============================================
situation                   action
==========================  =============================================
first Ctrl-C                ``status``: ``srun: interrupt (one more within
                            1 sec to abort)`` and the tasks' state lines
again within 1 s            ``abort``: ``srun: sending Ctrl-C to
                            StepId=N.S``, SIGINT to the tasks, then the
                            step is terminated (TERM, KillWait, KILL)
any Ctrl-C after an abort   ``exit``: srun leaves at once
``-X/--disable-status``     ``forward``: SIGINT to the tasks, nothing else
``--quit-on-interrupt``     ``abort`` at the first Ctrl-C
==========================  =============================================

Worked example: Ctrl-C at t=0.0 -> status; at t=1.5 -> status again (more
than a second later); at t=1.9 -> abort; at t=5.0 -> exit.

Other signals srun receives (TERM, HUP, QUIT, USR1, USR2, ALRM) are
forwarded to the tasks (:data:`FORWARDED`); Ctrl-Z is ignored.  Handlers
only queue the signal number (:class:`SignalQueue`): the main loop acts,
never a handler in the middle of a write.

``--pty`` (:class:`Terminal`): when stdin is a terminal it is put in raw
mode (every key, Ctrl-C and Ctrl-D included, goes to the remote
pseudo-terminal as a byte) and restored on exit whatever happens;
:meth:`Terminal.size` gives the window size sent at start and on SIGWINCH.
"""

from __future__ import annotations

import os
import queue
import signal

FORWARDED = (
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
    signal.SIGALRM,
)
WINDOW = 1.0  # seconds: a second Ctrl-C within this aborts the step


class InterruptPolicy:
    """What a Ctrl-C at time ``now`` means (see the table above)."""

    def __init__(self, quit_on_interrupt: bool = False, disable_status: bool = False) -> None:
        self.quit_on_interrupt, self.disable_status = quit_on_interrupt, disable_status
        self.last: float | None = None
        self.aborted = False

    def on_interrupt(self, now: float) -> str:
        if self.aborted:
            return "exit"
        if self.quit_on_interrupt or (self.last is not None and now - self.last < WINDOW):
            self.aborted = True
            return "abort"
        self.last = now
        return "forward" if self.disable_status else "status"


class SignalQueue:
    """Route srun's signals into a queue while installed (a context manager)."""

    def __init__(self, numbers: tuple[int, ...]) -> None:
        self.numbers = numbers
        self.pending: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._saved: dict[int, object] = {}

    def _handler(self, signum: int, _frame: object) -> None:
        self.pending.put(signum)

    def __enter__(self) -> SignalQueue:
        for number in self.numbers:
            self._saved[number] = signal.signal(number, self._handler)
        self._saved[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, signal.SIG_IGN)
        return self

    def __exit__(self, *_exc: object) -> None:
        for number, handler in self._saved.items():
            signal.signal(number, handler)  # type: ignore[arg-type]

    def drain(self) -> list[int]:
        out = []
        while True:
            try:
                out.append(self.pending.get_nowait())
            except queue.Empty:
                return out


class Terminal:
    """Raw mode on ``fd`` for ``--pty`` when it is a terminal; restored by ``restore``."""

    def __init__(self, fd: int = 0) -> None:
        self.fd = fd
        self._saved: list | None = None  # termios attributes

    @property
    def is_tty(self) -> bool:
        return os.isatty(self.fd)

    def raw(self) -> None:
        if not self.is_tty:
            return
        import termios
        import tty

        self._saved = termios.tcgetattr(self.fd)
        # TCSADRAIN, not setraw's default TCSAFLUSH: what was typed before srun
        # started (a command typed ahead) goes to the remote shell, as with ssh
        tty.setraw(self.fd, termios.TCSADRAIN)

    def restore(self) -> None:
        if self._saved is None:
            return
        import termios

        termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
        self._saved = None

    def size(self) -> tuple[int, int] | None:
        """(rows, cols) of the terminal, None if it is not one."""
        try:
            cols, rows = os.get_terminal_size(self.fd)
        except OSError:
            return None
        return rows, cols


def stdin_is_ours(fd: int = 0) -> bool:
    """May srun read ``fd``?  Not a terminal it does not own: a background
    ``srun ... &`` reading its terminal would be stopped (SIGTTIN)."""
    try:
        if not os.isatty(fd):
            return True
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
