"""The option tables of the Slurm look-alikes: one :class:`OptionTable` each.

Each table lists every option the real command (Slurm 22.05) knows, in that
command's own order (glibc lists ambiguous prefixes in table order), so that
any real option is either

* ``supported`` -- implemented,
* ``ignored`` -- accepted with no effect on a small cluster (mail, wckey,
  federation and cluster selection, accounting/energy sampling, CPU/GPU
  frequency, NUMA memory binding, rlimit propagation...), reported as ignored
  by the command when verbose, or
* ``unsupported`` -- refused with ``<cmd>: error: --array is not supported
  yet`` (exit 1) rather than silently dropped;

and a word that is not in the table gets getopt's ``unrecognized option``.
Options real sbatch does not have (``--cpu-bind`` is srun-only) are therefore
unrecognized here too.  Rows sharing a key are aliases (``--cluster`` /
``--clusters``).  ``env`` names the input variables of spec §6.6; the command
line always wins over them.

Reading a row: ``row("time", "t", REQ, env="SBATCH_TIMELIMIT")`` is
``-t/--time`` with a required value, key ``time`` (``slurmlite.option_rows``).
sbatch's table names most of its rows -- those it shares with srun and salloc
-- by their long names, in its own order; its own rows stand among them.
Sources: the 22.05 man pages and the commands' long-option arrays (facts only).

``--help`` and ``--usage`` are rendered from these tables by ``cli.help``,
with each option's value name, description and group kept in
``cli/help/<command>.py``: a row added here needs its help words there
(``tests/cli/test_help.py`` fails otherwise).
"""

from __future__ import annotations

from slurmlite.getopt import ENV_TRUE_FALSE, OptionTable
from slurmlite.option_rows import IGN, NO, OPT, REQ, SUP, UNS, command_table, flag_row, row

# --------------------------------------------------------------------- sbatch
# Order of Slurm 22.05's common option list (the sbatch subset); the words are
# rows of option_rows.resource_rows, the row() calls sbatch's own.

SBATCH = command_table(
    "sbatch",
    "SBATCH_",
    (
        "account acctg-freq",
        row("array", "a", REQ, SUP, env="SBATCH_ARRAY_INX"),
        row("batch", "", REQ, UNS, env="SBATCH_BATCH"),
        "begin bb bbf cluster-constraint chdir cluster clusters comment container context",
        "contiguous constraint core-spec cores-per-socket cpu-freq cpus-per-gpu cpus-per-task",
        "deadline delay-boot dependency distribution",
        row("error", "e", REQ, env="SBATCH_ERROR"),
        "exclude exclusive",
        row("export", "", REQ, env="SBATCH_EXPORT"),
        row("export-file", "", REQ, UNS),
        "extra-node-info",
        row("get-user-env", "", OPT, UNS, env="SBATCH_GET_USER_ENV"),
        "gid gpu-bind gpu-freq gpus gpus-per-node gpus-per-socket gpus-per-task gres gres-flags",
        "help",
        row("hint", "", REQ, UNS, env="SLURM_HINT SBATCH_HINT"),
        "hold",
        flag_row("ignore-pbs", "", IGN, env="SBATCH_IGNORE_PBS"),  # no #PBS translation anyway
        row("input", "i", REQ, env="SBATCH_INPUT"),
        "job-name",
        row("kill-on-invalid-dep", "", REQ),
        "licenses mail-type mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus",
        "network nice no-kill",
        flag_row("no-requeue", "", env="SBATCH_NO_REQUEUE"),
        "nodefile nodelist nodes ntasks ntasks-per-core ntasks-per-gpu ntasks-per-node",
        "ntasks-per-socket",
        row("ntasks-per-tres", "", REQ, UNS),
        "open-mode",
        row("output", "o", REQ, env="SBATCH_OUTPUT"),
        "overcommit oversubscribe",
        flag_row("parsable"),
        "partition power prefer priority profile propagate qos quiet reboot",
        flag_row("requeue", "", env="SBATCH_REQUEUE"),
        "reservation signal sockets-per-node spread-job switches tasks-per-node test-only",
        "thread-spec threads-per-core time time-min tmp uid use-min-nodes verbose version usage",
        flag_row("wait", "W", env="SBATCH_WAIT"),  # cli.sbatch_wait
        "wait-all-nodes wckey",
        row("wrap", "", REQ),
    ),
    status={
        "begin": SUP,
        "dependency": SUP,
        "hold": SUP,
        "signal": SUP,
        "test-only": SUP,
    },
    permute=False,
    error_exit=255,
)

# sbatch options acted on before the script is read; Slurm skips them when
# they appear in #SBATCH lines.
SBATCH_EARLY = frozenset({"help", "usage", "version", "quiet", "verbose", "wrap"})

# --------------------------------------------------------------------- squeue

_SQ_FORMAT_GIVEN = ("format", "Format", "long", "start", "steps")

