"""Pseudo-terminals for ``srun --pty``: task 0 of the step runs on one.

A pseudo-terminal is a pair of descriptors (``os.openpty``): the *slave*
looks like a terminal to the program (``isatty`` is true, ``tty`` prints
``/dev/pts/N``, the line discipline echoes, turns ``^C`` into SIGINT for the
foreground process group, ``^D`` into end of file), the *master* is what the
agent reads the program's output from and writes its keystrokes to.

To make it the task's *controlling* terminal -- so that ``^C`` reaches the
foreground job of an interactive shell and job control works -- the task
must lead a new session and claim the terminal with ``ioctl(TIOCSCTTY)``.
A ``subprocess`` child cannot run code between ``fork`` and ``exec``
safely, so the task is started through util-linux ``setsid --ctty``
(``setsid()`` then ``TIOCSCTTY`` on its stdin, then ``exec``; it does not
fork, since a child of the agent leads no process group), with the slave
as its stdin, stdout and stderr.

The window size (``stty size``, ``$LINES``/``$COLUMNS`` of a shell) is the
master's ``TIOCSWINSZ``: srun sends the user's terminal size first and on
every ``SIGWINCH``; the kernel then sends SIGWINCH to the foreground group.

Once every descriptor of the slave is closed (the task and its children
ended), reading the master fails with ``EIO`` on Linux: that is its end of
file (``agent.stepio``).  The agent closes its own copy of the slave as
soon as the task is started, or that end never comes.

Reference: pty(7), tty_ioctl(4) (TIOCSCTTY, TIOCSWINSZ), setsid(1).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import struct
import termios

__all__ = ["EOF_BYTE", "ctty_command", "open_pty", "set_window"]

EOF_BYTE = b"\x04"  # ^D: end of file for a reader in canonical mode (VEOF's default)


def open_pty() -> tuple[int, int]:
    """(master, slave); the master is non-blocking and neither is inherited."""
    master, slave = os.openpty()
    os.set_blocking(master, False)
    return master, slave


def set_window(fd: int, rows: int, cols: int) -> None:
    """Tell the terminal of ``fd`` (the master) its size in characters."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def ctty_command() -> list[str]:
    """The argv prefix that gives the task a session with its stdin as controlling terminal."""
    setsid = shutil.which("setsid", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if setsid is None:
        raise FileNotFoundError("setsid (util-linux) not found: srun --pty needs it")
    return [setsid, "--ctty"]
