"""sprio's help words and layout (order of Slurm 22.05's ``sprio --help``)."""

from __future__ import annotations

from cli.help import HelpPage
from cli.sprio import SPRIO

WORDS = {
    "federation": ("", "jobs of every cluster of the federation"),
    "noheader": ("", "no header line"),
    "jobs": ("job(s)", "only these jobs, comma separated (default: all pending)"),
    "local": ("", "jobs of this cluster only"),
    "long": ("", "long report (every factor, raw and weighted)"),
    "clusters": ("cluster_name", "cluster to ask (only one cluster here)"),
    "norm": ("", "normalized factors (0 to 1) instead of weighted ones"),
    "format": ("format", "columns as %[.][width]letter"),
    "sort": ("fields", "sort by these format letters (default: i)"),
    "sibling": ("", "one record per federated sibling"),
    "partition": ("partition_name", "only jobs in these partitions"),
    "user": ("user_name", "only jobs of these users"),
    "verbose": ("", "more messages"),
    "version": ("", "print the version and exit"),
    "weights": ("", "print the weight of each priority factor"),
    "help": ("", "show this help and exit"),
    "usage": ("", "show a short usage summary and exit"),
}

SECTIONS = (
    (
        "",
        "federation noheader jobs local long clusters norm format sort sibling partition user"
        " verbose version weights",
    ),
    ("Help options:", "help usage"),
)

PAGE = HelpPage(SPRIO, "Usage: sprio [OPTIONS]", SECTIONS, WORDS, column=34)
