"""The ``%``-code formats of squeue, sinfo and sprio: one column type, one grammar.

Three commands take a format the same way (Slurm 22.05's ``squeue/opts.c``,
``sinfo/opts.c``, ``sprio/opts.c``, read for facts only):

``-o "x%5P|%.3D"``
    text before the first ``%`` is printed as it is; each piece
    ``%[.][width]<letter><text>`` is one column followed by its literal text
    (separators belong to the column on their left).  ``.`` right-justifies;
    no width means as wide as the value.  Empty pieces vanish, so ``%%`` is
    no escape.  A letter the command does not know is reported by the
    command and kept as literal text (squeue, sinfo) or left out (sprio).
``-O "name:.10 ,state"`` (squeue, sinfo)
    comma-separated names, each ``name[:[.]width[text]]``; without ``:`` a
    column is 20 wide, left-justified, with nothing after it.

Each becomes a list of :class:`Column` whose ``key`` is the command's own
name for the code (``"partition"`` for sinfo's ``%P``, ``"i"`` for sprio's
``%i``), :data:`LITERAL` for the leading text and :data:`INVALID` for a bad
code; the command looks ``key`` up in its table when it prints.  Worked
example with sinfo's letters::

    >>> columns, bad = parse_codes("x%5P|%.3D%Q", {"P": "partition", "D": "nodes"})
    >>> columns
    [Column('', 0, False, 'x'), Column('partition', 5, False, '|'), \
Column('nodes', 3, True, ''), Column('invalid', 0, False, '%Q')]
    >>> bad, pad("debug", 3, right=True), pad("7", 4, right=True)
    (['Q'], 'deb', '   7')
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

LITERAL = ""  # key of a column that is only its literal text
INVALID = "invalid"  # key of a code the command does not know: its text stays literal
DEFAULT_NAME_WIDTH = 20  # an -O name without ":width"

_CODE = re.compile(r"(\.?)(\d*)(.?)(.*)", re.DOTALL)
_WIDTH = re.compile(r"[+-]?\d*")


class Column:
    """One column of a format: what it shows (``key``), its width, whether it is
    right-justified, and the literal text printed after it.

    (A plain class, not a dataclass: ``dataclasses`` costs a command ~10 ms.)
    """

    __slots__ = ("key", "width", "right", "suffix")

    def __init__(self, key: str = LITERAL, width: int = 0, right: bool = False, suffix: str = ""):
        self.key, self.width, self.right, self.suffix = key, width, right, suffix

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Column) and (
            (self.key, self.width, self.right, self.suffix)
            == (other.key, other.width, other.right, other.suffix)
        )

    def __hash__(self) -> int:
        return hash((self.key, self.width, self.right, self.suffix))

    def __repr__(self) -> str:
        return f"Column({self.key!r}, {self.width}, {self.right}, {self.suffix!r})"

    @property
    def shown(self) -> bool:
        """Does the column print a value (not only its literal text)?"""
        return self.key not in (LITERAL, INVALID)


def parse_codes(text: str, letters: Mapping[str, str]) -> tuple[list[Column], list[str]]:
    """``-o`` text -> columns and the unknown letters, in order (module doc).

    ``letters`` maps each letter the command knows to its key.
    """
    columns: list[Column] = []
    bad: list[str] = []
    head, _pct, rest = text.partition("%")
    if head:
        columns.append(Column(LITERAL, suffix=head))
    for token in rest.split("%"):
        if not token:
            continue
        dot, digits, letter, suffix = _CODE.fullmatch(token).groups()  # type: ignore[union-attr]
        width = int(digits) if digits else 0
        key = letters.get(letter)
        if key is None:
            columns.append(Column(INVALID, width, bool(dot), "%" + token))
            bad.append(letter)
        else:
            columns.append(Column(key, width, bool(dot), suffix))
    return columns, bad


def known_only(columns: list[Column]) -> list[Column]:
    """The columns without the bad codes (``%all`` lists letters a command lacks)."""
    return [c for c in columns if c.key != INVALID]


def parse_letters(
    text: str, letters: Mapping[str, str], noun: str, every: str = ""
) -> tuple[list[Column], list[str]]:
    """A command's ``-o``: columns and its warnings (``Invalid job format
    specification: X``, ``noun`` being ``job`` or ``node``).

    ``every``: the format ``%all`` stands for (all letters); the letters the
    command lacks are then skipped without a word.
    """
    if every and text.lower() == "%all":
        return known_only(parse_codes(every, letters)[0]), []
    columns, bad = parse_codes(text, letters)
    return columns, [f"Invalid {noun} format specification: {letter}" for letter in bad]


def parse_names(
    text: str, resolve: Callable[[str], str | None], skip_space: bool = False
) -> tuple[list[Column], list[str]]:
    """A command's ``-O``: columns and its warnings; ``resolve`` turns a name into the
    command's key (None: unknown, kept as its text only and reported)."""
    columns: list[Column] = []
    errors: list[str] = []
    for token in text.split(","):
        if not token:
            continue
        name, width, right, suffix = split_name(token, skip_space)
        key = resolve(name)
        if key is None:
            columns.append(Column(INVALID, width, right, suffix))
            errors.append(f"Invalid job format specification: {name}")
        else:
            columns.append(Column(key, width, right, suffix))
    return columns, errors


def split_name(token: str, skip_space: bool = False) -> tuple[str, int, bool, str]:
    """One ``-O`` item -> ``(name, width, right, text after the width)``.

    ``"name:.10 "`` -> ``("name", 10, True, " ")``; ``"state"`` -> ``("state",
    20, False, "")``.  ``skip_space``: blanks between ``:`` (or ``.``) and the
    width are dropped (sinfo's reading); otherwise they start the text.
    """
    name, colon, spec = token.partition(":")
    if not colon:
        return name, DEFAULT_NAME_WIDTH, False, ""
    right = spec.startswith(".")
    body = spec[1:] if right else spec
    if skip_space:
        body = body.lstrip()
    digits = _WIDTH.match(body).group(0)  # type: ignore[union-attr]
    width = int(digits) if digits.strip("+-") else 0
    return name, width, right, body[len(digits) :]


def pad(text: str, width: int, right: bool, cut: bool = True) -> str:
    """A value in its column, as the commands' ``printf`` calls lay it out.

    Width 0 (or less): the whole value.  Left-justified: cut to ``width``, then
    padded.  Right-justified: padded on the left, then cut to ``width`` keeping
    the first characters -- unless ``cut`` is False (values that may overflow,
    e.g. node lists).
    """
    if width <= 0:
        return text
    if right:
        padded = text.rjust(width)
        return padded[:width] if cut else padded
    return text[:width].ljust(width)
