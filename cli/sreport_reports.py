"""sreport's three reports: their conditions (``start=``, ``TopCount=`` ...) and their rows.

The controller's answer (``slurmlite.protocol_reports.UsageReport``) holds
TRES-seconds per (user, account) and the cluster's totals; each report
shapes it as Slurm 22.05's does:

* **cluster Utilization**: one row per TRES: Allocated, Down, PLND Down,
  Idle, Planned, Reported; percentages of Reported (Reported itself: of
  count x period);
* **cluster AccountUtilizationByUser**: the account tree, each account with
  the usage of its whole subtree, then its users (users before
  sub-accounts, each group by name), starting at ``root``; only
  associations with usage;
* **user TopUsage**: (user, account) rows, most usage of the first TRES
  first (ties: by name), ``TopCount`` of them (10); ``group`` makes one row
  per user with the accounts joined by ``", "``.

Usage percentages in the last two are of the cluster's Reported time.
Conditions are matched by prefix as sreport does (``st=`` is Start, ``e=``
End, ``t=`` TopCount); one it does not know is reported and the report
still runs, with exit status 1.
"""

from __future__ import annotations

import pwd
import time

from cli import sreport_format as sf
from cli.report_period import report_period
from slurmlite.timefmt import fmt_timestamp

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

# the condition words of each report: (name, shortest prefix, key), in sreport's order
_COMMON = (("Clusters", 1, "clusters"), ("End", 1, "end"), ("Format", 1, "format"))
WORDS = {
    "utilization": (*_COMMON, ("Start", 1, "start")),
    "aubu": (
        ("Users", 1, "users"), ("Accounts", 2, "accounts"), ("Acct", 4, "accounts"), *_COMMON,
        ("QosLevel", 1, "qos"), ("Start", 1, "start"),
    ),
    "top": (
        ("Users", 1, "users"), ("Accounts", 2, "accounts"), ("Acct", 4, "accounts"), *_COMMON,
        ("Start", 1, "start"), ("TopCount", 1, "top"),
    ),
}  # fmt: skip
FLAGS = {"utilization": (), "aubu": (("all_clusters", 1), ("Tree", 4)),
         "top": (("all_clusters", 1), ("group", 1))}  # fmt: skip
DEFAULT_FORMAT = {  # (without --tres, with --tres)
    "utilization": ("Cl,al,d,planned,i,res,rep", "Cl,TresName,al,d,planned,i,res,rep"),
    "aubu": ("Cluster,Ac,Login,Proper,Used,Energy", "Cluster,Ac,Login,Proper,TresName,Used"),
    "top": ("Cl,L,P,A,U,Energy", "Cl,L,P,A,TresName,Used"),
}


class Conditions:
    """What the report's words asked for (plain class: ``dataclasses`` costs a command ~5 ms)."""

    def __init__(self) -> None:
        self.start: str | None = None
        self.end: str | None = None
        self.format: list[str] = []
        self.top = 10
        self.group = False
        self.users: set[str] | None = None
        self.accounts: set[str] | None = None
        self.unknown: list[str] = []  # the lines to print on stderr


class Shape:
    """How to print: the unit (``sreport_format.time_format()``), the TRES word, ``-p``/``-P``."""

    def __init__(self, unit: tuple[str, str, bool], tres_word: str, tres_given: bool,
                 parsable: str) -> None:  # fmt: skip
        self.unit, self.tres_word, self.tres_given = unit, tres_word, tres_given
        self.parsable = parsable  # "", "p" or "P"


def conditions(kind: str, words: Sequence[str]) -> Conditions:
    """The report's ``key=value`` words; ``ValueError`` for a TopCount that is not a count."""
    cond = Conditions()
    for word in words:
        key, eq, value = word.partition("=")
        if not eq:
            if any(sf.prefix_of(word, name, least) for name, least in FLAGS[kind]):
                cond.group = cond.group or sf.prefix_of(word, "group", 1) and kind == "top"
                continue
            if kind == "utilization":
                continue  # a cluster's name: there is one cluster
            key, value = "Users", word
        name = next((k for full, n, k in WORDS[kind] if sf.prefix_of(key, full, n)), None)
        items = [v for v in value.split(",") if v]
        if name == "start":
            cond.start = value
        elif name == "end":
            cond.end = value
        elif name == "format":
            cond.format += items
        elif name == "users":
            cond.users = (cond.users or set()) | set(items)
        elif name == "accounts":
            cond.accounts = (cond.accounts or set()) | set(items)
        elif name == "top":
            if not value.isdigit():
                raise ValueError(f"Invalid TopCount value: {value}")
            cond.top = int(value)
        elif name is None:
            cond.unknown += [f" Unknown condition: {word}", "Use keyword set to modify value"]
    return cond


def period(cond: Conditions) -> tuple[float, float]:
    return report_period(cond.start, cond.end, time.time())


