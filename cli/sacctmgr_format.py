"""sacctmgr's columns: ``format=`` names, widths, and the three output forms.

A ``format=`` item is ``Name[%width]``; a name picks the first field of
:data:`FIELDS` (Slurm's own order) that it is a case-insensitive prefix of,
at least that field's minimum length (``Acc`` -> Account, ``Ad`` ->
AdminLevel, ``Share`` and ``fairshare`` -> Share, ``Par`` -> nothing:
``Unknown field 'Par'``, exit 1).  ``%N`` replaces the width; a negative
width left-justifies (the grammar and printing of ``cli.format_fields``).

Printing, as Slurm's ``print_fields``: fixed width, right-justified, each
value followed by one space, text longer than the column cut with ``+`` as
its last character; the header line is cut silently and underlined with
dashes.  ``-p`` ends every value with ``|``, ``-P`` separates values with
``|``; ``-n`` drops the header.  Worked example (snakemake's probe,
``sacctmgr -n -s list user alice format=account%256``): one line per
association of alice, the account right-justified in 256 columns and a
space -- ``"<250 spaces>vision "``.

Widths and header names: Slurm 22.05 ``src/sacctmgr/common.c`` and
``src/common/print_fields.c`` (facts only).
"""

from __future__ import annotations

from cli.format_fields import Column, cut_plus, find_field, header_lines, join, justify, split_width
from slurmlite.errors import CommandLineError
from slurmlite.timefmt import fmt_fixed

TYPE_CHECKING = False  # typing costs a command ~3 ms; annotations are strings
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# name, minimum prefix length, header, width, kind (s text, u number, f float)
_TABLE = """
Account 3 Account 10 s|Acct 4 Account 10 s|AdminLevel 2 Admin 9 s
Clusters 2 Cluster 10 s|Coordinators 2 Coord_Accounts 20 s
DefaultAccount 8 Def_Acct 10 s|DefaultQOS 8 Def_QOS 9 s|Description 3 Descr 20 s
Flags 2 Flags 20 s|GraceTime 3 GraceTime 10 s|GrpCPUs 6 GrpCPUs 8 u
GrpCPUMins 7 GrpCPUMins 11 u|GrpCPURunMins 7 GrpCPURunMins 13 u|GrpTRES 7 GrpTRES 13 s
GrpTRESMins 7 GrpTRESMins 13 s|GrpTRESRunMins 7 GrpTRESRunMins 13 s|GrpJobs 4 GrpJobs 7 u
GrpJobsAccrue 8 GrpJobsAccrue 13 u|GrpMemory 4 GrpMem 7 u|GrpNodes 4 GrpNodes 8 u
GrpSubmitJobs 4 GrpSubmit 9 u|GrpWall 4 GrpWall 11 s|ID 2 ID 6 u
IdleGpuPolicy 4 IdleGpuPolicy 30 s
MaxCPUMinsPerJob 7 MaxCPUMins 11 u|MaxCPURunMinsPerUser 7 MaxCPURunMinsPU 15 u
MaxCPURunMinsPU 7 MaxCPURunMinsPU 15 u|MaxCPUsPerJob 7 MaxCPUs 8 u
MaxCPUsPerUser 11 MaxCPUsPU 9 u|MaxCPUsPU 9 MaxCPUsPU 9 u|MaxTRES 7 MaxTRES 13 s
MaxTRESPerJob 11 MaxTRES 13 s|MaxTRESPerNode 11 MaxTRESPerNode 14 s
MaxTRESMinsPerJob 8 MaxTRESMins 13 s|MaxTRESRunMinsPerAccount 18 MaxTRESRunMinsPA 15 s
MaxTRESRunMinsPerAcct 18 MaxTRESRunMinsPA 15 s|MaxTRESRunMinsPA 15 MaxTRESRunMinsPA 15 s
MaxTRESRunMinsPerUser 8 MaxTRESRunMinsPU 15 s|MaxTRESRunMinsPU 8 MaxTRESRunMinsPU 15 s
MaxTRESPerAccount 11 MaxTRESPA 13 s|MaxTRESPerAcct 11 MaxTRESPA 13 s|MaxTRESPA 9 MaxTRESPA 13 s
MaxTRESPerUser 11 MaxTRESPU 13 s|MaxTRESPU 9 MaxTRESPU 13 s|MaxJobs 4 MaxJobs 7 u
MaxJobsAccrue 4 MaxJobsAccrue 13 u|MaxJobsPerAccount 11 MaxJobsPA 9 u
MaxJobsPerAcct 11 MaxJobsPA 9 u|MaxJobsPA 9 MaxJobsPA 9 u|MaxJobsPerUser 11 MaxJobsPU 9 u
MaxJobsPU 9 MaxJobsPU 9 u|MaxNodesPerJob 4 MaxNodes 8 u|MaxNodesPerUser 12 MaxNodesPU 10 u
MaxNodesPU 10 MaxNodesPU 10 u|MinPrioThreshold 4 MinPrioThres 12 u
MaxSubmitJobs 4 MaxSubmit 9 u|MaxSubmitJobsPerAccount 17 MaxSubmitPA 11 u
MaxSubmitJobsPerAcct 17 MaxSubmitPA 11 u|MaxSubmitJobsPA 15 MaxSubmitPA 11 u
MaxSubmitPA 11 MaxSubmitPA 11 u|MaxSubmitJobsPerUser 10 MaxSubmitPU 11 u
MaxSubmitJobsPU 10 MaxSubmitPU 11 u|MaxSubmitPU 6 MaxSubmitPU 11 u
MaxWallDurationPerJob 4 MaxWall 11 s|MinCPUsPerJob 7 MinCPUs 8 u|MinTRESPerJob 7 MinTRES 13 s
Name 2 Name 10 s|Organization 1 Org 20 s|ParentID 7 ParentID 8 u|ParentName 7 ParentName 10 s
Partition 4 Partition 10 s|PreemptMode 8 PreemptMode 11 s|Preempt 7 Preempt 10 s
PreemptExemptTime 8 PreemptExemptTime 19 s|Priority 3 Priority 10 u|QOSLevel 3 QOS 20 s
QOSRAWLevel 4 QOS_RAW 10 s|Share 1 Share 9 s|FairShare 2 Share 9 s
UsageFactor 6 UsageFactor 11 f|UsageThreshold 6 UsageThres 10 f|User 1 User 10 s
"""
# (the first spelling of each header is the key rows are filled under: Acct -> Account)
FIELDS: list[tuple[str, int, str, int, str]] = []
for _item in _TABLE.replace("\n", "|").split("|"):
    if _item.strip():
        _n, _m, _h, _w, _k = _item.split()
        FIELDS.append((_n, int(_m), _h.replace("_", " "), int(_w), _k))
