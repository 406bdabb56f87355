"""The managed runtimes' other verbs on slurmlite's runs, and the user's secrets.

    slurmlite list runs [--all-users] [--state S]...     (squeue for runs)
    slurmlite get run ID [--json]                         (sacct + scontrol show job)
    slurmlite logs ID [--node N] [--attempt A] [--tail N] [-f]  (also of a plain batch job)
    slurmlite cancel ID...                                (scancel)
    slurmlite secret set NAME      (the value from standard input, never the command line)
    slurmlite secret list | delete NAME

Nodes and attempts count from 0, as the runtimes' ``--node`` and ``ATTEMPT``
do.  Another user's run, logs and secrets are refused (``Access/permission
denied``); ``list runs --all-users`` shows everyone's runs as squeue shows
everyone's jobs.
"""

from __future__ import annotations

import getpass
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import click

PROG = "slurmlite"


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) if t else "Unknown"


def _code(raw: int | None) -> str:
    if raw is None:
        return "-"
    return f"{(raw >> 8) & 0xFF}:{raw & 0x7F}"


def _call(what: Callable[[Any], Any]) -> Any:
    from cli.client import ControllerClient
    from slurmlite.errors import SlurmError, exit_status

    client = ControllerClient.from_env(PROG)
    try:
        return what(client)
    except SlurmError as e:
        click.echo(f"{PROG}: error: {e.message}{': ' + e.detail if e.detail else ''}", err=True)
        sys.exit(exit_status(e.code) or 1)
    finally:
        client.close()


@click.group("list")
def list_group() -> None:
    """List runs."""


@list_group.command("runs")
@click.option("--all-users", is_flag=True, help="Everyone's runs, not only yours.")
@click.option("--state", "states", multiple=True, help="Only runs in this state (PENDING...).")
def list_runs(all_users: bool, states: tuple[str, ...]) -> None:
    """List your runs (like squeue, with the finished ones)."""
    query = {"all_users": all_users, "states": [s.upper() for s in states]}
    runs = _call(lambda c: c.request("GET", "/v1/runs", query=query))
    click.echo(f"{'RUN_ID':>8} {'NAME':<24} {'USER':<10} {'STATE':<12} {'ATTEMPT':>7} NODES")
    for r in runs:
        nodes = ",".join(r["nodes"]) or "-"
        click.echo(
            f"{r['run_id']:>8} {r['name'][:24]:<24} {r['user'][:10]:<10} {r['state']:<12} "
            f"{r['attempt']:>7} {nodes}"
        )


@click.group("get")
def get_group() -> None:
    """Show one run."""


@get_group.command("run")
@click.argument("run_id", type=click.IntRange(1, 2**31 - 1))
@click.option("--json", "as_json", is_flag=True, help="The answer as JSON.")
def get_run(run_id: int, as_json: bool) -> None:
    """Show a run: its state, its attempts and the workload it runs."""
    r = _call(lambda c: c.request("GET", f"/v1/runs/{run_id}"))
    if as_json:
        click.echo(json.dumps(r, indent=2, sort_keys=True))
        return
    click.echo(f"Run {r['run_id']} ({r['name']}, {r['user']}): {r['state']}, reason {r['reason']}")
    click.echo(
        f"  submitted {_when(r['submit_time'])}; retries used {r['retries']} of {r['max_retries']}"
    )
    if r.get("snapshot"):
        click.echo(f"  code snapshot {r['snapshot'][:12]}")
    if r.get("secrets"):
        click.echo(f"  secrets: {', '.join(r['secrets'])} (values never shown)")
    if r.get("mlflow_run_id"):
        click.echo(f"  MLflow run {r['mlflow_run_id']}")
    click.echo(f"  {'ATTEMPT':>7} {'STATE':<12} {'START':<19} {'END':<19} {'EXIT':<6} NODES")
    for a in r["attempts"]:
        ended = f" ({a['ended_by']})" if a.get("ended_by") else ""
        click.echo(
            f"  {a['attempt']:>7} {a['state']:<12} {_when(a['start_time']):<19} "
            f"{_when(a['end_time']):<19} {_code(a['exit_code']):<6} {','.join(a['nodes'])}{ended}"
        )


@click.command("logs")
@click.argument("run_id", type=click.IntRange(1, 2**31 - 1))
@click.option("--node", default=0, type=click.IntRange(0), help="Node of the run, from 0.")
@click.option(
    "--attempt", default=None, type=click.IntRange(0), help="Attempt, from 0 (default: the latest)."
)
@click.option("--tail", default=None, type=click.IntRange(0), help="Only the last N lines.")
@click.option("-f", "--follow", is_flag=True, help="Keep printing while the run goes on.")
def logs(run_id: int, node: int, attempt: int | None, tail: int | None, follow: bool) -> None:
    """Print a node's output of a run's attempt, or a batch job's output (from any host)."""
    from cli.slurmlite_watch import follow_log

    def show(c: Any) -> None:
        follow_log(c, run_id, node, attempt, follow, tail)

    try:
        _call(show)
    except KeyboardInterrupt:
        sys.exit(130)


@click.command("cancel")
@click.argument("run_ids", nargs=-1, required=True, type=click.IntRange(1, 2**31 - 1))
def cancel(run_ids: tuple[int, ...]) -> None:
    """Cancel runs (their jobs, as scancel)."""
    from slurmlite.protocol import CancelRequest

    def go(c: Any) -> int:
        for run_id in run_ids:
            c.request("GET", f"/v1/runs/{run_id}")  # a run of ours (or an operator's call)
        results = c.cancel(CancelRequest(job_ids=list(run_ids)))
        bad = 0
        for res in results:
            if res.errno:
                click.echo(f"{PROG}: error: run {res.job_id}: {res.error}", err=True)
                bad = 1
        return bad

    sys.exit(_call(go))


@click.group("secret")
def secret() -> None:
    """Your secrets, handed to your runs as variables (values never printed)."""


@secret.command("set")
@click.argument("name")
def secret_set(name: str) -> None:
    """Set NAME to the value read from standard input (a prompt on a terminal)."""
    if sys.stdin.isatty():
        value = getpass.getpass(f"value of {name}: ")
    else:
        value = sys.stdin.read().rstrip("\n")
    _call(lambda c: c.request("PUT", f"/v1/secrets/{name}", {"value": value}, retry=True))


@secret.command("list")
def secret_list() -> None:
    """List your secrets' names."""
    rows = _call(lambda c: c.request("GET", "/v1/secrets"))
    click.echo(f"{'NAME':<40} UPDATED")
    for r in rows:
        click.echo(f"{r['name']:<40} {_when(r['updated'])}")


@secret.command("delete")
@click.argument("name")
def secret_delete(name: str) -> None:
    """Delete one of your secrets."""
    _call(lambda c: c.request("DELETE", f"/v1/secrets/{name}", retry=True))
