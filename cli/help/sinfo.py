"""sinfo's help words and layout (order of Slurm 22.05's ``sinfo --help``)."""

from __future__ import annotations

from cli.help import HelpPage
from slurmlite.options import SINFO

WORDS = {
    "all": ("", "every partition (there are no hidden ones here)"),
    "dead": ("", "only nodes that do not respond"),
    "exact": ("", "split lines on CPUs, memory, weight... too"),
    "federation": ("", "partitions of every cluster of the federation"),
    "noheader": ("", "no header line"),
    "hide": ("", "leave out hidden partitions"),
    "iterate": ("seconds", "print again every N seconds"),
    "json": ("", "nodes and partitions as JSON (openapi v0.0.38 records)"),
    "local": ("", "this cluster only"),
    "long": ("", "longer listing (with the date first)"),
    "clusters": ("names", "clusters to ask (only one cluster here)"),
    "nodes": ("NODES", "only these nodes (hostlist)"),
    "noconvert": ("", "print sizes without K/M/G units"),
    "Node": ("", "one line per node and partition"),
    "format": ("format", 'columns as %[.][width]letter, e.g. "%P %a %l %D %t %N"'),
    "Format": ("format", "columns as name[:[.]width],..., e.g. NodeList,Gres,GresUsed"),
    "partition": ("PARTITION", "only these partitions"),
    "responding": ("", "only nodes that respond"),
    "list-reasons": ("", "why nodes are down, drained or failing"),
    "summarize": ("", "one line per partition, NODES(A/I/O/T)"),
    "sort": ("fields", 'sort keys, e.g. "#P,-t" (the default) or N'),
    "states": ("node_state", 'only nodes in these states, e.g. idle,mix or "drain&down"'),
    "reservation": ("", "list reservations instead"),
    "verbose": ("", "more messages"),
    "version": ("", "print the version and exit"),
    "yaml": ("", "nodes and partitions as YAML"),
    "help": ("", "show this help and exit"),
    "usage": ("", "show a short usage summary and exit"),
}

SECTIONS = (
    (
        "",
        "all dead exact federation noheader hide iterate json local long clusters nodes"
        " noconvert Node format Format partition responding list-reasons summarize sort states"
        " reservation verbose version yaml",
    ),
    ("Help options:", "help usage"),
)

PAGE = HelpPage(SINFO, "Usage: sinfo [OPTIONS]", SECTIONS, WORDS, column=29)
