"""Running one site script (Prolog, Epilog, PrologSlurmctld, EpilogSlurmctld) with a limit.

``run_site_script(path, env, timeout)`` starts ``path`` directly (no
shell; the file needs its ``#!`` line and the execute bit) with exactly
``env`` (``slurmlite.scriptenv``), stdin, stdout and stderr on
``/dev/null``, in ``/``, in a session of its own, and waits on the event
loop, so the caller's thread stays free.  The answer is ``None`` when the
script exited 0, else why it failed, in words for logs and records:

* ``"exit status 3"``, ``"killed by signal 9"``;
* ``"timed out after 5 s"``: past ``timeout`` seconds the script's whole
  session is killed (SIGKILL): a prolog that forked a helper leaves nothing;
* ``"cannot run /etc/slurm/prolog: [Errno 2] ..."``: missing, not executable.

``timeout`` is ``PrologEpilogTimeout``; 0 or Slurm's 65534 mean no limit.
The script runs as the caller: root for a root daemon, as in Slurm.

Example::

    >>> import asyncio
    >>> asyncio.run(run_site_script("/bin/false", {}, 5))
    'exit status 1'
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess

__all__ = ["NO_LIMIT", "run_site_script"]

NO_LIMIT = 65534  # PrologEpilogTimeout's default: wait as long as the script takes


async def run_site_script(path: str, env: dict[str, str], timeout: int | float) -> str | None:
    """Run ``path``; ``None`` if it succeeded, else why not (module doc)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            path,
            env=env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        return f"cannot run {path}: {exc}"
    limit = None if timeout in (0, NO_LIMIT) else timeout
    try:
        status = await asyncio.wait_for(proc.wait(), limit)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return f"timed out after {timeout:g} s"
    finally:
        if proc.returncode is None:  # cancelled: leave nothing behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
    if status == 0:
        return None
    return f"killed by signal {-status}" if status < 0 else f"exit status {status}"
