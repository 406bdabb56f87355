"""Hostlist expressions: ``n[01-04,7]`` <-> ``n01 n02 n03 n04 n7``.

Slurm writes node sets in a compact bracket syntax everywhere (``-w``,
``SLURM_JOB_NODELIST``, squeue/sinfo columns, ``scontrol show hostnames``).
This module is slurmlite's one implementation of it (reference: spec §9,
facts from Slurm's ``src/common/hostlist.c``).

Model
-----
Every host is kept as a triple ``(prefix, number, width)``; it renders as
``prefix + str(number).zfill(width)``.  A host without a number (``login``,
``n1-ib``) is ``(name, None, 0)`` and is never put in brackets.

* A plain name is split at its trailing run of digits: ``nid001`` ->
  ``("nid", 1, 3)``.
* A bracket token keeps its written prefix: ``nid00[1-3]`` ->
  ``("nid00", 1, 1)``, ``("nid00", 2, 1)``, ... .  So the compressed text
  depends on how the list was built, exactly as in Slurm (spec §9.3 rows 9
  and 18/19).

Expansion (:func:`expand`) splits on space/comma/tab/newline outside
brackets; the **last** ``[...]`` of a token holds ``N`` / ``A-B`` items, the
text before it may hold more groups (cartesian product, leftmost group
varies slowest) and the text after it is a suffix.  Zero padding width is
the length of the lower bound as written (``[001-5]`` -> 001..005).

Compression merges a host into the range before it when the prefix is the
same, the number is ``hi + 1`` and one zero-padding width renders both
(``n9,n10`` -> ``n[9-10]``; ``n1,n01`` stay apart: ``n[1,01]``).  Adjacent
ranges with the same prefix share one bracket.  Invariant:
``expand(compress(x)) == x`` (as-is) and
``expand(compress_sorted(x)) == unique(sort_hosts(x))``.

Worked example::

    >>> expand("rack[1-2]-n[1-2]")
    ['rack1-n1', 'rack1-n2', 'rack2-n1', 'rack2-n2']
    >>> compress(["n1", "n2", "n3", "x5", "n10"])        # scontrol show hostlist
    'n[1-3],x5,n10'
    >>> compress_sorted(["n3", "n1", "n2", "x5", "n10"])  # squeue/sinfo display
    'n[1-3,10],x5'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["HostlistError", "expand", "compress", "compress_sorted", "sort_hosts"]

MAX_RANGE = 65536  # most hosts one ``A-B`` item may name (Slurm's MAX_RANGE)
_SEPARATORS = " ,\t\n"
_ITEM = re.compile(r"(\d+)(?:-(\d+))?")
_TRAILING_DIGITS = re.compile(r"^(.*?)(\d+)$")
_NAT_SPLIT = re.compile(r"(\d+)")

Host = tuple[str, int | None, int]  # (prefix, number or None, zero-pad width)


class HostlistError(ValueError):
    """A malformed hostlist expression.

    ``str(err)`` is what scontrol prints (``Invalid hostlist: <expr>``);
    ``err.detail`` names the bad piece (``Invalid range: '3-1'``).
    """

    def __init__(self, expr: str, item: str) -> None:
        self.expr = expr
        self.item = item
        self.detail = f"Invalid range: '{item}'"
        super().__init__(f"Invalid hostlist: {expr}")


# ------------------------------------------------------------------ parsing


def _tokens(expr: str) -> list[str]:
    """Split on separators outside brackets; check bracket balance."""
    tokens: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in expr:
        if ch == "[":
            depth += 1
            if depth > 1:
                raise HostlistError(expr, "".join(current) + ch)
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise HostlistError(expr, "".join(current) + ch)
        if depth == 0 and ch in _SEPARATORS:
            if current:
                tokens.append("".join(current))
            current = []
        else:
            current.append(ch)
    if depth:
        raise HostlistError(expr, "".join(current))
    if current:
        tokens.append("".join(current))
    return tokens


def _ranges(expr: str, body: str) -> list[tuple[int, int, int]]:
    """``"1-3,07"`` -> ``[(1, 3, 1), (7, 7, 2)]`` as (lo, hi, width)."""
    out: list[tuple[int, int, int]] = []
    for item in body.split(","):
        m = _ITEM.fullmatch(item)
        if m is None:
            raise HostlistError(expr, item)
        lo_text, hi_text = m.group(1), m.group(2)
        lo = int(lo_text)
        hi = int(hi_text) if hi_text is not None else lo
        if hi < lo or hi - lo + 1 > MAX_RANGE:
            raise HostlistError(expr, item)
        out.append((lo, hi, len(lo_text)))
    return out


def _split_name(name: str) -> Host:
    """``"nid001"`` -> ``("nid", 1, 3)``; ``"n1-ib"`` -> ``("n1-ib", None, 0)``."""
    m = _TRAILING_DIGITS.match(name)
    if m is None:
        return (name, None, 0)
    return (m.group(1), int(m.group(2)), len(m.group(2)))


def _render(host: Host) -> str:
    prefix, number, width = host
    return prefix if number is None else f"{prefix}{number:0{width}d}"


def _expand_plain(expr: str, text: str) -> list[str]:
    """Expand a bracket-bearing prefix into plain strings (cartesian)."""
    results = [""]
    for part in re.split(r"(\[[^\]]*\])", text):
        if part.startswith("["):
            values = [
                f"{n:0{w}d}" for lo, hi, w in _ranges(expr, part[1:-1]) for n in range(lo, hi + 1)
            ]
            results = [r + v for r in results for v in values]
        elif part:
            results = [r + part for r in results]
    return results


def _token_hosts(expr: str, token: str) -> list[Host]:
    """One token -> its hosts, keeping the bracket prefix as written."""
    if "[" not in token:
        return [_split_name(token)]
    open_at = token.rindex("[")
    close_at = token.index("]", open_at)
    head, body, suffix = token[:open_at], token[open_at + 1 : close_at], token[close_at + 1 :]
    ranges = _ranges(expr, body)
    prefixes = _expand_plain(expr, head)
    hosts: list[Host] = []
    for prefix in prefixes:
        for lo, hi, width in ranges:
            for n in range(lo, hi + 1):
                if suffix:
                    hosts.append(_split_name(f"{prefix}{n:0{width}d}{suffix}"))
                else:
                    hosts.append((prefix, n, width))
    return hosts


def _parse(names: str | Iterable[str]) -> list[Host]:
    items = [names] if isinstance(names, str) else list(names)
    hosts: list[Host] = []
    for item in items:
        for token in _tokens(item):
            hosts.extend(_token_hosts(item, token))
    return hosts


def expand(expr: str) -> list[str]:
    """Hostlist expression -> host names, order and duplicates kept.

    ``expand("n[1-3],n2")`` -> ``['n1', 'n2', 'n3', 'n2']``; ``""`` -> ``[]``.
    Raises :class:`HostlistError` for ``n[3-1]``, ``n[1-3``, ``n[]``,
    ``n[a-c]``, ``n[1,,3]``, ``n[1-10:2]``.
    """
    return [_render(h) for h in _parse(expr)]


# -------------------------------------------------------------- compression


def _merged_width(lo: int, width: int, number: int, n_width: int) -> int | None:
    """Width that renders the range (from ``lo``) and ``number`` unchanged."""
    for candidate in (width, n_width):
        keeps_range = f"{lo:0{candidate}d}" == f"{lo:0{width}d}"
        keeps_host = f"{number:0{candidate}d}" == f"{number:0{n_width}d}"
        if keeps_range and keeps_host:
            return candidate
    return None


def _build(hosts: Iterable[Host]) -> str:
    """Push hosts in order (merging into the previous range) and render."""
    ranges: list[list] = []  # [prefix, lo, hi, width]; lo None = single host
    for prefix, number, width in hosts:
        if ranges and number is not None:
            last = ranges[-1]
            if last[0] == prefix and last[1] is not None and number == last[2] + 1:
                merged = _merged_width(last[1], last[3], number, width)
                if merged is not None:
                    last[2], last[3] = number, merged
                    continue
        ranges.append([prefix, number, number, width])
    parts: list[str] = []
    i = 0
    while i < len(ranges):
        prefix, lo, hi, width = ranges[i]
        if lo is None:
            parts.append(prefix)
            i += 1
            continue
        group = [ranges[i]]
        i += 1
        while i < len(ranges) and ranges[i][0] == prefix and ranges[i][1] is not None:
            group.append(ranges[i])
            i += 1
        if len(group) == 1 and lo == hi:
            parts.append(f"{prefix}{lo:0{width}d}")
            continue
        items = [f"{a:0{w}d}" if a == b else f"{a:0{w}d}-{b:0{w}d}" for _, a, b, w in group]
        parts.append(f"{prefix}[{','.join(items)}]")
    return ",".join(parts)


def compress(names: str | Iterable[str]) -> str:
    """As-is ranged form (``scontrol show hostlist``): order and duplicates kept.

    Each item may itself be an expression; a plain ``str`` is one expression.
    ``compress(["n3", "n1", "n2"])`` -> ``'n[3,1-2]'``.
    """
    return _build(_parse(names))


def _natural_key(text: str) -> list:
    """``"rack10-n"`` sorts after ``"rack2-n"`` (digit runs compare as numbers)."""
    parts = _NAT_SPLIT.split(text)
    return [(int(p), len(p)) if i % 2 else p for i, p in enumerate(parts)]


def _host_key(host: Host) -> tuple:
    prefix, number, width = host
    if number is None:
        return (_natural_key(prefix), 0, 0, 0)
    return (_natural_key(prefix), 1, number, width)


def compress_sorted(names: str | Iterable[str]) -> str:
    """Sorted-set ranged form (squeue/sinfo/scontrol display).

    Natural sort by prefix then number, duplicate names removed.
    ``compress_sorted("node10,node9,node1,node9")`` -> ``'node[1,9-10]'``.
    """
    seen: set[str] = set()
    unique: list[Host] = []
    for host in sorted(_parse(names), key=_host_key):
        name = _render(host)
        if name not in seen:
            seen.add(name)
            unique.append(host)
    return _build(unique)


def sort_hosts(names: Iterable[str]) -> list[str]:
    """Natural sort of plain host names, duplicates kept.

    ``sort_hosts(["gpu10", "cpu1", "gpu9", "gpu9"])`` ->
    ``['cpu1', 'gpu9', 'gpu9', 'gpu10']``.
    """
    return sorted(names, key=lambda name: _host_key(_split_name(name)))
