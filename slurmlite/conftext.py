"""slurm.conf as text: logical lines, ``Key=Value`` pairs, and the few keys a command needs.

Both readers of slurm.conf start here.  :mod:`slurmlite.config` types and
checks every key (the daemons need all of them); a command such as
``squeue`` needs only where the controller listens, so
:func:`client_settings` reads just that, without building the typed
configuration: a command pays for what it uses on every run, and the full
reader (its dataclasses alone) costs more than the rest of ``squeue``'s
start-up.

The lexing rules (slurm.conf(5)): ``#`` starts a comment unless inside
double quotes; a trailing ``\\`` joins the next line; a line is
``Key=Value`` pairs, keys case-insensitive, values optionally
double-quoted; ``Include FILE`` reads FILE in place (relative to the
config's directory).  A global key given twice: the last one wins.

Worked example::

    >>> list(iter_lines('ClusterName=lab  # ours\\nNodeName=n[1-2] \\\\\\n CPUs=4\\n'))
    [(1, 'ClusterName=lab'), (2, 'NodeName=n[1-2]  CPUs=4')]
    >>> split_pairs('A=1 B="x y"', "slurm.conf:1")
    [('A', '1'), ('B', 'x y')]
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping

DEFAULT_CONF = "/etc/slurm/slurm.conf"
_UNCOMMENTED = re.compile(r'(?:[^"#]|"[^"]*(?:"|$))*')  # text before a '#' outside quotes
_PAIR = re.compile(r'\s*([A-Za-z_][\w.]*)\s*=[ \t]*(?:"([^"]*)"|([^\s"]*))(?=\s|$)')
MAX_INCLUDE_DEPTH = 8  # ends Include loops


class ConfigError(ValueError):
    """A configuration line slurmlite cannot use; ``str()`` starts with ``file:line:``."""


def iter_lines(text: str) -> Iterator[tuple[int, str]]:
    """Logical lines as ``(first line number, text)``: comments cut, ``\\`` joined."""
    start, parts = 0, []
    for number, raw in enumerate([*text.splitlines(), ""], 1):
        body = _UNCOMMENTED.match(raw).group(0).rstrip()  # type: ignore[union-attr]
        start = start if parts else number
        parts.append(body.removesuffix("\\"))
        if not body.endswith("\\"):
            line, parts = "".join(parts).strip(), []
            if line:
                yield start, line


def split_pairs(line: str, where: str) -> list[tuple[str, str]]:
    """``'A=1 B="x y"'`` -> ``[('A', '1'), ('B', 'x y')]``; ConfigError if no ``=``."""
    pairs: list[tuple[str, str]] = []
    pos, line = 0, line.strip()
    while pos < len(line):
        m = _PAIR.match(line, pos)
        if m is None:
            raise ConfigError(f"{where}: expected Key=Value, found '{line[pos:].split()[0]}'")
        pairs.append((m.group(1), m.group(3) if m.group(2) is None else m.group(2)))
        pos = m.end()
    return pairs


def include_target(line: str) -> str | None:
    """The file of an ``Include FILE`` line, else None."""
    words = line.split(None, 1)
    if words[0].lower() == "include" and len(words) == 2:
        return words[1].strip().strip('"')
    return None


def read_file(path: str, where: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError as err:
        raise ConfigError(f"{where}: cannot read {path}: {err.strerror}") from None


def conf_path(path: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """``-f path``, else ``$SLURM_CONF``, else /etc/slurm/slurm.conf."""
    env = os.environ if env is None else env
    return path or env.get("SLURM_CONF") or DEFAULT_CONF


DEFAULT_MESSAGE_TIMEOUT = 10  # seconds: MessageTimeout, as Slurm's default


class ClientSettings:
    """What a command needs from slurm.conf: the file, the cluster's name, the socket,
    and how long to wait for the controller (``MessageTimeout``, seconds)."""

    __slots__ = ("path", "cluster_name", "socket_path", "message_timeout")

    def __init__(
        self,
        path: str,
        cluster_name: str,
        socket_path: str,
        message_timeout: int = DEFAULT_MESSAGE_TIMEOUT,
    ) -> None:
        self.path, self.cluster_name, self.socket_path = path, cluster_name, socket_path
        self.message_timeout = message_timeout


def client_settings(
    path: str | None = None, env: Mapping[str, str] | None = None
) -> ClientSettings:
    """Read only ``ClusterName``, ``StateSaveLocation``, ``SlurmliteSocket`` and
    ``MessageTimeout`` (a whole number of seconds, at least 1, as the full reader checks).

    Defaults and relative paths follow :mod:`slurmlite.config` (the socket
    is ``<StateSaveLocation>/slurmctld.sock`` unless ``SlurmliteSocket``
    names one; relative paths start from the config's directory), which
    ``tests/unit/test_conftext.py`` checks against the full reader.
    """
    path = conf_path(path, env)
    conf_dir = os.path.dirname(os.path.abspath(path))
    wanted = {"clustername": "cluster", "statesavelocation": "/var/spool/slurmctld"}
    wanted["slurmlitesocket"] = ""
    wanted["messagetimeout"] = str(DEFAULT_MESSAGE_TIMEOUT)
    timeout_at = "<default>"  # where MessageTimeout was set, for the error

    def scan(text: str, fname: str, depth: int) -> None:
        nonlocal timeout_at
        label = os.path.basename(fname)
        for number, line in iter_lines(text):
            where = f"{label}:{number}"
            name = include_target(line)
            if name is not None:
                if depth >= MAX_INCLUDE_DEPTH:
                    raise ConfigError(f"{where}: Include nested too deeply ('{name}')")
                scan(read_file(os.path.join(conf_dir, name), where), name, depth + 1)
                continue
            pairs = split_pairs(line, where)
            if pairs[0][0].lower() in ("nodename", "partitionname"):
                continue
            for key, value in pairs:
                if key.lower() in wanted:
                    wanted[key.lower()] = value
                    if key.lower() == "messagetimeout":
                        timeout_at = where

    scan(read_file(path, os.path.basename(path)), path, 0)
    state = os.path.join(conf_dir, wanted["statesavelocation"])
    socket = wanted["slurmlitesocket"]
    socket = os.path.join(conf_dir, socket) if socket else os.path.join(state, "slurmctld.sock")
    timeout = wanted["messagetimeout"]
    if not timeout.isdecimal() or int(timeout) < 1:
        raise ConfigError(f"{timeout_at}: invalid value '{timeout}' for MessageTimeout")
    return ClientSettings(os.path.abspath(path), wanted["clustername"], socket, int(timeout))
