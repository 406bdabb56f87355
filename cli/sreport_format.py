"""sreport's columns, time units and table printing, as Slurm 22.05 prints them.

A report is a header block, a column header and rows::

    --------------------------------------------------------------------------------
    Cluster Utilization 2026-12-05T00:00:00 - 2026-12-05T23:59:59
    Usage reported in CPU Minutes
    --------------------------------------------------------------------------------
      Cluster Allocate     Down PLND Dow     Idle  Planned Reported
    --------- -------- -------- -------- -------- -------- --------
       anchor      180        0        0     5580        0     5760

(each cell is followed by one space, the last one too).

Rules (facts from sreport's ``common.c``, ``cluster_reports.c``,
``user_reports.c`` and ``print_fields.c``; written in our own words):

* columns are chosen by name prefix (``Cl`` = Cluster, ``al`` = Allocated,
  ``planned`` = PLND Down, ``res`` = Planned ...), tried in a fixed order,
  each name needing its own minimum prefix (:data:`CLUSTER_FIELDS`,
  :data:`USER_FIELDS`); ``name%N`` sets the width (negative: left-aligned);
* a cell is right-aligned in its width followed by one space; a longer text
  is cut to the width with ``+`` as its last character; headers alike;
* a usage column is 8 wide, one more per decimal digit of its largest
  value *in seconds* past 8 digits, 9 more for the ``SecPer``/``MinPer``/
  ``HourPer`` units (``600(50.00%)``);
* usage is printed from seconds: minutes and hours rounded to whole
  (``%.0f``), percent of the total with two decimals;
* ``-p``: ``|`` after every cell; ``-P``: ``|`` between cells; both print
  no dashes line; ``-n`` prints neither the block nor the column header.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (start-up time)
if TYPE_CHECKING:
    from collections.abc import Sequence

DASHES = "-" * 80

# (key, sreport -t word, its shortest prefix, "Usage reported in ..." text, with percent)
TIME_FORMATS = (
    ("secper", "SecPer", 6, "Seconds/Percentage of Total", True),
    ("minper", "MinPer", 6, "Minutes/Percentage of Total", True),
    ("hourper", "HourPer", 6, "Hours/Percentage of Total", True),
    ("seconds", "Seconds", 1, "Seconds", False),
    ("minutes", "Minutes", 1, "Minutes", False),
    ("hours", "Hours", 1, "Hours", False),
    ("percent", "Percent", 1, "Percentage of Total", False),
)
_DIVISOR = {"sec": 1, "min": 60, "hou": 3600}


def prefix_of(word: str, name: str, least: int) -> bool:
    """Slurm's ``xstrncasecmp(name, word, MAX(len(word), least))`` == 0."""
    n = max(len(word), least)
    return word[:n].lower() == name[:n].lower() and len(word) <= len(name)


def time_format(word: str) -> tuple[str, str, bool] | None:
    """``-t WORD`` -> (key, unit text, per-cent-combined) or None when unknown."""
    for key, name, least, text, per in TIME_FORMATS:
        if prefix_of(word, name, least):
            return key, text, per
    return None


def usage_text(secs: int, total: int, unit: str) -> str:
    """One usage cell: ``secs`` in ``unit``, percent of ``total`` where the unit says so."""
    total = total or 1
    percent = secs * 100.0 / total
    if unit == "seconds":
        return str(secs)
    if unit in ("minutes", "hours"):
        return f"{secs / _DIVISOR[unit[:3]]:.0f}"
    if unit == "percent":
        return f"{percent:.2f}%"
    amount = secs if unit == "secper" else f"{secs / _DIVISOR[unit[:3]]:.0f}"
    return f"{amount}({percent:.2f}%)"


def usage_width(largest_secs: int, per: bool) -> int:
    """A usage column's width for its largest value in seconds (see the module doc)."""
    width, order = 8, 100_000_000
    while largest_secs >= order and width < 26:
        width, order = width + 1, order * 10
    return width + (9 if per else 0)


class Field:
    """One column: its kind (``cluster``, ``alloc`` ...), header and width."""

    def __init__(self, kind: str, header: str, width: int, usage: bool) -> None:
        self.kind, self.header, self.width, self.usage = kind, header, width, usage

    def __repr__(self) -> str:
        return f"Field({self.kind!r}, {self.width})"