def render(
    kind: str, data: dict[str, Any], cond: Conditions, shape: Shape, header: bool
) -> tuple[list[str], list[str]]:
    """The report's lines, and the ``Format=`` words that named no column."""
    table = sf.USER_FIELDS if kind == "top" else sf.CLUSTER_FIELDS
    words = cond.format or DEFAULT_FORMAT[kind][shape.tres_given].split(",")
    fields, bad = sf.parse_fields(words, table, shape.unit[2])
    start, end = data["start"], data["end"]
    reported = {t["tres"]: round(t["reported_secs"]) for t in data["tres"]}
    if kind == "utilization":
        rows = _utilization(data, fields, shape)
        title = f"Cluster Utilization {fmt_timestamp(start)} - {fmt_timestamp(end - 1)}"
    else:
        records = _assoc_rows(data, cond) if kind == "aubu" else _top_rows(data, cond)
        largest = max((round(s) for _, _, secs in records[:1] for s in secs.values()), default=0)
        for f in fields:
            if f.kind in ("used", "energy"):
                f.width = sf.usage_width(largest if f.kind == "used" else 0, shape.unit[2])
        rows = [
            _assoc_cells(fields, data["cluster"], who, acct, t, round(secs.get(t, 0.0)),
                         reported.get(t, 0), shape)
            for who, acct, secs in records for t in secs
        ]  # fmt: skip
        span = f"{fmt_timestamp(start)} - {fmt_timestamp(end - 1)} ({int(end - start)} secs)"
        name = "Cluster/Account/User Utilization" if kind == "aubu" else f"Top {cond.top} Users"
        title = f"{name} {span}"
    out = []
    if header:
        unit_text, percent_only = shape.unit[1], shape.unit[0] == "percent"
        out += sf.header_block(title, unit_text, shape.tres_word, percent_only)
    return out + sf.lines(fields, rows, shape.parsable, header), bad


def _utilization(data: dict[str, Any], fields: list[sf.Field], shape: Shape) -> list[list]:
    secs_of = ("alloc", "down", "idle", "reported")
    totals = [{k: round(t[f"{k}_secs"]) for k in secs_of} for t in data["tres"]]
    for f in fields:
        if f.usage:
            f.width = sf.usage_width(max((t.get(f.kind, 0) for t in totals), default=0),
                                     shape.unit[2])  # fmt: skip
    span = data["end"] - data["start"]
    rows = []
    for t, secs in zip(data["tres"], totals, strict=True):
        row: list[str | None] = []
        for f in fields:
            if f.kind == "cluster":
                row.append(data["cluster"])
            elif f.kind == "tres":
                row.append(t["tres"])
            elif f.kind == "count":
                row.append(str(t["count"]))
            elif f.kind == "reported":
                row.append(sf.usage_text(secs["reported"], round(t["count"] * span), shape.unit[0]))
            elif f.kind in ("alloc", "down", "idle", "planned", "over", "pdown"):
                row.append(sf.usage_text(secs.get(f.kind, 0), secs["reported"], shape.unit[0]))
            else:
                row.append(None)
        rows.append(row)
    return rows


def _assoc_cells(
    fields: list[sf.Field], cluster: str, user: str | None, account: str,
    tres: str, secs: int, total: int, shape: Shape,
) -> list[str | None]:  # fmt: skip
    cells = {
        "cluster": cluster, "account": account, "login": user, "tres": tres,
        "proper": _proper_name(user) if user else None,
        "used": sf.usage_text(secs, total, shape.unit[0]),
        "energy": sf.usage_text(0, total, shape.unit[0]),
    }  # fmt: skip
    return [cells.get(f.kind) for f in fields]


_names: dict[str, str | None] = {}


def _proper_name(user: str) -> str | None:
    """The user's full name from the password database (GECOS up to its first comma)."""
    if user not in _names:
        try:
            _names[user] = pwd.getpwnam(user).pw_gecos.split(",")[0]
        except KeyError:
            _names[user] = None
    return _names[user]


Record = tuple  # (user or None for an account row, account, {tres: secs})


def _chosen(data: dict[str, Any], cond: Conditions) -> list[dict[str, Any]]:
    return [
        a for a in data["assocs"]
        if (cond.users is None or a["user"] in cond.users)
        and (cond.accounts is None or a["account"] in cond.accounts)
    ]  # fmt: skip


def _assoc_rows(data: dict[str, Any], cond: Conditions) -> list[Record]:
    """The account tree from root, each account's subtree usage, users before sub-accounts."""
    parent = {a["account"]: a["parent"] for a in data["accounts"]}
    assocs = _chosen(data, cond)
    users: dict[str, list[dict[str, Any]]] = {}
    for a in assocs:
        users.setdefault(a["account"], []).append(a)
        if a["account"] not in parent and a["account"] != "root":
            parent[a["account"]] = "root"  # an account the tree lost: under root
    children: dict[str, list[str]] = {}
    for acct, up in parent.items():
        if up is not None and acct != "root":
            children.setdefault(up, []).append(acct)
    tres = [t["tres"] for t in data["tres"]]

    def total(acct: str) -> dict[str, float]:
        sums = {t: sum(u["secs"].get(t, 0.0) for u in users.get(acct, [])) for t in tres}
        for child in children.get(acct, []):
            for t, v in total(child).items():
                sums[t] += v
        return sums

    out: list[Record] = []

    def walk(acct: str) -> None:
        sums = total(acct)
        if not any(sums.values()):
            return
        out.append((None, acct, sums))
        for u in sorted(users.get(acct, []), key=lambda a: a["user"]):
            out.append((u["user"], acct, {t: u["secs"].get(t, 0.0) for t in tres}))
        for child in sorted(children.get(acct, [])):
            walk(child)

    walk("root")
    return out


def _top_rows(data: dict[str, Any], cond: Conditions) -> list[Record]:
    """(user, accounts, usage) rows, largest first, at most ``cond.top``."""
    tres = [t["tres"] for t in data["tres"]]
    rows: dict[tuple[str, str], tuple[list[str], dict[str, float]]] = {}
    for a in sorted(_chosen(data, cond), key=lambda a: (a["user"], a["account"])):
        key = (a["user"], "" if cond.group else a["account"])
        accts, secs = rows.setdefault(key, ([], dict.fromkeys(tres, 0.0)))
        accts.append(a["account"])
        for t in tres:
            secs[t] += a["secs"].get(t, 0.0)
    first = tres[0]
    ranked = sorted(rows.items(), key=lambda kv: (-round(kv[1][1][first]), kv[0][0]))
    return [(user, ", ".join(accts), secs) for (user, _), (accts, secs) in ranked[: cond.top]]
