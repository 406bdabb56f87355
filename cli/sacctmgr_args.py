"""Reading sacctmgr's ``key=value`` words into requests.

After the verb and the entity (``modify user``), sacctmgr reads words of
three kinds: ``where`` and ``set`` switch between conditions (which
objects) and settings (what to change); ``Key=value`` (also ``Key+=v`` and
``Key-=v`` for QOS lists) is a condition or a setting; a bare word is a
name condition.  ``add`` has no ``set``: its keys are all settings of the
new objects, its bare words their names.  Keys match case-insensitively by
prefix with a minimum length, first in table order (``f`` = FairShare,
``Def`` = DefaultQOS for an account, ``DefaultA`` = DefaultAccount)::

    modify user alice set fairshare=10 where account=vision
      -> names ["alice"], conditions {"accounts": ["vision"]},
         settings {"fairshare": 10}

Values are checked here, as sacctmgr checks them before it asks the
database: ``fairshare=x`` -> " Bad FairShare value: x" (exit 1).
"""

from __future__ import annotations

from slurmlite.errors import CommandLineError
from slurmlite.timefmt import duration_to_minutes, parse_duration

TYPE_CHECKING = False  # typing costs a command ~3 ms; annotations are strings
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


# (spelling, minimum length, destination key, value kind)
ACCOUNT_SETS = (
    ("Description", 1, "description", "text"), ("Organization", 1, "organization", "text"),
    ("Parent", 1, "parent", "name"), ("FairShare", 1, "fairshare", "share"),
    ("Shares", 1, "fairshare", "share"), ("Priority", 3, "priority", "int"),
    ("QOSLevel", 1, "qos", "qos"), ("DefaultQOS", 3, "default_qos", "text"),
)  # fmt: skip
USER_SETS = (
    ("DefaultAccount", 8, "default_account", "name"), ("AdminLevel", 2, "admin_level", "text"),
    ("FairShare", 1, "fairshare", "share"), ("Shares", 1, "fairshare", "share"),
    ("Priority", 3, "priority", "int"), ("QOSLevel", 1, "qos", "qos"),
    ("DefaultQOS", 8, "default_qos", "text"),
)  # fmt: skip
QOS_SETS = (
    ("Description", 1, "description", "text"), ("Flags", 2, "flags", "text"),
    ("MaxJobsPerUser", 11, "max_jobs_pu", "int"), ("MaxJobsPU", 9, "max_jobs_pu", "int"),
    ("MaxSubmitJobsPerUser", 10, "max_submit_pu", "int"),
    ("MaxSubmitJobsPU", 10, "max_submit_pu", "int"), ("MaxSubmitPU", 6, "max_submit_pu", "int"),
    ("MaxTRESPerUser", 11, "max_tres_pu", "tres"), ("MaxTRESPU", 9, "max_tres_pu", "tres"),
    ("MaxTRESPerJob", 11, "max_tres_pj", "tres"), ("MaxTRES", 7, "max_tres_pj", "tres"),
    ("MaxWallDurationPerJob", 4, "max_wall", "wall"), ("Priority", 3, "priority", "int"),
    ("UsageFactor", 6, "usage_factor", "float"),
    ("IdleGpuPolicy", 4, "idle_gpu_policy", "idlegpu"),  # slurmlite.idlegpus
)  # fmt: skip
COMMON_CONDS = (
    ("Format", 1, "format", "list"), ("WithAssoc", 5, "with_assoc", "flag"),
    ("Clusters", 1, "clusters", "list"),
)  # fmt: skip
ACCOUNT_CONDS = (
    ("Names", 1, "names", "list"), ("Accounts", 2, "names", "list"), ("Acct", 4, "names", "list"),
    ("Parent", 1, "parents", "list"), ("Users", 1, "users", "list"), *COMMON_CONDS,
)  # fmt: skip
USER_CONDS = (
    ("Names", 1, "names", "list"), ("Users", 1, "names", "list"),
    ("Accounts", 2, "accounts", "list"), ("Acct", 4, "accounts", "list"),
    ("DefaultAccount", 8, "default_accounts", "list"), ("AdminLevel", 2, "admin_levels", "list"),
    *COMMON_CONDS,
)  # fmt: skip
QOS_CONDS = (("Names", 1, "names", "list"), *COMMON_CONDS)
ASSOC_CONDS = (
    ("Accounts", 2, "accounts", "list"), ("Acct", 4, "accounts", "list"),
    ("Users", 1, "users", "list"), ("Parent", 1, "parents", "list"),
    ("Partitions", 4, "partitions", "list"), *COMMON_CONDS,
)  # fmt: skip
SETS = {"account": ACCOUNT_SETS, "user": USER_SETS, "qos": QOS_SETS}
CONDS = {"account": ACCOUNT_CONDS, "user": USER_CONDS, "qos": QOS_CONDS, "assoc": ASSOC_CONDS}


