"""sshare: the fair-share table of associations, as Slurm 22.05's sshare shows it.

Pipeline (``run`` does the I/O; :mod:`cli.sshare_format` prints)::

    options -> columns -> GET /v1/shares -> select rows -> lines

Which rows (spec §3.5, facts from sshare and the controller's share query):

* every account row (``root``, ``acct_a`` ...) and the user rows of the
  caller only (golden ``50_sshare``: alice sees her own rows, not root's);
* ``-a``: every user's rows; ``-u alice,bob``: those users' (``-u -1``: all);
* ``-A acct_a``: only rows of these accounts (an account row by its name,
  a user row by its account), still only the chosen users;
* ``-U``: user rows only.

Columns: the default seven, ``-l`` for eleven (NormUsage, LevelFS,
GrpTRESMins, TRESRunMins), ``-o`` for a list of one's own
(``Account%256``); ``-n`` drops the header, ``-p``/``-P`` print ``|``
separated fields.

The numbers are the controller's (``controller/accounting/shares.py``):
usage in decayed billing-seconds, current to the request, and Fair Tree or
classic fair-share as ``PriorityFlags`` says.
"""

from __future__ import annotations

import os
import pwd
import sys

from cli import sshare_format as sf
from cli.common import (
    answered_info,
    error,
    exit_from,
    get_client,
    parse_options,
)
from slurmlite.errors import SlurmError
from slurmlite.getopt import (
    IGNORED,
    NO_ARG,
    REQUIRED,
    UNSUPPORTED,
    OptionSpec,
    OptionTable,
)

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:
    from collections.abc import Sequence

PROG = "sshare"


def _row(long: str, short: str = "", arg: str = NO_ARG, key: str = "", **kw: object) -> OptionSpec:
    names = tuple(long.split())
    return OptionSpec(key=key or names[0], long=names, short=short, arg=arg, **kw)  # type: ignore[arg-type]


SSHARE = OptionTable(
    prog=PROG,
    specs=(
        _row("accounts", "A", REQUIRED, repeat="append"),
        _row("all", "a"),
        _row("helpformat", "e", status=UNSUPPORTED),
        _row("long", "l"),
        _row("partition", "m", status=UNSUPPORTED),
        _row("cluster clusters", "M", REQUIRED, key="clusters", status=IGNORED),
        _row("noheader", "n"),
        _row("format", "o", REQUIRED, repeat="append"),
        _row("parsable", "p"),
        _row("parsable2", "P"),
        _row("users", "u", REQUIRED, repeat="append"),
        _row("Users", "U", key="users_only"),
        _row("verbose", "v", repeat="count"),
        _row("version", "V"),
        _row("help", "h"),
        _row("usage"),
    ),
)


def _names(values: Sequence[str]) -> set[str]:
    return {w.strip() for v in values for w in v.split(",") if w.strip()}


def _caller() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def run(argv: Sequence[str]) -> int:
    opts = parse_options(SSHARE, argv)
    if answered_info(opts, PROG):
        return 0
    chosen = sf.parse_fields(opts.list("format")) if opts.has("format") else None
    users: set[str] | None = _names(opts.list("users"))
    if opts.flag("all") or "-1" in (users or ()):
        users = None
    elif not users:
        users = {_caller()}
    accounts = _names(opts.list("accounts")) or None
    if opts.count("verbose"):
        print("Users requested:", file=sys.stderr)
        for name in sorted(users) if users is not None else ["all"]:
            print(f"\t: {name}", file=sys.stderr)
        if accounts:
            print("Accounts requested:", file=sys.stderr)
            for name in sorted(accounts):
                print(f"\t: {name}", file=sys.stderr)
    try:
        client = get_client(PROG)
        data = client.request("GET", "/v1/shares")
    except SlurmError as exc:
        error(PROG, str(exc))
        return 1
    from cli.client import Record

    rows = [Record(r) for r in data["rows"]]
    columns = chosen or sf.default_columns(opts.flag("long"), bool(data["fair_tree"]))
    parsable = "P" if opts.flag("parsable2") else "p" if opts.flag("parsable") else ""
    shown = sf.select_rows(rows, users, accounts, opts.flag("users_only"))
    cluster = getattr(client.config, "cluster_name", "") or ""
    for line in sf.render(columns, shown, parsable, not opts.flag("noheader"), cluster):
        print(line)
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    exit_from(run, argv)


if __name__ == "__main__":
    main()
