"""sshare's columns and rows, as pure functions of the share rows (spec §3.5).

Columns
-------
Default (golden ``50_sshare``)::

    Account User RawShares NormShares RawUsage EffectvUsage FairShare

``-l`` adds NormUsage after RawUsage and LevelFS, GrpTRESMins, TRESRunMins
at the end (no LevelFS under ``PriorityFlags=NO_FAIR_TREE``).  ``-o``
replaces either list: items split on ``,``, each a case-insensitive prefix
of a field name (the first match in :data:`FIELDS` order), ``%N`` sets the
width (positive right-justified, negative left; ``cli.format_fields``): snakemake's
``sshare -U --format Account%256 --noheader`` prints each account right
-justified in 256 characters.

Cells
-----
Account is indented one space per tree level (user rows show their account);
numbers are ``%f`` with six decimals, RawUsage and RawShares integers
(RawShares ``parent`` for ``FairShare=parent``), an infinite LevelFS is
``inf``; what a row does not have is blank (FairShare of an account under
Fair Tree, everything numeric but NormShares, RawUsage and EffectvUsage on
root).  TRESRunMins is ``name=value`` joined by commas in Slurm's TRES
order; GrpTRESMins (a limit slurmlite does not keep) is always blank.

Printing
--------
Fixed width: every cell is followed by one space, the header line and the
dashes line too; text longer than its width is cut and its last visible
character becomes ``+`` (``cpu=17179869180,mem=17179869180000,...`` in 30 ->
``cpu=17179869180,mem=171798691+``); numbers are never cut.  ``-p`` ends
every field with ``|``, ``-P`` separates fields only; neither cuts.

Worked example (golden ``50_sshare_parsable``, ``sshare -a --parsable2``)::

    Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare
    root|||0.000000|147|1.000000|
     acct_a||1|0.333333|147|1.000000|
      acct_a|alice|1|0.500000|68|0.102723|0.400000

Reference: facts read from Slurm 22.05 ``src/sshare/{sshare,process}.c``
and ``src/common/print_fields.c``.
"""

from __future__ import annotations

from cli.format_fields import (
    Column,
    atoi,
    cut_plus,
    find_field,
    header_lines,
    join,
    justify,
    split_width,
)
from slurmlite.errors import CommandLineError

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:  # rows are client Records or ShareInfo dataclasses
    from collections.abc import Iterable, Sequence

    from slurmlite.protocol_policy import ShareInfo

# (name, default width, kind): s text (cut with +), f six-decimal number, u integer
FIELDS: tuple[tuple[str, int, str], ...] = (
    ("Account", -20, "s"),
    ("Cluster", -10, "s"),
    ("EffectvUsage", 13, "f"),
    ("FairShare", 10, "f"),
    ("GrpTRESMins", 30, "s"),
    ("LevelFS", 10, "f"),
    ("NormShares", 11, "f"),
    ("NormUsage", 11, "f"),
    ("RawShares", 10, "u"),
    ("RawUsage", 11, "u"),
    ("TRESRunMins", 30, "s"),
    ("User", 10, "s"),
)
DEFAULT_FIELDS = "Account,User,RawShares,NormShares,RawUsage,EffectvUsage,FairShare"
LONG_FIELDS = (
    "Account,User,RawShares,NormShares,RawUsage,NormUsage,EffectvUsage,FairShare,LevelFS,"
    "GrpTRESMins,TRESRunMins"
)
LONG_CLASSIC_FIELDS = LONG_FIELDS.replace(",LevelFS", "")
_NAMES = tuple(name for name, _w, _k in FIELDS)


def parse_fields(texts: Iterable[str]) -> list[Column]:
    """``-o`` values (each a comma list) -> columns; an unknown name is a
    ``CommandLineError`` (``Unknown field 'x'``, exit 1)."""
    out = []
    for text in texts:
        for item in text.split(","):
            item = item.strip()
            if not item:
                continue
            name, width_text = split_width(item)
            index = find_field(name, _NAMES) if name else None
            if index is None:
                raise CommandLineError([f"Unknown field '{item}'"])
            found = FIELDS[index]
            width = found[1]
            if width_text is not None and atoi(width_text):
                width = atoi(width_text)
            out.append(Column(found[0], width, found[2]))
    return out


def default_columns(long: bool, fair_tree: bool) -> list[Column]:
    if not long:
        return parse_fields([DEFAULT_FIELDS])
    return parse_fields([LONG_FIELDS if fair_tree else LONG_CLASSIC_FIELDS])


# ------------------------------------------------------------------ rows


def select_rows(
    rows: Iterable[ShareInfo],
    users: set[str] | None,
    accounts: set[str] | None,
    users_only: bool = False,
) -> list[ShareInfo]:
    """The rows sshare prints: user rows of ``users`` (None: every user), rows of
    ``accounts`` (account rows by name, user rows by their account; None: all),
    and with ``users_only`` (``-U``) no account rows."""
    out = []
    for r in rows:
        if r.user is not None and users is not None and r.user not in users:
            continue
        if accounts is not None and r.account not in accounts:
            continue
        if users_only and r.user is None:
            continue
        out.append(r)
    return out


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return "inf" if value == float("inf") else f"{value:f}"


def cell(col: Column, row: ShareInfo, cluster: str = "") -> str:
    """One row's value for a column, before padding."""
    name = col.name
    if name == "Account":
        return " " * row.depth + row.account
    if name == "User":
        return row.user or ""
    if name == "Cluster":
        return cluster
    if name == "RawShares":
        return "" if row.raw_shares is None else str(row.raw_shares)
    if name == "RawUsage":
        return str(int(row.raw_usage))
    if name == "NormShares":
        return _number(row.norm_shares)
    if name == "NormUsage":
        return _number(row.norm_usage)
    if name == "EffectvUsage":
        return _number(row.effective_usage)
    if name == "FairShare":
        return _number(row.fairshare)
    if name == "LevelFS":
        return "inf" if getattr(row, "level_fs_inf", False) else _number(row.level_fs)
    if name == "GrpTRESMins":
        return row.grp_tres_mins or ""
    if name == "TRESRunMins":
        return ",".join(f"{k}={v}" for k, v in row.tres_run_mins.items())
    raise KeyError(name)


def _pad(text: str, col: Column) -> str:
    return justify(cut_plus(text, col.width) if col.kind == "s" else text, col.width)


def render(
    columns: Sequence[Column],
    rows: Iterable[ShareInfo],
    parsable: str = "",
    header: bool = True,
    cluster: str = "",
) -> list[str]:
    """The output lines: header (and dashes) unless ``header`` is False, then one per row.

    ``parsable``: ``""`` fixed width, ``"p"`` (``|`` after every field) or ``"P"``
    (``|`` between fields).
    """

    lines = header_lines(columns, parsable) if header else []
    for row in rows:
        cells = [cell(c, row, cluster) for c in columns]
        if parsable:
            lines.append(join(cells, parsable))
        else:
            lines.append("".join(_pad(t, c) for t, c in zip(cells, columns, strict=True)))
    return lines
