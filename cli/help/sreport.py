"""sreport's help words and layout: options from its table, then the reports it knows."""

from __future__ import annotations

from cli.help import HelpPage
from cli.sreport import SREPORT

WORDS = {
    "all_clusters": ("", "use every cluster"),
    "cluster": ("name", "cluster to report on (only one cluster here)"),
    "federation": ("", "report on the federation"),
    "help": ("", "show this help and exit"),
    "immediate": ("", "answer without asking"),
    "local": ("", "report on this cluster only"),
    "noheader": ("", "no header lines"),
    "parsable": ("", "'|' after every field"),
    "parsable2": ("", "'|' between fields"),
    "quiet": ("", "fewer messages"),
    "sort": ("sort_name", "sort order of the report"),
    "tres": ("tres", "cpu (default), gres/gpu, a comma list of them, or ALL"),
    "verbose": ("", "more messages"),
    "version": ("", "print the version and exit"),
    "time": ("time_format", "Seconds, Minutes (default), Hours, Percent, SecPer, MinPer, HourPer"),
}

SECTIONS = (
    (
        "Valid <OPTION> values are:",
        "all_clusters cluster federation help immediate local noheader parsable parsable2"
        " quiet sort time tres verbose version",
    ),
)

COMMANDS = """\
<COMMAND> is one of:
  cluster Utilization [Start=<T>] [End=<T>]
  cluster AccountUtilizationByUser [Start=<T>] [End=<T>] [Users=<L>] [Accounts=<L>]
  user TopUsage [Start=<T>] [End=<T>] [TopCount=<N>] [Group] [Users=<L>] [Accounts=<L>]
Format=<fields> picks the columns (e.g. Format=Login,Used%12).
Times: HH:MM[:SS], MMDD[YY], MM/DD[/YY], YYYY-MM-DD[THH:MM[:SS]], now[{+|-}N[unit]]."""

PAGE = HelpPage(
    SREPORT,
    "sreport [<OPTION>] [<COMMAND>]",
    SECTIONS,
    WORDS,
    tail="<report type> <report> [options]",
    trailer=COMMANDS,
)
