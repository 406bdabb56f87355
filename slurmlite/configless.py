"""Configless: the controller's configuration files, served to hosts that have none.

Slurm's "configless" mode (slurmctld ``enable_configless``, ``slurmd
--conf-server``) lets an admin keep slurm.conf on the controller's host
only: a node agent started with ``slurmd --conf-server HOST[:PORT]`` asks the
controller for the files, keeps a copy in ``SlurmdSpoolDir/conf-cache/``
and runs from that copy; its jobs get ``SLURM_CONF`` pointing at the copy, so
``srun``, ``sbatch`` and ``scontrol`` inside a job find the controller too.
slurmlite always serves (``GET /v1/config/files``, any authenticated caller:
slurm.conf is world-readable on a Slurm host as well).

What is served (:func:`served_files`), as ``{file name: text}``:

* ``slurm.conf`` as *one* file: every ``Include`` is replaced by the text it
  names (recursively, as the reader does), comments and line continuations
  are gone (one logical line per line), and ``SlurmliteStoreURL`` is left
  out -- only the controller opens the store, and its URL may carry a
  database password.  Without it the copy parses to the default SQLite URL,
  which no agent ever opens.
* ``gres.conf`` and ``cgroup.conf`` from beside slurm.conf, as they are, when
  they exist (agents read both: GPUs, and how jobs are confined).

The copy is read on another host, so paths in it must be absolute: a
relative path would start from the cache directory there.  Secrets are never
in these files, only their paths (the node key, the munge socket); each host
still needs its own node key file and munged with the cluster's munge key.

Worked example: slurm.conf ``ClusterName=lab`` / ``Include nodes.conf`` /
``SlurmliteStoreURL=postgresql://sl:pw@db/sl`` with nodes.conf
``NodeName=g[1-2] CPUs=8`` serves ``{"slurm.conf": "ClusterName=lab\\n"
"NodeName=g[1-2] CPUs=8\\n"}``.

The wire answer is ``{"files": {...}}``; :func:`write_cache` writes it where
:func:`cache_dir` says, each file replaced whole (write, fsync, rename), so a
crash leaves the old copy or the new one, never half of one.
"""

from __future__ import annotations

import os
from pathlib import Path

from slurmlite.conftext import (
    MAX_INCLUDE_DEPTH,
    ConfigError,
    include_target,
    iter_lines,
    read_file,
    split_pairs,
)

__all__ = ["SERVED", "WITHHELD", "cache_dir", "flatten", "served_files", "write_cache"]

SERVED = ("slurm.conf", "gres.conf", "cgroup.conf")  # the only names a cache may hold
WITHHELD = frozenset({"slurmlitestoreurl"})  # controller-only keys (lower case)
CACHE = "conf-cache"  # under SlurmdSpoolDir, as Slurm's slurmd keeps it


def _render(pairs: list[tuple[str, str]]) -> str:
    return " ".join(f'{k}="{v}"' if (not v or any(c.isspace() for c in v)) else f"{k}={v}"
                    for k, v in pairs)  # fmt: skip


def flatten(text: str, conf_dir: str, label: str = "slurm.conf", depth: int = 0) -> list[str]:
    """The logical lines of ``text``, Includes read in place (relative: ``conf_dir``) and
    the withheld keys dropped; ``ConfigError`` as the reader would raise it."""
    out: list[str] = []
    for number, line in iter_lines(text):
        where = f"{label}:{number}"
        name = include_target(line)
        if name is not None:
            if depth >= MAX_INCLUDE_DEPTH:
                raise ConfigError(f"{where}: Include nested too deeply ('{name}')")
            inner = read_file(os.path.join(conf_dir, name), where)
            out += flatten(inner, conf_dir, name, depth + 1)
            continue
        pairs = split_pairs(line, where)
        kept = [(k, v) for k, v in pairs if k.lower() not in WITHHELD]
        if kept:
            out.append(line if len(kept) == len(pairs) else _render(kept))
    return out


def served_files(conf_path: str) -> dict[str, str]:
    """What the controller reading ``conf_path`` serves to a configless host."""
    conf_dir = os.path.dirname(os.path.abspath(conf_path))
    text = read_file(conf_path, os.path.basename(conf_path))
    files = {"slurm.conf": "".join(line + "\n" for line in flatten(text, conf_dir))}
    for name in SERVED[1:]:
        path = os.path.join(conf_dir, name)
        if os.path.isfile(path):
            files[name] = read_file(path, name)
    return files


def cache_dir(spool_dir: str) -> Path:
    """Where a configless agent keeps its copy: ``<SlurmdSpoolDir, %n expanded>/conf-cache``."""
    return Path(spool_dir) / CACHE


def write_cache(files: dict[str, str], directory: Path) -> Path:
    """Replace the cached copy in ``directory`` with ``files``; return its slurm.conf.

    A name outside :data:`SERVED` (a path, ``..``) is refused, and a file the
    controller no longer serves is removed from the cache."""
    if "slurm.conf" not in files:
        raise ConfigError("the controller served no slurm.conf")
    unknown = sorted(set(files) - set(SERVED))
    if unknown:
        raise ConfigError(f"the controller served unexpected files: {', '.join(unknown)}")
    directory.mkdir(parents=True, exist_ok=True)
    for name in SERVED:
        path = directory / name
        if name not in files:
            path.unlink(missing_ok=True)
            continue
        tmp = path.with_name(f".{name}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(files[name])
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # users' commands in jobs read it (SLURM_CONF)
        os.replace(tmp, path)
    return directory / "slurm.conf"