_NAMES = tuple(f[0] for f in FIELDS)
_LEAST = tuple(f[1] for f in FIELDS)

USER_FIELDS = "User,DefaultA,Admin"
USER_ASSOC_FIELDS = (
    "Cl,Acc,Part,Share,Priority,MaxJ,MaxN,MaxCPUs,MaxS,MaxW,MaxCPUMins,QOS,DefaultQOS"
)
ACCOUNT_FIELDS = "Acc,Des,O"
ACCOUNT_ASSOC_FIELDS = (
    "Cl,ParentN,U,Share,Priority,GrpJ,GrpN,GrpCPUs,GrpMEM,GrpS,GrpWall,GrpCPUMins,"
    "MaxJ,MaxN,MaxCPUs,MaxS,MaxW,MaxCPUMins,QOS,DefaultQOS"
)
ASSOC_FIELDS = (
    "Cluster,Account,User,Part,Share,Priority,GrpJ,GrpTRES,GrpS,GrpWall,GrpTRESMins,MaxJ,"
    "MaxTRES,MaxTRESPerN,MaxS,MaxW,MaxTRESMins,QOS,DefaultQOS,GrpTRESRunMins"
)
QOS_FIELDS = (
    "Name,Prio,GraceT,Preempt,PreemptE,PreemptM,Flags%40,UsageThres,UsageFactor,GrpTRES,"
    "GrpTRESMins,GrpTRESRunMins,GrpJ,GrpS,GrpW,MaxTRES,MaxTRESPerN,MaxTRESMins,MaxW,"
    "MaxTRESPerUser,MaxJobsPerUser,MaxSubmitJobsPerUser,MaxTRESPerAcct,MaxJobsPerAcct,"
    "MaxSubmitJobsPerAcct,MinTRES"
)