SQUEUE = OptionTable(
    prog="squeue",
    specs=(
        row("accounts", "A", REQ, env="SQUEUE_ACCOUNT"),
        row("all", "a", env="SQUEUE_ALL"),
        row("array", "r", env="SQUEUE_ARRAY"),
        row("array-unique", "", NO, UNS, env="SQUEUE_ARRAY_UNIQUE"),
        # SQUEUE_FORMAT beats SQUEUE_FORMAT2; any format option beats both
        row("format", "o", REQ, env="SQUEUE_FORMAT", env_unless=_SQ_FORMAT_GIVEN),
        row("Format", "O", REQ, env="SQUEUE_FORMAT2", env_unless=_SQ_FORMAT_GIVEN),
        row("federation", "", NO, IGN, env="SQUEUE_FEDERATION"),
        row("help"),
        row("hide", "", NO, IGN),  # slurmlite has no hidden partitions
        row("iterate", "i", REQ),
        row("jobs", "j", OPT),
        row("local", "", NO, IGN, env="SQUEUE_LOCAL"),
        row("long", "l"),
        row("licenses", "L", REQ, UNS, env="SQUEUE_LICENSES"),
        row("cluster clusters", "M", REQ, IGN, env="SLURM_CLUSTERS", key="clusters"),
        row("me"),
        row("name", "n", REQ, env="SQUEUE_NAMES"),
        row("noconvert", "", NO, UNS),
        row("node nodes nodelist", "w", REQ, key="nodelist"),
        row("noheader", "h"),
        row("partitions", "p", REQ, env="SQUEUE_PARTITION", key="partition"),
        row("priority", "P", NO, UNS, env="SQUEUE_PRIORITY"),
        row("qos", "q", REQ, env="SQUEUE_QOS"),
        row("reservation", "R", REQ, UNS),
        row("sib sibling", "", NO, IGN, env="SQUEUE_SIB SQUEUE_SIBLING", key="sibling"),
        row("sort", "S", REQ, env="SQUEUE_SORT"),
        row("start"),
        row("steps", "s", OPT, UNS),
        row("states", "t", REQ, env="SQUEUE_STATES"),
        row("usage"),
        row("user users", "u", REQ, env="SQUEUE_USERS", key="user"),
        row("verbose", "v", repeat="count"),
        row("version", "V"),
        row("json"),  # cli/json_*.py
        row("yaml", "", NO, UNS),
        row("", "U", REQ, key="accounts"),  # old spelling of -A
    ),
)

# -------------------------------------------------------------------- scancel

SCANCEL = OptionTable(
    prog="scancel",
    specs=(
        row("account", "A", REQ, env="SCANCEL_ACCOUNT"),
        row("batch", "b", env="SCANCEL_BATCH", env_flag=ENV_TRUE_FALSE),
        row("ctld", "", NO, IGN, env="SCANCEL_CTLD"),  # always via the controller
        row("full", "f", env="SCANCEL_FULL", env_flag=ENV_TRUE_FALSE),
        row("help"),
        row("hurry", "H", NO, IGN, env="SCANCEL_HURRY"),  # no burst buffers
        row("interactive", "i", env="SCANCEL_INTERACTIVE", env_flag=ENV_TRUE_FALSE),
        row("cluster clusters", "M", REQ, IGN, env="SLURM_CLUSTERS", key="clusters"),
        row("jobname", "n", REQ, env="SCANCEL_NAME", key="name"),
        row("me"),
        row("name", "", REQ),
        row("nodelist", "w", REQ),
        row("partition", "p", REQ, env="SCANCEL_PARTITION"),
        row("qos", "q", REQ, env="SCANCEL_QOS"),
        row("quiet", "Q"),
        row("reservation", "R", REQ, UNS),
        row("sibling", "", REQ, IGN),
        row("signal", "s", REQ),
        row("state", "t", REQ, env="SCANCEL_STATE"),
        row("usage"),
        row("user", "u", REQ, env="SCANCEL_USER"),
        row(
            "verbose",
            "v",
            env="SCANCEL_VERBOSE",
            env_flag=ENV_TRUE_FALSE,
            repeat="count",
        ),
        row("version", "V"),
        row("wckey", "", REQ, UNS, env="SCANCEL_WCKEY"),
    ),
)

# ---------------------------------------------------------------------- sinfo

