"""``slurmlite archive show FILE``: the jobs of a retention archive, as sacct's columns.

An archive (``controller.jobs.retention``) is JSON lines, one purged job a
line, ``{"job": {column: value}, "steps": [{column: value}, ...]}``.  This
prints one row per job and step, e.g.::

    JobID        JobName    Partition  Account    User       State       ExitCode  Start                End
    1            train      debug      acct00     user00     COMPLETED   0:0       2025-01-02T10:00:01  2025-01-02T10:30:00
    1.batch      batch                                       COMPLETED   0:0       2025-01-02T10:00:01  2025-01-02T10:30:00

``--jobs-only`` (like sacct's ``-X``) leaves the steps out.  Anything else
(a column the table lacks) is one ``jq`` away: ``jq '.job.script' FILE``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

HEAD = ("JobID", "JobName", "Partition", "Account", "User", "State", "ExitCode", "Start", "End")
WIDTHS = (12, 10, 10, 10, 10, 11, 8, 19, 19)


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) if t else "Unknown"


def _exit(status: int | None) -> str:
    """A raw wait status as sacct shows it: ``code:signal``."""
    status = status or 0
    return f"{status >> 8 & 0xFF}:{status & 0x7F}"


def rows(record: dict[str, Any], jobs_only: bool) -> list[tuple[str, ...]]:
    job = record["job"]
    out = [(str(job["id"]), job["name"], job["partition"], job["account"], job["user"],
            job["state"], _exit(job["exit_code"]), _when(job["start_time"]),
            _when(job["end_time"]))]  # fmt: skip
    for st in [] if jobs_only else record.get("steps", []):
        out.append((f"{job['id']}.{st['step_id']}", st["name"], "", "", "", st["state"],
                    _exit(st["exit_code"]), _when(st["start_time"]), _when(st["end_time"])))  # fmt: skip
    return out


@click.group()
def archive() -> None:
    """Read the archives that PurgeJobAfter with ArchiveJobs=yes writes."""


@archive.command("show")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-X", "--jobs-only", is_flag=True, help="Jobs only, not their steps.")
def show(path: Path, jobs_only: bool) -> None:
    """Print the jobs (and steps) archived in PATH."""

    def line(cells: tuple[str, ...]) -> str:
        return " ".join(c[:w].ljust(w) for c, w in zip(cells, WIDTHS, strict=True)).rstrip()

    click.echo(line(HEAD))
    click.echo(" ".join("-" * w for w in WIDTHS))
    with path.open(encoding="utf-8") as f:
        for number, text in enumerate(f, start=1):
            try:
                record = json.loads(text)
            except ValueError:
                raise click.ClickException(f"{path}:{number}: not an archive line") from None
            for cells in rows(record, jobs_only):
                click.echo(line(cells))
