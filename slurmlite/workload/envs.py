"""A run's Python environment on a node: a virtual environment per dependency list, reused.

``environment.dependencies`` is a list of pip requirement lines (``numpy==2.1``,
``-r requirements.txt`` inside the snapshot, ``./wheels/x.whl``) or the
path of a requirements file in the snapshot.  Each node builds a virtual
environment for it with ``python -m venv`` and ``pip install``, or reuses
the one it built before for the same list: the key is the SHA-256 of the
lines, the content of every requirements file they name, and the Python
version.  Environments live per user under
``${XDG_CACHE_HOME:-~/.cache}/slurmlite/envs/<key>`` (``$TMPDIR`` when the
home folder cannot be written); a file lock per key makes several runs --
or several agents sharing a host -- build it once while the others wait.
A finished build is marked by a ``.ready`` file, so a build cut off midway
is redone, never used.

A pip failure raises :class:`EnvError` with pip's own output; ``node-run``
prints it to the node's log and ends the attempt (exit 1).  An empty list
builds nothing: the command runs with the node's Python as it is.

Example: ``ensure(["./pkgs/tiny-0.1-py3-none-any.whl"], code_dir)`` -> the
folder of a venv in which ``import tiny`` works; the same call again returns
at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["EnvError", "ensure", "env_key"]


class EnvError(Exception):
    """The environment could not be built: the message is pip's (or venv's) output."""


def _lines(deps: list[str] | str) -> list[str]:
    return ["-r", deps] if isinstance(deps, str) else list(deps)


def _files(lines: list[str], code_dir: Path) -> dict[str, str]:
    """The requirements files the lines name, with their contents' hashes."""
    out = {}
    for i, line in enumerate(lines):
        word = line.strip()
        name = None
        if word in ("-r", "--requirement") and i + 1 < len(lines):
            name = lines[i + 1].strip()
        elif word.startswith(("-r ", "--requirement ")):
            name = word.split(None, 1)[1]
        if name:
            path = code_dir / name
            out[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
    return out


def env_key(deps: list[str] | str, code_dir: Path) -> str:
    lines = _lines(deps)
    what = {"lines": lines, "files": _files(lines, code_dir), "python": sys.version}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:24]


def _base() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    base = Path(cache) / "slurmlite" / "envs"
    try:
        base.mkdir(parents=True, exist_ok=True)
        if os.access(base, os.W_OK):
            return base
    except OSError:
        pass
    tmp = Path(os.environ.get("TMPDIR") or "/tmp") / f"slurmlite-envs-{os.getuid()}"
    tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
    return tmp


def _pip_args(lines: list[str]) -> list[str]:
    args: list[str] = []
    for line in lines:
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        if word.startswith(("-r ", "--requirement ")):
            args += ["-r", word.split(None, 1)[1]]
        else:
            args.append(word)
    return args


def ensure(deps: list[str] | str, code_dir: Path, python: str = sys.executable) -> Path:
    """The folder of the environment for ``deps`` (built now if needed; module doc)."""
    lines = _lines(deps)
    key = env_key(lines, code_dir)
    target = _base() / key
    with open(f"{target}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run building the same key: wait for it
        if (target / ".ready").exists():
            print(f"slurmlite: reusing the environment {key}", flush=True)
            return target
        shutil.rmtree(target, ignore_errors=True)
        print(
            f"slurmlite: building the environment {key}: pip install {' '.join(lines)}", flush=True
        )
        steps = [
            [python, "-m", "venv", str(target)],
            [str(target / "bin" / "python"), "-m", "pip", "install", "--no-input",
             "--disable-pip-version-check", *_pip_args(lines)],
        ]  # fmt: skip
        for argv in steps:
            done = subprocess.run(
                argv, cwd=code_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            if done.returncode != 0:
                shutil.rmtree(target, ignore_errors=True)
                raise EnvError(done.stdout.strip() or f"{argv[2]} exited {done.returncode}")
        (target / ".ready").write_text(json.dumps(lines) + "\n")
        return target
