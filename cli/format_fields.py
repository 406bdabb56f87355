"""The ``field%width`` formats of sacct, sshare and sacctmgr: one column type, one grammar.

The accounting commands name their columns, not letters (Slurm 22.05's
``src/common/print_fields.c`` and each command's option code, read for facts
only):

Naming
    an item is ``Name[%width]``; a name picks the first field of the command's
    table (in the table's order) that it is a case-insensitive prefix of --
    sacctmgr asks for at least a minimum length per field (``Par`` is too
    short for Partition).  :func:`split_width` and :func:`find_field`.
Width
    the sign is the justification: positive right, negative left.  How the
    ``%`` text becomes a number is the command's (sacct and sshare read it
    with C's :func:`atoi`, sacctmgr wants a whole number).
Printing
    fixed width: every value, header and dashes cell is followed by one
    space (:func:`justify`); text longer than its column is cut and its last
    visible character becomes ``+`` (:func:`cut_plus`) -- which kinds are cut
    is the command's.  ``-p`` ends every value with ``|``, ``-P`` puts ``|``
    between values (:func:`join`); neither cuts.

Worked example (sacct's ``JobName%3``, sshare's ``Account%-6``)::

    >>> justify(cut_plus("CANCELLED by 1001", 10), 10)
    'CANCELLED+ '
    >>> header_lines([Column("JobName", 3, "s"), Column("Account", -8, "s")])
    ['Job Account  ', '--- -------- ']
    >>> join(["65", "ok"], "p"), join(["65", "ok"], "P")
    ('65|ok|', '65|ok')
"""

from __future__ import annotations

from collections import namedtuple

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:
    from collections.abc import Sequence


class Column(namedtuple("Column", "name width kind")):  # noqa: PYI024
    """A field to print: its name (also its header), width (sign = justification)
    and kind, a letter the command's table gives (``s`` text, ``u`` number...).

    (A namedtuple, not a dataclass: ``dataclasses`` costs a command ~10 ms.)
    """

    __slots__ = ()


def split_width(item: str) -> tuple[str, str | None]:
    """``"JobID%-20"`` -> ``("JobID", "-20")``; ``"state"`` -> ``("state", None)``."""
    name, pct, width = item.partition("%")
    return name, (width if pct else None)


def find_field(name: str, names: Sequence[str], least: Sequence[int] = ()) -> int | None:
    """The index of the first of ``names`` that ``name`` is a case-insensitive prefix
    of (and, with ``least``, at least that name's minimum length), else None."""
    lowered = name.lower()
    for i, full in enumerate(names):
        if (not least or len(name) >= least[i]) and full.lower().startswith(lowered):
            return i
    return None


def atoi(text: str) -> int:
    """C's ``atoi``: the leading integer of ``text`` (``"12x"`` -> 12, ``"x"`` -> 0)."""
    text = text.lstrip()
    sign = -1 if text.startswith("-") else 1
    digits = text[1:] if text[:1] in "+-" and text else text
    n = 0
    for ch in digits:
        if not ch.isdigit():
            break
        n = n * 10 + int(ch)
    return sign * n


def cut_plus(text: str, width: int) -> str:
    """Text longer than ``|width|`` cut to it, its last visible character ``+``."""
    size = abs(width)
    if len(text) <= size:
        return text
    return text[: size - 1] + "+" if size else ""


def justify(text: str, width: int) -> str:
    """Right-justified in a positive width, left in a negative one; then one space."""
    size = abs(width)
    return (text.rjust(size) if width >= 0 else text.ljust(size)) + " "


def join(cells: Sequence[str], parsable: str, sep: str = "|") -> str:
    """``-p`` (``parsable="p"``): every cell followed by ``sep``; ``-P``: between cells."""
    return sep.join(cells) if parsable == "P" else "".join(c + sep for c in cells)


def header_lines(columns: Sequence[Column], parsable: str = "", sep: str = "|") -> list[str]:
    """The header line, plus the dashes line in fixed width (names cut silently)."""
    if parsable:
        return [join([c.name for c in columns], parsable, sep)]
    names = "".join(justify(c.name[: abs(c.width)], c.width) for c in columns)
    return [names, "".join("-" * abs(c.width) + " " for c in columns)]
