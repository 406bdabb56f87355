"""``slurmlite explain JOBID``: why is my job pending, and what would start it sooner?

    slurmlite explain JOBID [--json] [-f slurm.conf]

Asks the controller (``GET /v1/jobs/JOBID/explain``) and prints a report:
the job's priority with each weighted factor, its place in the queue, what
it lacks on which node, the jobs that block it, its estimated start and the
changes that would make it start sooner -- each one verified by the
scheduler's own pass on the changed request.  ``--json`` prints the answer
as the API gives it.  Example::

    $ slurmlite explain 3
    Job 3 (bob, partition debug) is PENDING, reason Priority:
      jobs of higher priority come first on the nodes it could use.
    Priority 1250: Age 250, Assoc 0, FairShare 1000, JobSize 0, Partition 0, QOS 0, Site 0, Nice 0
    Queue: 2nd of 2 pending jobs (2nd of 2 in partition debug); 1 eligible job ahead of it
    Estimated start: 2026-11-30T15:00:00 (in 3 h 00 min) on n1
    Blocked by:
      job 1 (alice) running on n1, holding GPU n1:0, until 2026-11-30T13:00:00 (in 1 h 00 min)
      job 2 (carol) reserved n1 from 2026-11-30T13:00:00 (in 1 h 00 min) to 2026-11-30T15:00:00 (in 3 h 00 min)
    It would start sooner:
      with --time=1:00:00 it would start at 2026-11-30T12:00:00 (now) instead of 2026-11-30T15:00:00

A job that can never run as asked says ``Estimated start: never, as asked``
and lists under "Blocked by" the limits it exceeds, the one to fix first on
top, each with the request that would fit::

    Estimated start: never, as asked
    Blocked by:
      partition debug has 2 nodes; ask for -N 2 or fewer

A job held back by its user's own QOS limit names it there too, e.g.
``your QOS normal allows 1 running job per user; 1 of your jobs (4) is running``.

A job that is not pending gets one line saying how it stands.
"""

from __future__ import annotations

import json
import sys

import click

from slurmlite.hostlist import compress_sorted

TYPE_CHECKING = False  # typing is not imported at run time (start-up time)
if TYPE_CHECKING:
    from typing import Any

FACTOR_NAMES = {
    "age": "Age",
    "assoc": "Assoc",
    "fairshare": "FairShare",
    "jobsize": "JobSize",
    "partition": "Partition",
    "qos": "QOS",
    "site": "Site",
    "nice": "Nice",
}


@click.command("explain")
@click.argument("job_id", type=click.IntRange(0, 2**32 - 1))
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.option("-f", "conf_file", default=None, help="slurm.conf to read (default: $SLURM_CONF).")
def explain(job_id: int, as_json: bool, conf_file: str | None) -> None:
    """Explain why job JOB_ID is pending and what would start it sooner."""
    from cli.client import ControllerClient
    from slurmlite.errors import SlurmError, exit_status

    try:
        client = ControllerClient.from_env("slurmlite", conf_file)
        data = client.request("GET", f"/v1/jobs/{job_id}/explain")
    except SlurmError as e:
        click.echo(f"slurmlite: error: {e}", err=True)
        sys.exit(exit_status(e.code) or 1)
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        click.echo(render(data), nl=False)


def render(data: dict[str, Any]) -> str:
    """The readable report of one ``JobExplanation`` answer (a dict)."""
    from slurmlite.timefmt import fmt_timestamp

    now = data["now"]

    def when(ts: float | None) -> str:
        return "unknown" if ts is None else f"{fmt_timestamp(ts)} ({_from_now(ts - now)})"

    if data["state"] != "PENDING":
        return data["message"] + "\n"
    lines = [
        f"Job {data['job_id']} ({data['user']}, partition {data['partition']}) is PENDING, "
        f"reason {data['reason']}:",
        f"  {data['reason_text'] or 'see squeue'}.",
    ]
    factors = ", ".join(f"{_factor_name(k)} {_num(v)}" for k, v in data["factors"].items())
    prio = f"Priority {data['priority']}"
    if data["direct"]:
        lines.append(f"{prio} (set by an administrator)")
    else:
        lines.append(f"{prio}: {factors}" if factors else f"{prio} (no factor breakdown recorded)")
    q = data.get("queue")
    if q:
        ahead = q["ahead_on_nodes"]
        lines.append(
            f"Queue: {_nth(q['position'])} of {q['pending']} pending job{'s' * (q['pending'] != 1)} "
            f"({_nth(q['partition_position'])} of {q['partition_pending']} in partition "
            f"{data['partition']}); {ahead} eligible job{'s' * (ahead != 1)} ahead of it"
        )
    start = data["estimated_start"]
    never = data.get("never") or []
    if never:
        lines.append("Estimated start: never, as asked")
    elif data["starts_now"]:
        lines.append("Estimated start: now (the next scheduling pass starts it)")
    else:
        on = f" on {compress_sorted(data['planned_nodes'])}" if data["planned_nodes"] else ""
        lines.append(f"Estimated start: {when(start)}{on}")
    if data.get("waits_for"):
        lines.append("Waits for:")
        lines += [f"  {w}" for w in data["waits_for"]]
    lacking = [n for n in data["nodes"] if n["problems"]]
    if lacking:
        lines.append("What it lacks now:")
        lines += [f"  {n['node']}: {'; '.join(n['problems'])}" for n in lacking]
    limit = [data["user_limit"]] if data.get("user_limit") else []
    if never or limit or data["blockers"]:
        # the first line is the one to act on: the limit never met, then the user's own limit
        lines.append("Blocked by:")
        lines += [f"  {text}" for text in [*never, *limit]]
        lines += [f"  {_blocker(b, when)}" for b in data["blockers"]]
    if data["suggestions"]:
        lines.append("It would start sooner:")
        for s in data["suggestions"]:
            instead = fmt_timestamp(start) if start is not None else "an unknown time"
            instead = "never" if never else instead
            lines.append(
                f"  with {s['flag']} it would start at {when(s['start'])} instead of {instead}"
            )
    lines += [f"Note: {n}" for n in data["notes"]]
    return "\n".join(lines) + "\n"


def _blocker(b: dict[str, Any], when: Any) -> str:
    who = f"job {b['job_id']}" + (f" ({b['user']})" if b["user"] else "")
    nodes = compress_sorted(b["nodes"])
    if b["kind"] == "running":
        gpus = (
            f", holding GPU{'s' * (len(b['gpus']) > 1)} {','.join(b['gpus'])}" if b["gpus"] else ""
        )
        until = when(b["end"]) if b["end"] is not None else "no time limit"
        return f"{who} running on {nodes}{gpus}, until {until}"
    if b["kind"] == "reservation":
        end = f" to {when(b['end'])}" if b["end"] is not None else ""
        return f"{who} reserved {nodes} from {when(b['start'])}{end}"
    if b["kind"] == "starting":
        return f"{who}, higher in the queue, starts now on {nodes}"
    return f"{who}, higher in the queue, waits for resources first in this partition"


def _from_now(seconds: float) -> str:
    """``1500`` -> ``in 25 min``; ``7500`` -> ``in 2 h 05 min``; under a minute: ``now``."""
    minutes = int(seconds // 60)
    if minutes <= 0:
        return "now" if seconds > -60 else f"{-minutes} min ago"
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    if days:
        return f"in {days} d {hours} h"
    return f"in {hours} h {mins:02d} min" if hours else f"in {mins} min"


def _factor_name(key: str) -> str:
    if key.startswith("tres:"):
        return f"TRES {key[5:]}"
    return FACTOR_NAMES.get(key, key)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def _nth(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
