"""Starting a daemon the Unix way (what ``slurmctld``/``slurmd`` do without ``-D``).

``detach(log_file)`` forks twice so the daemon is re-parented to init, starts
a new session, moves to ``/``, and sends stdin to /dev/null and stdout/stderr
to the log file.  ``write_pid``/``remove_pid`` manage the PID file that
``slurmlite cluster down`` uses to stop exactly this process.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def detach(log_file: str | None) -> None:
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    os.chdir("/")
    sys.stdout.flush()
    sys.stderr.flush()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    if log_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        out = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
    else:
        out = os.open(os.devnull, os.O_WRONLY)
    os.dup2(out, 1)
    os.dup2(out, 2)


def write_pid(path: str | None) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(f"{os.getpid()}\n")


def remove_pid(path: str | None) -> None:
    if path:
        try:
            if Path(path).read_text().strip() == str(os.getpid()):
                Path(path).unlink()
        except OSError:
            pass
