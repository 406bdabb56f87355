"""``slurmlite ui``: a one-time login link to the web dashboard.

    slurmlite ui [-f slurm.conf]

Asks the controller (``POST /v1/ui/link``) over its Unix socket, where the
kernel tells it who you are (from another host: with ``SLURM_JWT`` or
munge, as every command), and prints the link.  Opening it in a browser
logs you in to the dashboard (``/ui``) as yourself; the link works once,
within two minutes, and the session it opens lasts twelve hours or until
you log out.  Keep it to yourself: whoever opens it first is logged in as
you.  Example::

    $ slurmlite ui
    http://127.0.0.1:6817/ui/login?token=3q2-Xy...  (alice; valid once, for 2 minutes)

The dashboard itself: docs/dashboard.md.
"""

from __future__ import annotations

import sys

import click


def ui(conf_file: str | None) -> None:
    from cli.client import ControllerClient
    from slurmlite.errors import SlurmError, exit_status

    try:
        client = ControllerClient.from_env("slurmlite", conf_file)
        data = client.request("POST", "/v1/ui/link")
    except SlurmError as e:
        click.echo(f"slurmlite: error: {e}", err=True)
        sys.exit(exit_status(e.code) or 1)
    click.echo(f"{data['url']}  ({data['user']}; valid once, for 2 minutes)")
