"""sacctmgr's help: options from its table, then its commands and keys (as before)."""

from __future__ import annotations

from cli.help import HelpPage
from cli.sacctmgr import TABLE

WORDS = {
    "help": ("", "show this help and exit"),
    "immediate": ("", "commit changes without asking"),
    "noheader": ("", "no header line"),
    "oneliner": ("", "one line per record"),
    "parsable": ("", "'|' after every field"),
    "parsable2": ("", "'|' between fields"),
    "quiet": ("", "fewer messages"),
    "readonly": ("", "refuse every change"),
    "associations": ("", "list the associations too"),
    "verbose": ("", "more messages"),
    "version": ("", "print the version and exit"),
}

SECTIONS = (
    (
        "Options:",
        "help immediate noheader oneliner parsable parsable2 quiet readonly associations"
        " verbose version",
    ),
)

COMMANDS = """\
Commands (none: read them from stdin):
  add|create     account|user|qos <names> [key=value ...]
  modify|update  account|user|qos <names> [where key=value ...] set key=value ...
  delete|remove  account|user|qos <names> [where key=value ...]
  show|list      account|user|qos|association [names] [where ...] [format=...]
account keys: Description= Organization= Parent= FairShare= Priority= QOS= DefaultQOS=
user keys:    Account= DefaultAccount= AdminLevel= FairShare= Priority= QOS= DefaultQOS=
qos keys:     Description= Priority= Flags= MaxWall= MaxJobsPerUser=
              MaxSubmitJobsPerUser= MaxTRESPerUser= MaxTRESPerJob= UsageFactor=
              IdleGpuPolicy= [slurmlite] (docs/idle-gpus.md; -1 removes it)"""

PAGE = HelpPage(
    TABLE,
    "sacctmgr [<OPTION>] [<COMMAND>]",
    SECTIONS,
    WORDS,
    tail="[<COMMAND> [args...]]",
    trailer=COMMANDS,
)
