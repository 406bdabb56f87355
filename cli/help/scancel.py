"""scancel's help words and layout (order of Slurm 22.05's ``scancel --help``)."""

from __future__ import annotations

from cli.help import HelpPage
from slurmlite.options import SCANCEL

WORDS = {
    "account": ("account", "only jobs charged to this account"),
    "batch": ("", "signal only the batch shell of the job"),
    "ctld": ("", "send the request through the controller"),
    "full": ("", "signal the batch shell and every step"),
    "hurry": ("", "skip the burst buffer stage-out"),
    "interactive": ("", "ask for confirmation before each job"),
    "clusters": ("names", "clusters to ask (only one cluster here)"),
    "jobname": ("job_name", "only jobs with this name"),
    "me": ("", "only my jobs"),
    "nodelist": ("hosts", "only jobs on these nodes"),
    "partition": ("partition", "only jobs in this partition"),
    "qos": ("qos", "only jobs with this QOS"),
    "quiet": ("", "no warnings (e.g. about jobs already done)"),
    "reservation": ("reservation", "only jobs in this reservation"),
    "sibling": ("cluster_name", "remove one sibling of a federated job"),
    "signal": ("name|number", "send this signal instead of ending the job"),
    "state": ("states", "only jobs in these states (PENDING, RUNNING, SUSPENDED)"),
    "user": ("user_name", "only jobs of this user"),
    "verbose": ("", "say what is done, and why ids are skipped"),
    "version": ("", "print the version and exit"),
    "wckey": ("wckey", "only jobs with this workload characterization key"),
    "help": ("", "show this help and exit"),
    "usage": ("", "show a short usage summary and exit"),
}

SECTIONS = (
    (
        "",
        "account batch ctld full hurry interactive clusters jobname me partition quiet qos"
        " reservation sibling signal state user version verbose nodelist wckey",
    ),
    ("Help options:", "help usage"),
)

PAGE = HelpPage(
    SCANCEL,
    "Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]",
    SECTIONS,
    WORDS,
    column=34,
    tail="[job_id[_array_id]...]",
)
