"""squeue's help words and layout (order of Slurm 22.05's ``squeue --help``)."""

from __future__ import annotations

from cli.help import HelpPage
from slurmlite.options import SQUEUE

WORDS = {
    "accounts": ("account(s)", "only jobs charged to these accounts"),
    "all": ("", "also jobs in hidden partitions (there are none here)"),
    "array-unique": ("", "one line per unique pending array element"),
    "federation": ("", "jobs of every cluster of the federation"),
    "noheader": ("", "no header line"),
    "hide": ("", "leave out jobs in hidden partitions"),
    "iterate": ("seconds", "print again every N seconds"),
    "jobs": ("job(s)", "only these jobs (id, id_task), comma separated"),
    "json": ("", "the selected jobs as JSON (Slurm's openapi v0.0.38 records)"),
    "local": ("", "jobs of this cluster only"),
    "long": ("", "longer listing"),
    "licenses": ("names", "only jobs using these licenses"),
    "clusters": ("cluster_name", "clusters to ask (only one cluster here)"),
    "me": ("", "only my jobs (same as --user=<my name>)"),
    "name": ("job_name(s)", "only jobs with these names"),
    "noconvert": ("", "print sizes as they are, without K/M/G units"),
    "format": ("format", 'columns as %[.][width]letter, e.g. "%.7i %j %T"'),
    "Format": ("format", "columns as name[:[.]width],..., e.g. JobID,Name:20"),
    "partitions": ("partition(s)", "only jobs in these partitions"),
    "priority": ("", "one line per job and partition, by priority"),
    "qos": ("qos(s)", "only jobs with these QOS"),
    "reservation": ("name", "only jobs in this reservation"),
    "array": ("", "one line per array task"),
    "sibling": ("", "every sibling job of a federated job"),
    "steps": ("step(s)", "list job steps instead of jobs"),
    "sort": ("fields", "sort by these letters, e.g. P,t,-p (- for descending)"),
    "start": ("", "expected start time of pending jobs"),
    "states": ("states", "only jobs in these states (e.g. PD,R), or all"),
    "user": ("user_name(s)", "only jobs of these users"),
    "verbose": ("", "more messages"),
    "version": ("", "print the version and exit"),
    "nodelist": ("hostlist", "only jobs on these nodes"),
    "yaml": ("", "the selected jobs as YAML"),
    "help": ("", "show this help and exit"),
    "usage": ("", "show a short usage summary and exit"),
}

SECTIONS = (
    (
        "",
        "accounts all array-unique federation noheader hide iterate jobs json local long"
        " licenses clusters me name noconvert format Format partitions priority qos"
        " reservation array sibling steps sort start states user verbose version nodelist"
        " yaml",
    ),
    ("Help options:", "help usage"),
)

PAGE = HelpPage(SQUEUE, "Usage: squeue [OPTIONS]", SECTIONS, WORDS, column=34)
