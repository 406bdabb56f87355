"""sacct's help words and layout (the options of Slurm 22.05's ``sacct --help``, in its order)."""

from __future__ import annotations

from cli.help import HelpPage
from slurmlite.options import SACCT

WORDS = {
    "allusers": ("", "jobs of every user"),
    "accounts": ("account_list", "only jobs charged to these accounts"),
    "allocations": ("", "job rows only, no steps"),
    "brief": ("", "JobID, State and ExitCode only"),
    "batch-script": ("", "print the batch script of the jobs"),
    "completion": ("", "use job completion data instead of accounting"),
    "constraints": ("constraint_list", "only jobs that asked for these features"),
    "delimiter": ("characters", "separator for -p/-P instead of '|'"),
    "duplicates": ("", "every record of a requeued or restarted job"),
    "federation": ("", "jobs of every cluster of the federation"),
    "helpformat": ("", "list the names usable with --format"),
    "endtime": ("time", "jobs before this time (default now)"),
    "env-vars": ("", "print the environment of the batch jobs"),
    "file": ("file", "read job completion data from this file"),
    "flags": ("flags", "flags for the accounting query"),
    "group": ("gid_list", "only jobs of these groups"),
    "help": ("", "show this help and exit"),
    "local": ("", "this cluster only"),
    "name": ("jobname_list", "only jobs with these names"),
    "nnodes": ("min[-max]", "only jobs that ran on this many nodes"),
    "ncpus": ("min[-max]", "only jobs that used this many CPUs"),
    "jobs": ("job(.step)", "these jobs (N, N_task, N.step), comma separated; may repeat"),
    "timelimit-min": ("time", "only jobs with at least this time limit"),
    "timelimit-max": ("time", "only jobs with at most this time limit"),
    "long": ("", "many columns"),
    "allclusters": ("", "jobs of every cluster"),
    "clusters": ("cluster_list", "clusters to ask (only one cluster here)"),
    "nodelist": ("node_list", "only jobs that ran on these nodes"),
    "noconvert": ("", "print sizes without K/M/G units"),
    "units": ("[KMGTP]", "print sizes in this unit"),
    "noheader": ("", "no header lines"),
    "format": ("field_list", "columns, e.g. JobID,State,Elapsed%-12; default $SACCT_FORMAT"),
    "parsable": ("", "'|' after every field"),
    "parsable2": ("", "'|' between fields"),
    "qos": ("qos", "only jobs with these QOS"),
    "partition": ("partition_list", "only jobs in these partitions"),
    "reason": ("reason_list", "only jobs that pended for these reasons"),
    "state": ("state_list", "jobs in these states during the window"),
    "starttime": ("time", "jobs since this time (default midnight, or any time with -j)"),
    "truncate": ("", "cut start and end times to the window"),
    "uid": ("uid_list", "jobs of these users (names or uids, -1 = all)"),
    "use-local-uid": ("", "resolve uids on this host"),
    "usage": ("", "show a short usage summary and exit"),
    "verbose": ("", "more messages"),
    "version": ("", "print the version and exit"),
    "wckeys": ("wckey_list", "only jobs with these workload characterization keys"),
    "whole-hetjob": ("yes|no", "every component of a heterogeneous job"),
    "associations": ("assoc_list", "only jobs of these associations"),
    "json": ("", "the selected jobs and steps as JSON (openapi dbv0.0.38)"),
    "yaml": ("", "the selected jobs and steps as YAML"),
}

SECTIONS = (
    (
        "",
        "allusers accounts allocations brief batch-script completion constraints delimiter"
        " duplicates federation helpformat endtime env-vars file flags group help local name"
        " nnodes ncpus jobs timelimit-min timelimit-max long allclusters clusters nodelist"
        " noconvert units noheader format parsable parsable2 qos partition reason state"
        " starttime truncate uid use-local-uid usage verbose version wckeys whole-hetjob"
        " associations json yaml",
    ),
)

PAGE = HelpPage(
    SACCT,
    "sacct [<OPTION>]",
    SECTIONS,
    WORDS,
    intro="Show accounting data of jobs and job steps.  Valid <OPTION> values are:",
)
