"""sshare's help words and layout (order of Slurm 22.05's ``sshare --help``)."""

from __future__ import annotations

from cli.help import HelpPage
from cli.sshare import SSHARE

WORDS = {
    "all": ("", "rows of every user (default: your own)"),
    "accounts": ("accounts", "only these accounts, comma separated"),
    "helpformat": ("", "list the names usable with --format"),
    "long": ("", "also NormUsage, LevelFS, GrpTRESMins, TRESRunMins"),
    "partition": ("", "show the partition of each association"),
    "clusters": ("name", "cluster to ask (only one cluster here)"),
    "noheader": ("", "no header lines"),
    "format": ("fields", "columns, e.g. Account,User%12,FairShare"),
    "parsable": ("", "'|' after every field"),
    "parsable2": ("", "'|' between fields"),
    "users": ("users", "rows of these users, comma separated (-1: every user)"),
    "Users": ("", "user rows only"),
    "verbose": ("", "say which users and accounts are asked for"),
    "version": ("", "print the version and exit"),
    "help": ("", "show this help and exit"),
    "usage": ("", "show a short usage summary and exit"),
}

SECTIONS = (
    (
        "",
        "all accounts helpformat long partition clusters noheader format parsable parsable2"
        " users Users verbose version",
    ),
    ("Help options:", "help usage"),
)

PAGE = HelpPage(
    SSHARE,
    "Usage: sshare [OPTION]",
    SECTIONS,
    WORDS,
    intro="Show the fair-share values of accounts and users.",
)
