"""``slurmlite check``: are the store's invariants intact?  An operator's command.

    slurmlite check [--repair] [-f slurm.conf]

Asks the running controller (``GET /v1/check``; with ``--repair``, ``POST
/v1/check/repair``), so the checker and the scheduling loop never write the
store at once.  Prints one line per violation and exits 1 if there was any
(with ``--repair``, one ``repaired`` line per repair too, and still 1: like
fsck, 1 says "something was found"; a second run exits 0), 0 when clean;
an error exits as Slurm's commands do (errno & 0xff: 210 when refused).
Only operators may ask (SlurmUser, root, AdminUsers); anyone else gets
Slurm's ``Access/permission denied``.  With the controller down there is
nothing to ask: starting ``slurmctld`` runs the same check and repairs
what it finds before its first scheduling pass (one ``event=invariant_repair``
line each in its log).  The rules: ``controller.sched.invariants``.  Example::

    $ slurmlite check
    rule=finished_job_open_step job=7 step=7.batch what="step 7.batch RUNNING, job NODE_FAIL 312 s ago"
    $ slurmlite check --repair
    rule=finished_job_open_step job=7 step=7.batch what="step 7.batch RUNNING, job NODE_FAIL 312 s ago"
    repaired rule=finished_job_open_step job=7 step=7.batch what="step 7.batch ended CANCELLED at the job's end"
    $ slurmlite check; echo $?
    0
"""

from __future__ import annotations

import sys

import click


@click.command("check")
@click.option("--repair", is_flag=True, help="Mend every violation found (logged by slurmctld).")
@click.option("-f", "conf_file", default=None, help="slurm.conf to read (default: $SLURM_CONF).")
def check(repair: bool, conf_file: str | None) -> None:
    """Check the job store's invariants; exit 1 if any is broken."""
    from cli.client import ControllerClient
    from slurmlite.errors import SlurmError, exit_status

    try:
        client = ControllerClient.from_env("slurmlite", conf_file)
        if repair:
            data = client.request("POST", "/v1/check/repair")
        else:
            data = client.request("GET", "/v1/check")
    except SlurmError as e:
        click.echo(f"slurmlite: error: {e}", err=True)
        sys.exit(exit_status(e.code) or 1)
    for v in data["violations"]:
        click.echo(v["line"])
    for v in data["repairs"]:
        click.echo(f"repaired {v['line']}")
    sys.exit(1 if data["violations"] else 0)
