"""Packing a code folder into a snapshot: one tar file whose SHA-256 names it.

The same content always gives the same bytes (entries sorted, times, owners
and permissions other than the execute bits cleared), so an unchanged folder
has an unchanged hash and its upload is skipped (the controller stores each
hash once).  Left out: ``.git``, ``__pycache__``, and what the folder's
``.gitignore`` files exclude, in their common forms:

* ``name`` or ``*.ext`` matches at any depth below the file's folder;
* a pattern with a ``/`` (``/build``, ``data/raw``) is relative to it;
* a trailing ``/`` matches folders only; ``!pattern`` takes a path back;
* blank lines and ``#`` comments are skipped; the last matching line decides.

``include_paths`` (from the workload) packs only those files and folders
below the root.  The tar is not compressed: code folders are small, and on
a lab's network packing with gzip costs about as much time as it saves.
A folder over ``limit`` bytes is refused while packing (nothing is uploaded).

Example: ``pack("proj", [], out)`` with ``proj/.gitignore`` = ``data/`` and
``*.ckpt`` packs ``proj/train.py`` but not ``proj/data/x.csv`` nor
``proj/sub/last.ckpt``; ``pack`` returns (hash, size, files).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import tarfile
from pathlib import Path
from typing import BinaryIO

__all__ = ["ALWAYS_LEFT_OUT", "PART", "SnapshotError", "pack", "sha256_file"]

ALWAYS_LEFT_OUT = (".git", "__pycache__")
PART = 8 << 20  # bytes of a snapshot per request, up and down (controller.runs.snapshots)
_CHUNK = 1 << 20


class SnapshotError(Exception):
    """The folder cannot be packed: the message names why (``root_path``...)."""


class _Rules:
    """One folder's ``.gitignore`` lines, checked against paths relative to that folder."""

    def __init__(self, base: str, lines: list[str]) -> None:
        self.base = base  # relative to the root, "" for the root itself
        self.rules: list[tuple[bool, bool, bool, str]] = []  # (negate, dir_only, anchored, pat)
        for raw in lines:
            line = raw.rstrip("\n").rstrip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            line = line[1:] if negate else line
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            self.rules.append((negate, dir_only, anchored, line.lstrip("/")))

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True: left out, False: taken back, None: no line says (``rel`` from the root)."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return None
            rel = rel[len(self.base) + 1 :]
        name = rel.rsplit("/", 1)[-1]
        answer = None
        for negate, dir_only, anchored, pat in self.rules:
            if dir_only and not is_dir:
                continue
            hit = fnmatch.fnmatchcase(rel, pat) if anchored else fnmatch.fnmatchcase(name, pat)
            if hit:
                answer = not negate
        return answer


def _left_out(rel: str, is_dir: bool, rules: list[_Rules]) -> bool:
    if rel.rsplit("/", 1)[-1] in ALWAYS_LEFT_OUT:
        return True
    answer = False
    for r in rules:  # outer folders first, so an inner .gitignore has the last word
        v = r.verdict(rel, is_dir)
        if v is not None:
            answer = v
    return answer


def _walk(root: Path) -> list[str]:
    """Every path to pack, relative to ``root``, sorted; folders before their content."""
    out: list[str] = []
    rules: list[_Rules] = []

    def visit(rel: str) -> None:
        here = root / rel if rel else root
        ignore = here / ".gitignore"
        if ignore.is_file() and not ignore.is_symlink():
            rules.append(_Rules(rel, ignore.read_text(errors="replace").splitlines()))
        with os.scandir(here) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            sub = f"{rel}/{e.name}" if rel else e.name
            is_dir = e.is_dir(follow_symlinks=False)
            if _left_out(sub, is_dir, rules):
                continue
            out.append(sub)
            if is_dir:
                visit(sub)

    visit("")
    return out


def _normal(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
    return info


def pack(
    root_path: str, include_paths: list[str], out: BinaryIO, limit: int, label: str | None = None
) -> tuple[str, int, int]:
    """Write the snapshot of ``root_path`` to ``out``; (sha256 hex, bytes, files).

    Raises :class:`SnapshotError` for a missing root or include path, or past ``limit``;
    ``label``: the root as the file wrote it, for those messages."""
    root = Path(root_path).expanduser()
    root_path = label or root_path
    if not root.is_dir():
        raise SnapshotError(f"code_source.snapshot.root_path: no such folder: {root_path}")
    paths = _walk(root)
    if include_paths:
        wanted = []
        for inc in include_paths:
            clean = inc.strip("/")
            if not (root / clean).exists():
                raise SnapshotError(
                    f"code_source.snapshot.include_paths: {inc}: not found in {root_path}"
                )
            wanted.append(clean)
        paths = [p for p in paths if any(p == w or p.startswith(w + "/") for w in wanted)]
        parents = {"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)}
        paths = sorted(set(paths) | parents)
    digest = hashlib.sha256()
    written = 0

    class _Counting:
        def write(self, data: bytes) -> int:
            nonlocal written
            written += len(data)
            if written > limit:
                raise SnapshotError(
                    f"code_source.snapshot.root_path: the snapshot of {root_path} is over the "
                    f"limit of {limit / (1 << 20):g} MB (SlurmliteSnapshotMaxMB); leave data out "
                    "with .gitignore or include_paths"
                )
            digest.update(data)
            return out.write(data)

    with tarfile.open(fileobj=_Counting(), mode="w|", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
        for rel in paths:
            tar.add(root / rel, arcname=rel, recursive=False, filter=_normal)
    return digest.hexdigest(), written, sum(1 for p in paths if not (root / p).is_dir())


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()