SINFO = OptionTable(
    prog="sinfo",
    specs=(
        row("all", "a", env="SINFO_ALL"),
        row("dead", "d"),
        row("exact", "e"),
        row("federation", "", NO, IGN, env="SINFO_FEDERATION"),
        row("help"),
        row("hide", "", NO, IGN),  # slurmlite has no hidden partitions
        row("iterate", "i", REQ),
        row("local", "", NO, IGN, env="SINFO_LOCAL"),
        row("long", "l"),
        row("cluster clusters", "M", REQ, IGN, env="SLURM_CLUSTERS", key="clusters"),
        row("nodes", "n", REQ),
        row("noconvert"),
        row("noheader", "h"),
        row("Node", "N"),
        row("format", "o", REQ, env="SINFO_FORMAT", env_unless=("format", "Format", "summarize")),
        row("Format", "O", REQ),
        row("partition", "p", REQ, env="SINFO_PARTITION"),
        row("responding", "r"),
        row("list-reasons", "R"),
        row("summarize", "s"),
        row("sort", "S", REQ, env="SINFO_SORT"),
        row("states", "t", REQ),
        row("reservation", "T", NO, UNS),
        row("usage"),
        row("verbose", "v", repeat="count"),
        row("version", "V"),
        row("json"),  # cli/json_*.py
        row("yaml", "", NO, UNS),
    ),
)

# ---------------------------------------------------------------------- sacct
# Lists accumulate: "-j 1 -j 2,3" asks for 1, 2 and 3 (submitit repeats -j).

_APPEND = {"repeat": "append"}

SACCT = OptionTable(
    prog="sacct",
    try_help=False,  # sacct prints only getopt's line
    specs=(
        row("allusers", "a"),
        row("accounts", "A", REQ, UNS),
        row("allocations", "X"),
        row("brief", "b"),
        row("batch-script", "B", NO, UNS),
        row("completion", "c", NO, UNS),
        row("constraints", "C", REQ, UNS),
        row("delimiter", "", REQ),
        row("duplicates", "D"),
        row("federation", "", NO, IGN, env="SACCT_FEDERATION"),
        row("helpformat help-fields", "e", key="helpformat"),
        row("endtime", "E", REQ),
        row("env-vars", "", NO, UNS),
        row("file", "f", REQ, UNS),
        row("flags", "F", REQ, UNS),
        row("gid group", "g", REQ, UNS, key="group"),
        row("help", "h"),
        row("local", "", NO, IGN, env="SACCT_LOCAL"),
        row("name", "", REQ, **_APPEND),
        row("nnodes", "i", REQ, UNS),
        row("ncpus", "I", REQ, UNS),
        row("jobs", "j", REQ, **_APPEND),
        row("timelimit-min", "k", REQ, UNS),
        row("timelimit-max", "K", REQ, UNS),
        row("long", "l"),
        row("allclusters", "L", NO, IGN),
        row("cluster clusters", "M", REQ, IGN, key="clusters"),
        row("nodelist", "N", REQ, UNS),
        row("noconvert", "", NO, UNS),
        row("units", "", REQ, UNS),
        row("noheader", "n"),
        row(
            "fields format",
            "o",
            REQ,
            env="SACCT_FORMAT",
            key="format",
            env_unless=("format", "brief", "long"),
            **_APPEND,
        ),
        row("parsable", "p"),
        row("parsable2", "P"),
        row("qos", "q", REQ, UNS),
        row("partition", "r", REQ, UNS),
        row("reason", "R", REQ, UNS),
        row("state", "s", REQ, **_APPEND),
        row("starttime", "S", REQ),
        row("truncate", "T", NO, UNS),
        row("uid", "u", REQ, key="user", **_APPEND),
        row("use-local-uid", "", NO, UNS),
        row("usage", "U"),
        row("user", "", REQ, **_APPEND),
        row("verbose", "v", repeat="count"),
        row("version", "V"),
        row("wckeys", "W", REQ, UNS),
        row("whole-hetjob", "", OPT, UNS),
        row("associations", "x", REQ, UNS),
        row("json"),  # cli/json_*.py
        row("yaml", "", NO, UNS),
        row("", "t", key="allocations"),  # old spelling of -X
    ),
)

# ------------------------------------------------------------------- scontrol
# The verbs (show, update, hold, ...) are positional words for the command.

SCONTROL = OptionTable(
    prog="scontrol",
    specs=(
        row("all", "a", env="SCONTROL_ALL"),
        row("cluster clusters", "M", REQ, IGN, env="SLURM_CLUSTERS", key="clusters"),
        row("details", "d", repeat="count"),
        row("federation", "", NO, IGN, env="SCONTROL_FEDERATION"),
        row("future", "F", NO, UNS, env="SCONTROL_FUTURE"),
        row("help", "h"),
        row("hide", "", NO, IGN),  # slurmlite has no hidden partitions
        row("local", "", NO, IGN, env="SCONTROL_LOCAL"),
        row("json"),  # show job|node|partition (cli/json_*.py)
        row("oneliner", "o"),
        row("quiet", "Q"),
        row("sibling", "", NO, IGN, env="SCONTROL_SIB SCONTROL_SIBLING"),
        row("uid", "u", REQ, UNS),
        row("usage", "", key="help"),  # scontrol --usage prints the help
        row("verbose", "v", repeat="count"),
        row("version", "V"),
        row("yaml", "", NO, UNS),
    ),
)

TABLES: dict[str, OptionTable] = {
    t.prog: t for t in (SBATCH, SQUEUE, SCANCEL, SINFO, SACCT, SCONTROL)
}
