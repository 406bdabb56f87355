"""``slurmlite version`` (and ``slurmlite --version``): which slurmlite, speaking which
Slurm, on which store schema.

What this machine's code says comes first and needs no daemon: the package
version (``slurmlite.version``: the package metadata), the Slurm dialect
(``slurmlite.config.SLURM_VERSION``), the store revision this code expects
(the Alembic head of its migrations) and the Python running it.  Then the
controller of ``$SLURM_CONF`` is asked (``GET /v1/version``, authenticated
like every request) what it runs and what revision its store is at, with the
store's kind (``sqlite``/``postgresql``; the URL itself is never shown).
The local lines are printed at once; a controller that does not answer
within 3 s (or a configuration that cannot be read) gives one last line
saying why it could not be asked, and the exit status is still 0::

    $ slurmlite version
    slurmlite       0.1.0
    slurm dialect   22.05.8
    store schema    0022 (the revision this code expects)
    python          3.11.9
    controller      slurmlite 0.1.0, cluster local (/tmp/lab/slurm.conf)
    store           sqlite, at revision 0022 (up to date)
"""

from __future__ import annotations

import platform
from typing import Any

WIDTH = 16
ASK_TIMEOUT = 3.0  # seconds: a controller that runs answers in milliseconds


def line(label: str, value: str) -> str:
    return f"{label:<{WIDTH}}{value}"


def local_lines() -> list[str]:
    from slurmlite.config import SLURM_VERSION
    from slurmlite.version import schema_head, slurmlite_version

    head = schema_head()
    return [
        line("slurmlite", slurmlite_version()),
        line("slurm dialect", SLURM_VERSION),
        line(
            "store schema",
            f"{head} (the revision this code expects)" if head else "unknown (no migrations here)",
        ),
        line("python", f"{platform.python_version()} ({platform.python_implementation()})"),
    ]


def store_state(head: str | None, answer: dict[str, Any]) -> str:
    """How the store's revision compares with the controller's code and with this code."""
    at = answer.get("store_revision")
    theirs = answer.get("schema_head")
    if at is None:
        return "never migrated"
    if at != theirs:
        return f"the controller's code expects {theirs}"
    if head and at != head:
        return f"this machine's code expects {head}: one of the two was upgraded"
    return "up to date"


def remote_lines(conf: str | None = None) -> list[str]:
    """What the controller answers, or one line saying why it could not be asked."""
    from cli.client import ControllerClient
    from slurmlite.errors import SlurmError
    from slurmlite.version import schema_head

    try:
        found = ControllerClient.from_env("slurmlite", conf)  # reads SLURM_CONF
        limit = min(ASK_TIMEOUT, float(getattr(found.config, "message_timeout", 10)))
        client = ControllerClient(found.config, "slurmlite", timeout=limit, token=found.token)
        try:
            answer = client.request("GET", "/v1/version")
            where = f"cluster {client.config.cluster_name} ({client.config.path})"
        finally:
            client.close()
    except SlurmError as e:
        return [line("controller", f"could not be asked: {e.full}")]
    at = answer.get("store_revision") or "none"
    state = store_state(schema_head(), answer)
    return [
        line("controller", f"slurmlite {answer['slurmlite']}, {where}"),
        line("store", f"{answer['store_kind']}, at revision {at} ({state})"),
    ]


def print_versions(conf: str | None = None) -> None:
    """The local lines at once, then what the controller says (or why it did not)."""
    print("\n".join(local_lines()), flush=True)
    print("\n".join(remote_lines(conf)))