# kind, header, plain width, per-cent-combined width (None: not a usage column),
# then the (name, shortest prefix) spellings, in the order sreport tries them
CLUSTER_FIELDS = (
    ("account", "Account", 15, None, (("Accounts", 2),)),
    ("alloc", "Allocated", 12, 20, (("allocated", 2),)),
    ("cluster", "Cluster", 9, None, (("Cluster", 2),)),
    ("down", "Down", 10, 18, (("down", 1),)),
    ("idle", "Idle", 12, 20, (("idle", 1),)),
    ("login", "Login", 9, None, (("Login", 1),)),
    ("over", "Over Comm", 9, 18, (("overcommitted", 1),)),
    ("pdown", "PLND Down", 10, 18, (("PlannedDown", 2),)),
    ("proper", "Proper Name", 15, None, (("Proper", 2),)),
    ("reported", "Reported", 12, 20, (("reported", 3),)),
    ("planned", "Planned", 9, 18, (("reserved", 3), ("planned", 4))),
    ("count", "TRES Count", 10, None, (("TresCount", 5), ("cpucount", 2), ("count", 2))),
    ("tres", "TRES Name", 14, None, (("TresName", 5),)),
    ("used", "Used", 10, 18, (("Used", 1),)),
    ("energy", "Energy", 10, 18, (("Energy", 1),)),
)
USER_FIELDS = (
    ("account", "Account", 15, None, (("Accounts", 1),)),
    ("cluster", "Cluster", 9, None, (("Cluster", 1),)),
    ("energy", "Energy", 10, 18, (("Energy", 1),)),
    ("login", "Login", 9, None, (("Login", 1),)),
    ("proper", "Proper Name", 15, None, (("Proper", 1),)),
    ("tres", "TRES Name", 14, None, (("TresName", 5),)),
    ("used", "Used", 10, 18, (("Used", 1),)),
)


def parse_fields(words: Sequence[str], table: tuple, per: bool) -> tuple[list[Field], list[str]]:
    """Fields for ``Format=`` words (``Used%12``); also the words no field matched."""
    fields, unknown = [], []
    for word in words:
        name, _, width = word.partition("%")
        found = None
        for kind, header, plain, wide, names in table:
            if any(prefix_of(name, full, least) for full, least in names):
                found = Field(kind, header, (wide if per and wide else plain), wide is not None)
                break
        if found is None:
            unknown.append(word)
            continue
        if width.lstrip("-").isdigit() and int(width):
            found.width = int(width)
        fields.append(found)
    return fields, unknown


def cell(text: str | None, width: int) -> str:
    """``text`` in ``width`` (negative: left-aligned), cut with a ``+``, then one space."""
    size = abs(width)
    value = " " if text is None else text
    if text is not None and len(value) > size:
        value = value[: size - 1] + "+"
    return _fit(value, width) + " "


def _fit(text: str, width: int) -> str:
    size = abs(width)
    return (text.ljust(size) if width < 0 else text.rjust(size))[:size]


def lines(
    fields: Sequence[Field], rows: Sequence[Sequence[str | None]], parsable: str, header: bool
) -> list[str]:
    """The column header (unless ``header`` is False) and the rows, as sreport prints them."""
    out = []
    if header:
        if parsable:
            out.append(_line([f.header for f in fields], fields, parsable))
        else:  # a header is cut to its width without the "+"
            out.append("".join(_fit(f.header, f.width) + " " for f in fields))
        if not parsable:
            out.append("".join("-" * abs(f.width) + " " for f in fields))
    out.extend(_line(r, fields, parsable) for r in rows)
    return out


def _line(values: Sequence[str | None], fields: Sequence[Field], parsable: str) -> str:
    if parsable == "P":
        return "|".join(v or "" for v in values)
    if parsable == "p":
        return "".join((v or "") + "|" for v in values)
    return "".join(cell(v, f.width) for v, f in zip(values, fields, strict=True))


def header_block(title: str, unit_text: str, tres_word: str, percent_only: bool) -> list[str]:
    """The dashes, the title line and ``Usage reported in ...`` above a report."""
    usage = unit_text if percent_only else f"{tres_word} {unit_text}"
    return [DASHES, title, f"Usage reported in {usage}", DASHES]
