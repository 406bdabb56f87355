"""Which slurmlite this is: the package version and the store schema this code expects.

The version has one source, the package metadata (``version`` in
``pyproject.toml``, installed as ``slurmlite-X.dist-info``); everything that
shows it (``slurmlite --version``, the Slurm commands' ``--version``,
``scontrol show config``'s ``SlurmliteVersion``) asks :func:`slurmlite_version`.
Reading metadata costs a few milliseconds, so it is done only when a version
is printed, never at import.

:func:`schema_head` names the newest store revision of this source tree
(the Alembic head of ``controller/store/migrations/versions``), read from the
revision files' text so that commands need not import the controller or
Alembic.  Example::

    >>> slurmlite_version()
    '0.1.0'
    >>> schema_head()
    '0022'
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

PACKAGE = "slurmlite"
UNKNOWN = "unknown"
ROOT = Path(__file__).resolve().parents[1]
MIGRATIONS = ROOT / "controller" / "store" / "migrations" / "versions"
_REVISION = re.compile(r"""^revision\s*=\s*["']([^"']+)["']""", re.M)
_DOWN = re.compile(r"^down_revision\s*=\s*(.+)$", re.M)
_WORD = re.compile(r"""["']([^"']+)["']""")


@cache
def slurmlite_version() -> str:
    """The installed package's version; from ``pyproject.toml`` when running from a
    source tree that was never installed; ``unknown`` when neither says."""
    from importlib import metadata

    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return _source_tree_version() or UNKNOWN


def _source_tree_version() -> str | None:
    import tomllib

    try:
        with open(ROOT / "pyproject.toml", "rb") as f:
            project = tomllib.load(f).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return str(project["version"]) if project.get("name") == PACKAGE else None


def schema_head(versions: Path = MIGRATIONS) -> str | None:
    """The revision no other revision builds on (several, comma-joined, if the chain
    has branches); None when the revision files are not there."""
    made: set[str] = set()
    built_on: set[str] = set()
    try:
        files = sorted(versions.glob("*.py"))
    except OSError:
        return None
    for path in files:
        text = path.read_text(errors="replace")
        found = _REVISION.search(text)
        if found is None:
            continue
        made.add(found.group(1))
        down = _DOWN.search(text)
        if down is not None:
            built_on.update(_WORD.findall(down.group(1)))
    heads = sorted(made - built_on)
    return ",".join(heads) if heads else None