def keyword(word: str, full: str, least: int) -> bool:
    """sacctmgr's test: ``word`` is a case-insensitive prefix of ``full``, ``least`` long."""
    return len(word) >= least and full.lower().startswith(word.lower())


def lookup(word: str, table: Sequence[tuple[str, int, str, str]]) -> tuple[str, str] | None:
    for full, least, dest, kind in table:
        if keyword(word, full, least):
            return dest, kind
    return None


def unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def split_word(word: str) -> tuple[str | None, str, str]:
    """``"qos+=high"`` -> ``("qos", "+", "high")``; a bare word -> ``(None, "", word)``."""
    key, eq, value = word.partition("=")
    if not eq:
        return None, "", unquote(word)
    op = ""
    if key[-1:] in "+-" and key[:-1]:
        key, op = key[:-1], key[-1]
    return key, op, unquote(value)


def convert(key: str, kind: str, value: str, written: str) -> Any:
    """One value as the API takes it (``CommandLineError`` with sacctmgr's line if bad)."""
    try:
        if kind in ("text", "name"):
            return value
        if kind == "list":
            return [v for v in value.split(",") if v]
        if kind == "share":
            return "parent" if value.lower() == "parent" else int(value)
        if kind == "int":
            return int(value)
        if kind == "float":
            return float(value)
        if kind == "wall":
            seconds = parse_duration(value)
            return -1 if seconds is None else duration_to_minutes(seconds)
        if kind == "tres":
            return value
        if kind == "idlegpu":  # "window=1h,action=cancel", "off"; -1: none
            from slurmlite.idlegpus import settings

            if value != "-1":
                settings(value)  # ValueError if bad
            return value
    except ValueError:
        pass
    raise CommandLineError([f" Bad {written} value: {value}"])


class Parsed:
    """What the words asked for: names, conditions and settings."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.conds: dict[str, Any] = {}
        self.sets: dict[str, Any] = {}


def parse_words(entity: str, words: Sequence[str], adding: bool = False) -> Parsed:
    """Read the words after ``<verb> <entity>`` (see the module docstring)."""
    out = Parsed()
    setting = False
    sets, conds = SETS.get(entity, ()), CONDS[entity]
    for word in words:
        if not adding and word.lower() == "where":
            setting = False
            continue
        if not adding and word.lower() == "set":
            setting = True
            continue
        key, op, value = split_word(word)
        if key is None:
            if setting:
                raise CommandLineError([f" Unknown option: {word}"])
            out.names += [v for v in value.split(",") if v]
            continue
        found = lookup(key, sets) if (setting or adding) else None
        if found is None and not setting:
            found = lookup(key, conds)
            if found is not None:
                dest, kind = found
                got = convert(dest, kind, value, key)
                if dest == "names":
                    out.names += got
                elif kind == "list":
                    out.conds.setdefault(dest, []).extend(got)
                else:
                    out.conds[dest] = True if kind == "flag" else got
                continue
        if found is None:
            what = "option" if (setting or adding) else "condition"
            raise CommandLineError([f" Unknown {what}: {word}"])
        dest, kind = found
        if kind == "qos":
            names = [q for q in value.split(",") if q]
            out.sets[{"": "qos", "+": "qos_add", "-": "qos_remove"}[op]] = names
        else:
            out.sets[dest] = convert(dest, kind, value, key)
    return out
