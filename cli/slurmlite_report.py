"""``slurmlite report``: who used the lab's GPUs over a period, and how well.

    slurmlite report [--start T] [--end T] [--by user|account] [--json] [-f slurm.conf]

Asks the controller (``GET /v1/reports/lab``) and prints one row per user
(or account)::

    $ slurmlite report --start 2026-11-01 --end 2026-11-08
    Usage 2026-11-01T00:00:00 - 2026-11-08T00:00:00 by user
    USER   JOBS GPU-HOURS CPU-HOURS MEAN-WAIT SUCCESS GPU-UTIL
    alice     2     18.00     20.00      5:00  100.0%    62.5%
    bob       1      0.00      1.00      0:00    0.0%        -

Columns: jobs that held resources in the period; GPU- and CPU-hours held
(clipped to the period, as ``sreport``); the mean wait of the jobs that
started in it; COMPLETED over the jobs that ended in it; the agents'
measured GPU utilization weighted by GPU-hours (``-`` where nothing was
measured).  What each figure means exactly: ``controller.reports.lab``.
``--start``/``--end`` take Slurm's time formats and default as sreport's
(yesterday 00:00 to today 00:00, ends moved to the hour:
``cli.report_period``).  ``--json`` prints the answer as the API gives it.
With ``PrivateData=usage`` a user who is not an operator sees only their own row.
"""

from __future__ import annotations

import json
import sys
import time

import click

TYPE_CHECKING = False  # typing is not imported at run time (start-up time)
if TYPE_CHECKING:
    from typing import Any


@click.command("report")
@click.option("--start", default=None, help="Period start (Slurm time; default yesterday 00:00).")
@click.option("--end", default=None, help="Period end (Slurm time; default today 00:00).")
@click.option("--by", type=click.Choice(["user", "account"]), default="user", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option("-f", "conf_file", default=None, help="slurm.conf to read (default: $SLURM_CONF).")
def report(
    start: str | None, end: str | None, by: str, as_json: bool, conf_file: str | None
) -> None:
    """Jobs, GPU-hours, CPU-hours, waits, success rate and GPU utilization per user or account."""
    from cli.client import ControllerClient
    from cli.report_period import report_period
    from slurmlite.errors import SlurmError, exit_status

    try:
        begin, stop = report_period(start, end, time.time())
    except ValueError as e:
        click.echo(f"slurmlite: error: {e}", err=True)
        sys.exit(1)
    query = {"start": begin, "end": stop, "by": by}
    try:
        client = ControllerClient.from_env("slurmlite", conf_file)
        data = client.request("GET", "/v1/reports/lab", query=query)
    except SlurmError as e:
        click.echo(f"slurmlite: error: {e}", err=True)
        sys.exit(exit_status(e.code) or 1)
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        click.echo(render(data), nl=False)


HEADERS = ("JOBS", "GPU-HOURS", "CPU-HOURS", "MEAN-WAIT", "SUCCESS", "GPU-UTIL")


def cells(row: dict[str, Any]) -> list[str]:
    """One row's figures as printed (``-`` where there is nothing to average)."""
    from slurmlite.timefmt import fmt_compact

    wait = row["mean_wait_s"]
    ended = row["ended"]
    util = row["gpu_util"]
    return [
        str(row["jobs"]),
        f"{row['gpu_hours']:.2f}",
        f"{row['cpu_hours']:.2f}",
        "-" if wait is None else fmt_compact(round(wait)),
        f"{100.0 * row['completed'] / ended:.1f}%" if ended else "-",
        "-" if util is None else f"{util:.1f}%",
    ]


def render(data: dict[str, Any]) -> str:
    """The table of one ``LabReport`` answer (a dict): a title line, a header, the rows."""
    from slurmlite.timefmt import fmt_timestamp

    title = f"Usage {fmt_timestamp(data['start'])} - {fmt_timestamp(data['end'])} by {data['by']}"
    table = [[data["by"].upper(), *HEADERS]]
    table += [[r["name"], *cells(r)] for r in data["rows"]]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = [title]
    for line in table:
        first = line[0].ljust(widths[0])
        rest = [v.rjust(w) for v, w in zip(line[1:], widths[1:], strict=True)]
        lines.append(" ".join([first, *rest]))
    if not data["rows"]:
        lines.append("(no jobs in this period)")
    return "\n".join(lines) + "\n"