def column_of(word: str) -> Column:
    """``"acc%256"`` -> ``Column("Account", 256, "s")``: the field's header names the
    column (rows are filled under it); an unknown name is a ``CommandLineError``
    (``Unknown field 'X'``, exit 1)."""
    name, width = split_width(word)
    index = find_field(name, _NAMES, _LEAST)
    if index is None:
        raise CommandLineError([f"Unknown field '{name}'"])
    _full, _least, header, default, kind = FIELDS[index]
    size = default
    if width is not None:
        try:
            size = int(width) or default
        except ValueError:
            size = default
    return Column(header, size, kind)


def parse_format(items: Sequence[str]) -> list[Column]:
    """Every ``format=`` value (comma lists) as columns, in order."""
    return [column_of(w) for text in items for w in text.split(",") if w]


def _text(value: Any, kind: str) -> str | None:
    if value is None or value == "":
        return None
    if kind == "f":
        return f"{float(value):f}"
    return str(value)


def _fixed(col: Column, text: str | None) -> str:
    return justify(" " if text is None else cut_plus(text, col.width), col.width)


def render(
    columns: Sequence[Column],
    rows: Sequence[dict[str, Any]],
    parsable: str = "",
    header: bool = True,
) -> str:
    """The table: ``parsable`` is ``""`` (fixed width), ``"p"`` (``-p``) or ``"P"`` (``-P``)."""
    lines = header_lines(columns, parsable) if header else []
    for row in rows:
        texts = [_text(row.get(c.name), c.kind) for c in columns]
        if parsable:
            lines.append(join([t or "" for t in texts], parsable))
        else:
            lines.append("".join(_fixed(c, t) for c, t in zip(columns, texts, strict=True)))
    return "".join(line + "\n" for line in lines)


# ------------------------------------------------------------ rows of a dump


def assoc_row(a: dict[str, Any], cluster: str, users: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One association (``GET /v1/assocs`` item) as field values."""
    shares = a.get("shares")
    row = {
        "Cluster": cluster,
        "Account": a["account"],
        "User": a["user"] or None,
        "Share": "parent" if shares is None else shares,
        "Priority": a.get("priority") or None,
        "QOS": a.get("qos") or None,
        "Def QOS": a.get("default_qos"),
        "ParentName": a.get("parent") if not a["user"] else None,
        "Descr": a.get("description"),
        "Org": a.get("organization"),
    }
    user = users.get(a["user"]) if a["user"] else None
    if user is not None:
        row.update(user_row(user))
    return row


def user_row(u: dict[str, Any]) -> dict[str, Any]:
    return {"User": u["name"], "Def Acct": u["default_account"], "Admin": u["admin_level"]}


def qos_row(q: dict[str, Any]) -> dict[str, Any]:
    wall = q.get("max_wall")
    return {
        "Name": q["name"],
        "Descr": q.get("description"),
        "Priority": q.get("priority", 0),
        "GraceTime": "00:00:00",
        "PreemptMode": "cluster",
        "Flags": q.get("flags") or None,
        "UsageFactor": q.get("usage_factor", 1.0),
        "MaxTRES": q.get("max_tres_pj") or None,
        "MaxWall": None if wall is None else fmt_fixed(int(wall) * 60),
        "MaxTRESPU": q.get("max_tres_pu") or None,
        "MaxJobsPU": q.get("max_jobs_pu"),
        "MaxSubmitPU": q.get("max_submit_pu"),
        "IdleGpuPolicy": q.get("idle_gpu_policy") or None,  # slurmlite: format= only
    }


def tree_order(assocs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Associations as ``show assoc`` lists them: each account, its users, then its
    sub-accounts, depth first from ``root`` (names sorted within a level)."""
    accounts = {a["account"]: a for a in assocs if not a["user"]}
    kids: dict[str | None, list[str]] = {}
    for name, a in accounts.items():
        kids.setdefault(a.get("parent") if name != "root" else None, []).append(name)
    users: dict[str, list[dict[str, Any]]] = {}
    for a in assocs:
        if a["user"]:
            users.setdefault(a["account"], []).append(a)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def walk(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        out.append(accounts[name])
        out.extend(sorted(users.get(name, []), key=lambda a: a["user"]))
        for child in sorted(kids.get(name, [])):
            walk(child)

    for top in sorted(kids.get(None, [])):
        walk(top)
    for name in sorted(accounts):  # anything cut off from root (should not happen)
        walk(name)
    out.extend(a for a in assocs if a["user"] and a["account"] not in accounts)
    return out
