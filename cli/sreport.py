"""sreport: usage reports over a period, as Slurm 22.05's sreport prints them, without slurmdbd.

    sreport [-n] [-p|-P] [-t UNIT] [--tres=LIST] cluster utilization [start=T] [end=T]
    sreport ... cluster AccountUtilizationByUser [start=T] [end=T] [users=..] [accounts=..]
    sreport ... user topusage [start=T] [end=T] [TopCount=N] [group] [users=..] [accounts=..]

Pipeline (``run`` does the I/O)::

    options, words -> period (cli.report_period) -> GET /v1/reports/usage
                   -> rows (cli.sreport_reports) -> lines (cli.sreport_format)

The controller sums TRES-seconds from its own store (``controller.reports``);
this command only picks the report, converts units and lays the table out.
``-t`` takes Slurm's unit words (``hours``, ``Minutes``, ``percent``,
``HourPer`` ..., case-insensitive, any long-enough prefix); ``--tres`` a
comma list of ``cpu``, ``gres/gpu`` (or ``ALL``).  Interactive mode (no
report words) is not implemented.  Example::

    $ sreport -t hours --tres=gres/gpu user topusage start=now-7days TopCount=3
"""

from __future__ import annotations

import os
import sys

from cli import sreport_format as sf
from cli import sreport_reports as reports
from cli.common import answered_info, error, exit_from, get_client, parse_options, reported
from slurmlite.errors import CommandLineError, SlurmError
from slurmlite.getopt import IGNORED, NO_ARG, REQUIRED, OptionSpec, OptionTable

TYPE_CHECKING = False  # typing is not imported at run time (start-up time)
if TYPE_CHECKING:
    from collections.abc import Sequence

PROG = "sreport"
CLUSTER_REPORTS = (
    '"AccountUtilizationByUser", "UserUtilizationByAccount", '
    '"UserUtilizationByWckey", "Utilization", and "WCKeyUtilizationByUser"'
)
TRES_WORDS = {"cpu": "cpu", "gres/gpu": "gres/gpu"}


def _row(long: str, short: str = "", arg: str = NO_ARG, key: str = "", **kw: object) -> OptionSpec:
    names = tuple(long.split())
    return OptionSpec(key=key or names[0], long=names, short=short, arg=arg, **kw)  # type: ignore[arg-type]


SREPORT = OptionTable(
    prog=PROG,
    specs=(
        _row("all_clusters", "a", status=IGNORED),
        _row("cluster", "M", REQUIRED, status=IGNORED),
        _row("federation", status=IGNORED),
        _row("help", "h"),
        _row("immediate", "i", status=IGNORED),
        _row("local", status=IGNORED),
        _row("noheader", "n"),
        _row("parsable", "p"),
        _row("parsable2", "P"),
        _row("quiet", "Q"),
        _row("sort", "s", REQUIRED, status=IGNORED),
        _row("tres", "T", REQUIRED),
        _row("usage", key="help"),
        _row("verbose", "v", repeat="count"),
        _row("version", "V"),
        _row("time", "t", REQUIRED),
    ),
)


def _tres(text: str | None) -> list[str]:
    if not text:
        return ["cpu"]
    words = [w.strip().lower() for w in text.split(",") if w.strip()]
    if "all" in words:
        return list(TRES_WORDS)
    found = list(dict.fromkeys(TRES_WORDS[w] for w in words if w in TRES_WORDS))
    if not found:
        raise CommandLineError([f"{PROG}: fatal: No valid TRES given"])
    return found


def _report(words: Sequence[str]) -> str:
    """The report the words name (``utilization``, ``aubu``, ``top``), Slurm's texts if none."""
    kind = words[0]
    if sf.prefix_of(kind, "cluster", 2) or sf.prefix_of(kind, "user", 1):
        if len(words) < 2:
            raise CommandLineError([f"too few arguments for keyword:{kind}"])
        name = words[1]
        if sf.prefix_of(kind, "user", 1):
            if name[:1].lower() == "t":
                return "top"
            raise CommandLineError([f"Not valid report {name}", 'Valid user reports are, "Top"'])
        low = name.lower()
        if low[:1] == "a":
            return "aubu"
        if low[:2] in ("ua", "uw") or low[:1] == "w" or low.startswith("userutilizationby"):
            raise CommandLineError(
                [f"{PROG}: error: the {name} report is not implemented by slurmlite"]
            )
        if low[:2] == "ut":
            return "utilization"
        raise CommandLineError(
            [f"Not valid report {name}", f"Valid cluster reports are, {CLUSTER_REPORTS}"]
        )
    if (
        sf.prefix_of(kind, "job", 1)
        or sf.prefix_of(kind, "reservation", 2)
        or sf.prefix_of(kind, "resv", 2)
    ):
        raise CommandLineError([f"{PROG}: error: {kind} reports are not implemented by slurmlite"])
    raise CommandLineError([f"invalid keyword: {kind}"])


def run(argv: Sequence[str]) -> int:
    opts = parse_options(SREPORT, argv)
    if answered_info(opts, PROG):
        return 0
    try:
        unit_word = opts.get("time") or "minutes"
        unit = sf.time_format(unit_word)
        if unit is None:
            raise CommandLineError([f"unknown time format {unit_word}"])
        tres_text = opts.get("tres") or os.environ.get("SREPORT_TRES")
        tres = _tres(tres_text)
        words = list(opts.positionals)
        if not words:
            raise CommandLineError(
                [f"{PROG}: error: interactive mode is not implemented; name a report"]
            )
        kind = _report(words)
        cond = reports.conditions(kind, words[2:])
        for line in cond.unknown:
            print(line, file=sys.stderr)
        start, end = reports.period(cond)
    except CommandLineError as exc:
        return reported(exc)
    except ValueError as exc:  # a time that does not parse
        error(PROG, str(exc))
        return 1
    query = {"start": start, "end": end, "tres": ",".join(tres)}
    try:
        data = get_client(PROG).request("GET", "/v1/reports/usage", query=query)
    except SlurmError as exc:
        error(PROG, str(exc))
        return 1
    parsable = "P" if opts.flag("parsable2") else "p" if opts.flag("parsable") else ""
    shape = reports.Shape(unit, "TRES" if tres_text else "CPU", bool(tres_text), parsable)
    out, bad_fields = reports.render(kind, data, cond, shape, not opts.flag("noheader"))
    for word in bad_fields:
        print(f" Unknown field '{word}'", file=sys.stderr)
    for line in out:
        print(line)
    return 1 if cond.unknown or bad_fields else 0


def main(argv: Sequence[str] | None = None) -> None:
    exit_from(run, argv)


if __name__ == "__main__":
    main()
