"""``slurmd --conf-server HOST[:PORT][,HOST2[:PORT2]]``: run from the controller's config.

A node agent on a host without slurm.conf (Slurm's "configless" mode, see
:mod:`slurmlite.configless`) asks the controller for its files before it
does anything else, in the foreground, so a failure is printed where the
admin typed the command:

1. ``GET http://HOST:PORT/v1/config/files`` (port default 6817, Slurm's), with
   a fresh credential from the local munged (``munge -n``, munge's default
   socket: the config that would name another is not here yet), or
   ``SLURM_JWT`` when that is set.  Servers are tried in the order given;
   a server that does not answer is tried again (short pauses, as the
   controller may be starting at boot) until ``deadline`` seconds have gone.
   A refusal (HTTP 401: the munge keys differ, the clocks are far apart) is
   final, with the controller's reason.
2. The copy is written to ``SlurmdSpoolDir/conf-cache/`` (``%n`` = this
   node), the spool dir read from the served slurm.conf itself, each file
   replaced whole.
3. The agent loads that copy as if given ``-f`` it: ``Config.path`` is the
   cached file, so the jobs' ``SLURM_CONF`` points at it
   (``local_conf``) and commands inside jobs reach the controller as any
   other command on this host would -- over TCP, with munge.

Example: ``slurmd -N a1 --conf-server ctl:6817`` with ``SlurmdSpoolDir=
/var/spool/slurmd/%n`` -> ``/var/spool/slurmd/a1/conf-cache/slurm.conf``.
A changed config reaches the agent when it is restarted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

import httpx

from slurmlite.config import Config, ConfigError, load_config, parse_config
from slurmlite.configless import cache_dir, write_cache

__all__ = ["FetchError", "fetch", "load", "local_conf", "parse_servers"]

DEFAULT_PORT = 6817  # SlurmctldPort's default
PATH = "/v1/config/files"


class FetchError(Exception):
    """No configuration came from any server; ``str()`` says why, for ``slurmd: error:``."""


def parse_servers(text: str) -> list[tuple[str, int]]:
    """``"ctl:7000,ctl2"`` -> ``[("ctl", 7000), ("ctl2", 6817)]``; ``ValueError`` if malformed."""
    out: list[tuple[str, int]] = []
    for item in (part.strip() for part in text.split(",")):
        host, sep, port = item.rpartition(":") if ":" in item else (item, "", "")
        if not host or (sep and not (port.isdecimal() and 0 < int(port) < 65536)):
            raise ValueError(f"'{item}' is not HOST[:PORT]")
        out.append((host, int(port) if sep else DEFAULT_PORT))
    return out


def _proof(env: Mapping[str, str]) -> dict[str, str]:
    token = env.get("SLURM_JWT", "").strip()
    if token:
        return {"X-SLURM-USER-TOKEN": token}
    from slurmlite import munge

    try:
        return {"X-Slurmlite-Munge": munge.encode(None)}
    except munge.AuthError as e:
        raise FetchError(f"--conf-server needs munged (or SLURM_JWT): {e}") from None


def _refusal(r: httpx.Response) -> str:
    try:
        detail = r.json().get("detail")
    except ValueError:
        detail = r.text
    if isinstance(detail, dict):
        detail = detail.get("detail") or detail.get("error")
    return f"HTTP {r.status_code}: {detail}"


def fetch(
    servers: list[tuple[str, int]],
    deadline: float = 30.0,
    env: Mapping[str, str] | None = None,
    get: Callable[..., httpx.Response] = httpx.get,
    sleep: Callable[[float], None] = time.sleep,
    timer: Callable[[], float] = time.monotonic,
) -> dict[str, str]:
    """The served files from the first server that answers (module doc, step 1)."""
    env = os.environ if env is None else env
    end = timer() + deadline
    last = "no server tried"
    while True:
        for host, port in servers:
            url = f"http://{host}:{port}{PATH}"
            try:
                r = get(url, headers=_proof(env), timeout=10.0)
            except httpx.HTTPError as e:
                last = f"{host}:{port}: {e or type(e).__name__}"
                continue
            if r.status_code == 200:
                files = r.json().get("files")
                if not isinstance(files, dict) or not all(
                    isinstance(v, str) for v in files.values()
                ):
                    raise FetchError(f"{host}:{port} answered no configuration files")
                return files
            if r.status_code in (401, 403):
                raise FetchError(f"{host}:{port} refused the request: {_refusal(r)}")
            last = f"{host}:{port}: {_refusal(r)}"
        if timer() >= end:
            raise FetchError(
                f"no configuration from {_names(servers)} in {deadline:.0f} s ({last})"
            )
        sleep(0.5)


def _names(servers: list[tuple[str, int]]) -> str:
    return ",".join(f"{h}:{p}" for h, p in servers)


def load(server: str, node: str, deadline: float = 30.0) -> Config:
    """Fetch, cache (module doc, step 2) and read the copy as ``-f`` would."""
    try:
        servers = parse_servers(server)
    except ValueError as e:
        raise FetchError(str(e)) from None
    files = fetch(servers, deadline)
    try:
        served = parse_config(files["slurm.conf"], "<conf-server>")
        spool = served.expand_node_path(served.slurmd_spool_dir, node)
        path = write_cache(files, cache_dir(spool))
        return load_config(str(path))
    except KeyError:
        raise FetchError(f"{_names(servers)} served no slurm.conf") from None
    except ConfigError as e:
        raise FetchError(f"the served configuration: {e}") from None
    except OSError as e:
        raise FetchError(f"cannot cache the served configuration: {e}") from None


def local_conf(environment: dict[str, str], path: str) -> dict[str, str]:
    """``environment`` with ``SLURM_CONF`` at the file this agent reads (as Slurm's slurmd
    sets it): the controller's own path may not exist on this host (configless).

    >>> local_conf({"SLURM_CONF": "/etc/slurm/slurm.conf"}, "/spool/a1/conf-cache/slurm.conf")
    {'SLURM_CONF': '/spool/a1/conf-cache/slurm.conf'}
    """
    if environment.get("SLURM_CONF", path) == path or not path or path.startswith("<"):
        return environment
    return {**environment, "SLURM_CONF": path}
