"""``slurmlite run --watch`` / ``slurmlite logs -f``: following a run from any host.

``watch_run`` prints each change of the run's state (and attempt) on stderr
and node 0's log of the current attempt on stdout as it grows, polling the
controller (``GET /v1/runs/{id}`` and ``.../logs``, twice a second while
output flows, up to once a second when idle).  When the run ends it prints
the final state and returns the exit status: 0 only for COMPLETED, the
command's exit code for a failure (1 if it had none, e.g. TIMEOUT).
Ctrl-C stops the watching only; the run goes on.

``follow_log`` prints a node's log of one attempt from an offset, until the
run ends (``-f``) or once.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import click

__all__ = ["exit_of", "follow_log", "watch_run"]


def exit_of(run: dict[str, Any]) -> int:
    if run["state"] == "COMPLETED":
        return 0
    code = run.get("exit_code") or 0
    if code & 0xFF00:
        return code >> 8
    return 128 + (code & 0x7F) if code & 0x7F else 1


def _chunk(client: Any, run_id: int, node: int, attempt: int | None, offset: int) -> dict[str, Any]:
    query = {"node": node, "attempt": attempt, "offset": offset}
    return client.request("GET", f"/v1/runs/{run_id}/logs", query=query)  # type: ignore[no-any-return]


def _write(data: str) -> None:
    if data:
        sys.stdout.write(data)
        sys.stdout.flush()


def follow_log(
    client: Any, run_id: int, node: int, attempt: int | None, follow: bool, tail: int | None = None
) -> None:
    """Print a node's log of ``attempt`` (None: the latest; a plain batch job: its output
    file): all of it, or its last ``tail`` lines; then, with ``follow``, as it grows until
    the job has ended."""
    offset, kept = 0, ""
    while True:  # what is there now
        answer = _chunk(client, run_id, node, attempt, offset)
        data, offset = str(answer.get("data") or ""), int(answer.get("next") or offset)
        if not data:
            break
        if tail is None:
            _write(data)
        else:
            kept += data
    if tail is not None:
        _write("".join(kept.splitlines(keepends=True)[-tail:] if tail else []))
    while follow and not answer.get("ended"):  # then as it grows, drained once it ended
        time.sleep(0.5)
        while True:
            answer = _chunk(client, run_id, node, attempt, offset)
            data, offset = str(answer.get("data") or ""), int(answer.get("next") or offset)
            _write(data)
            if not data:
                break


def watch_run(client: Any, run_id: int) -> int:
    said = None
    attempt, offset = -1, 0
    try:
        while True:
            run = client.request("GET", f"/v1/runs/{run_id}")
            where = ",".join(run["nodes"])
            now = (run["state"], run["attempt"], where)
            if now != said:
                on = f" on {where}" if where else ""
                click.echo(f"run {run_id}: {run['state']}{on} (attempt {run['attempt']})", err=True)
                said = now
            if run["attempt"] != attempt:
                attempt, offset = run["attempt"], 0
            data = ""
            if run["nodes"]:
                answer = _chunk(client, run_id, 0, attempt, offset)
                data, offset = str(answer.get("data") or ""), int(answer.get("next") or offset)
                if data:
                    sys.stdout.write(data)
                    sys.stdout.flush()
            if run["ended"] and not data:
                status = exit_of(run)
                click.echo(f"run {run_id}: ended {run['state']}, exit status {status}", err=True)
                return status
            if not data:
                time.sleep(0.5)
    except KeyboardInterrupt:
        click.echo(
            f"\nslurmlite: stopped watching; run {run_id} goes on (slurmlite cancel {run_id} stops it)",
            err=True,
        )
        return 130
