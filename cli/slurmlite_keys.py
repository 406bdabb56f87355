"""``slurmlite keys``: the admin's key files, one per node.

    slurmlite keys node NAMES [--dir DIR] [--key-file FILE] [-f slurm.conf]

``NAMES`` is a hostlist (``n[1-4],gpu1``).  For each node the command
writes its node key, HMAC(cluster key, "node:" + name), to ``DIR/NAME.key``
(mode 0600, replaced whole), or, without ``--dir``, to the path
``SlurmliteNodeKeyFile`` gives (``%n`` = the node's name).  The cluster key
is read from ``--key-file``, else from ``SlurmliteKeyFile``.  Copy each file
to its node only: with it an agent can speak for that node and check orders
meant for it, nothing more (``slurmlite.credential``).

Example, for two hosts that read ``SlurmliteNodeKeyFile=/etc/slurm/node.key``::

    slurmlite keys node n[1-2] --dir /tmp/keys     # wrote /tmp/keys/n1.key ...
    scp -p /tmp/keys/n1.key root@n1:/etc/slurm/node.key
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

TYPE_CHECKING = False  # typing is not imported at run time (start-up time)
if TYPE_CHECKING:
    from typing import NoReturn

    from slurmlite.config import Config

NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # nothing that could leave DIR


@click.group()
def keys() -> None:
    """Write key files (the cluster key itself: 'slurmlite keygen')."""


@keys.command("node")
@click.argument("names")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write DIR/NAME.key (default: the SlurmliteNodeKeyFile of the config).",
)
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The cluster key (default: the SlurmliteKeyFile of the config).",
)
@click.option("-f", "conf_file", default=None, help="slurm.conf to read (default: $SLURM_CONF).")
def node(names: str, directory: Path | None, key_file: Path | None, conf_file: str | None) -> None:
    """Write the key file of each node in NAMES (a hostlist), mode 0600."""
    from slurmlite.credential import CredentialError, load_key, write_node_key_file
    from slurmlite.hostlist import HostlistError, expand

    try:
        nodes = list(dict.fromkeys(expand(names)))
    except HostlistError as e:
        fail(f"invalid node list '{names}': {e}")
    bad = [n for n in nodes if not NODE_NAME.fullmatch(n)]
    if bad or not nodes:
        fail(f"invalid node name '{bad[0] if bad else names}'")
    cfg = _config(conf_file) if key_file is None or directory is None else None
    try:
        cluster_key = load_key(key_file or cfg.key_file)  # type: ignore[union-attr]
    except CredentialError as e:
        fail(str(e))
    if directory is None and not cfg.node_key_file:  # type: ignore[union-attr]
        fail("give --dir DIR, or set SlurmliteNodeKeyFile in slurm.conf")
    for name in nodes:
        if directory is not None:
            path = directory / f"{name}.key"
        else:
            path = Path(cfg.expand_node_path(cfg.node_key_file, name))  # type: ignore[union-attr]
        try:
            write_node_key_file(cluster_key, name, path)
        except OSError as e:
            fail(f"cannot write {path}: {e.strerror or e}")
        click.echo(f"wrote {path}")


def _config(conf_file: str | None) -> Config:
    from slurmlite.config import ConfigError, load_config

    try:
        return load_config(conf_file)
    except (ConfigError, OSError) as e:
        fail(f"{e} (or give --key-file and --dir)")


def fail(message: str) -> NoReturn:
    click.echo(f"slurmlite: error: {message}", err=True)
    sys.exit(1)
