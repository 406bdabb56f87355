"""scontrol's help: options from its table, then the commands it knows (as before)."""

from __future__ import annotations

from cli.help import HelpPage
from slurmlite.options import SCONTROL

WORDS = {
    "all": ("", "show hidden partitions too (there are none here)"),
    "clusters": ("names", "clusters to ask (only one cluster here)"),
    "details": ("", "more detail (repeat for more)"),
    "federation": ("", "show the whole federation"),
    "future": ("", "also nodes in the FUTURE state"),
    "help": ("", "show this help and exit"),
    "hide": ("", "leave out hidden partitions"),
    "local": ("", "this cluster only"),
    "json": ("", "show job|node|partition as JSON (openapi v0.0.38 records)"),
    "oneliner": ("", "one line per record"),
    "quiet": ("", "fewer messages"),
    "sibling": ("", "show federated sibling jobs"),
    "uid": ("uid", "act as this user (root only)"),
    "verbose": ("", "more messages"),
    "version": ("", "print the version and exit"),
    "yaml": ("", "show records as YAML"),
}

SECTIONS = (
    (
        "Options:",
        "all details federation future help hide local clusters oneliner quiet sibling uid"
        " verbose version json yaml",
    ),
)

COMMANDS = """\
Commands (no command: read them from stdin):
  show job [<id>] | node [<names>] | partition [<name>] | config
  show hostnames [<hostlist>] | hostlist <names> | hostlistsorted <names>
  update NodeName=<names> State=DRAIN|RESUME|DOWN|UNDRAIN Reason=<text>
  update JobId=<ids> TimeLimit=|JobName=|Comment=|Partition=|Requeue=<value>
  hold | uhold | release | requeue | requeuehold <job ids>
  reconfigure | ping | version | oneliner | details | quiet | verbose | exit | quit | help
Not supported yet: suspend, resume, top."""

PAGE = HelpPage(
    SCONTROL,
    "scontrol [<OPTION>] [<COMMAND>]",
    SECTIONS,
    WORDS,
    tail="[<COMMAND> [args...]]",
    trailer=COMMANDS,
)
