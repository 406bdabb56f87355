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
``-t/--time`` with a required value, key ``time``.  Sources: the 22.05 man
pages and the commands' long-option arrays (facts only).
"""

from __future__ import annotations

from slurmlite.getopt import (
    ENV_SLURM_BOOL,
    ENV_TRUE_FALSE,
    IGNORED,
    NO_ARG,
    OPTIONAL,
    REQUIRED,
    SUPPORTED,
    UNSUPPORTED,
    OptionSpec,
    OptionTable,
)

REQ, OPT, NO = REQUIRED, OPTIONAL, NO_ARG
SUP, IGN, UNS = SUPPORTED, IGNORED, UNSUPPORTED


def row(
    names: str,
    short: str = "",
    arg: str = NO,
    status: str = SUP,
    env: str = "",
    key: str = "",
    **extra: object,
) -> OptionSpec:
    """Row builder: ``names`` are space-separated long names (may be empty)."""
    longs = tuple(names.split())
    return OptionSpec(
        key=key or (longs[0] if longs else short).replace("-", "_"),
        long=longs,
        short=short,
        arg=arg,
        status=status,
        env=tuple(env.split()),
        **extra,  # type: ignore[arg-type]
    )


def flag_row(
    names: str, short: str = "", status: str = SUP, env: str = "", **kw: object
) -> OptionSpec:
    """A flag whose SBATCH_* variable follows spec §6.4 (yes/number/empty)."""
    return row(names, short, NO, status, env, env_flag=ENV_SLURM_BOOL, **kw)


# --------------------------------------------------------------------- sbatch
# Order of Slurm 22.05's common option list (the sbatch subset).

SBATCH = OptionTable(
    prog="sbatch",
    permute=False,
    error_exit=255,
    specs=(
        row("account", "A", REQ, env="SBATCH_ACCOUNT"),
        row("acctg-freq", "", REQ, IGN, env="SBATCH_ACCTG_FREQ"),
        row("array", "a", REQ, UNS, env="SBATCH_ARRAY_INX"),
        row("batch", "", REQ, UNS, env="SBATCH_BATCH"),
        row("begin", "b", REQ, UNS),
        row("bb", "", REQ, UNS, env="SBATCH_BURST_BUFFER"),
        row("bbf", "", REQ, UNS),
        row("cluster-constraint", "", REQ, UNS, env="SBATCH_CLUSTER_CONSTRAINT"),
        row("chdir", "D", REQ),
        row("cluster", "", REQ, IGN),
        row("clusters", "M", REQ, IGN, env="SBATCH_CLUSTERS SLURM_CLUSTERS"),
        row("comment", "", REQ),
        row("container", "", REQ, UNS, env="SBATCH_CONTAINER"),
        row("context", "", REQ, UNS),
        flag_row("contiguous", "", UNS),
        row("constraint", "C", REQ, env="SBATCH_CONSTRAINT"),
        row("core-spec", "S", REQ, UNS, env="SBATCH_CORE_SPEC"),
        row("cores-per-socket", "", REQ, UNS),
        row("cpu-freq", "", REQ, IGN, env="SBATCH_CPU_FREQ_REQ"),
        row("cpus-per-gpu", "", REQ, UNS, env="SBATCH_CPUS_PER_GPU"),
        row("cpus-per-task", "c", REQ),
        row("deadline", "", REQ, UNS),
        row("delay-boot", "", REQ, IGN, env="SBATCH_DELAY_BOOT"),
        row("dependency", "d", REQ, UNS),
        row("distribution", "m", REQ, UNS, env="SBATCH_DISTRIBUTION"),
        row("error", "e", REQ, env="SBATCH_ERROR"),
        row("exclude", "x", REQ),
        row("exclusive", "", OPT, env="SBATCH_EXCLUSIVE"),
        row("export", "", REQ, env="SBATCH_EXPORT"),
        row("export-file", "", REQ, UNS),
        row("extra-node-info", "B", REQ, UNS),
        row("get-user-env", "", OPT, UNS, env="SBATCH_GET_USER_ENV"),
        row("gid", "", REQ, UNS),
        row("gpu-bind", "", REQ, UNS, env="SBATCH_GPU_BIND"),
        row("gpu-freq", "", REQ, IGN, env="SBATCH_GPU_FREQ"),
        row("gpus", "G", REQ, env="SBATCH_GPUS"),
        row("gpus-per-node", "", REQ, env="SBATCH_GPUS_PER_NODE"),
        row("gpus-per-socket", "", REQ, UNS, env="SBATCH_GPUS_PER_SOCKET"),
        row("gpus-per-task", "", REQ, UNS, env="SBATCH_GPUS_PER_TASK"),
        row("gres", "", REQ, env="SBATCH_GRES"),
        row("gres-flags", "", REQ, UNS, env="SBATCH_GRES_FLAGS"),
        row("help", "h"),
        row("hint", "", REQ, UNS, env="SLURM_HINT SBATCH_HINT"),
        flag_row("hold", "H"),
        flag_row("ignore-pbs", "", IGN, env="SBATCH_IGNORE_PBS"),  # no #PBS translation anyway
        row("input", "i", REQ, env="SBATCH_INPUT"),
        row("job-name", "J", REQ, env="SBATCH_JOB_NAME"),
        row("kill-on-invalid-dep", "", REQ, UNS),
        row("licenses", "L", REQ, UNS),
        row("mail-type", "", REQ, IGN),
        row("mail-user", "", REQ, IGN),
        row("mcs-label", "", REQ, IGN),
        row("mem", "", REQ, env="SBATCH_MEM_PER_NODE"),
        row("mem-bind", "", REQ, IGN, env="SBATCH_MEM_BIND"),
        row("mem-per-cpu", "", REQ, env="SBATCH_MEM_PER_CPU"),
        row("mem-per-gpu", "", REQ, env="SBATCH_MEM_PER_GPU"),
        row("mincpus", "", REQ, UNS),
        row("network", "", REQ, IGN, env="SBATCH_NETWORK"),
        row("nice", "", OPT),
        row("no-kill", "k", OPT, UNS, env="SBATCH_NO_KILL"),
        flag_row("no-requeue", "", env="SBATCH_NO_REQUEUE"),
        row("nodefile", "F", REQ, UNS),
        row("nodelist", "w", REQ),
        row("nodes", "N", REQ),
        row("ntasks", "n", REQ),
        row("ntasks-per-core", "", REQ, UNS),
        row("ntasks-per-gpu", "", REQ, UNS),
        row("ntasks-per-node", "", REQ),
        row("ntasks-per-socket", "", REQ, UNS),
        row("ntasks-per-tres", "", REQ, UNS),
        row("open-mode", "", REQ, env="SBATCH_OPEN_MODE"),
        row("output", "o", REQ, env="SBATCH_OUTPUT"),
        flag_row("overcommit", "O", UNS, env="SBATCH_OVERCOMMIT"),
        flag_row("oversubscribe", "s", UNS),
        flag_row("parsable"),
        row("partition", "p", REQ, env="SBATCH_PARTITION"),
        row("power", "", REQ, IGN, env="SBATCH_POWER"),
        row("prefer", "", REQ, UNS),
        row("priority", "", REQ, UNS),
        row("profile", "", REQ, IGN, env="SBATCH_PROFILE"),
        row("propagate", "", OPT, IGN),
        row("qos", "q", REQ, env="SBATCH_QOS"),
        flag_row("quiet", "Q"),
        flag_row("reboot", "", IGN),  # nodes are never rebooted by slurmlite
        flag_row("requeue", "", env="SBATCH_REQUEUE"),
        row("reservation", "", REQ, UNS, env="SBATCH_RESERVATION"),
        row("signal", "", REQ, env="SBATCH_SIGNAL"),
        row("sockets-per-node", "", REQ, UNS),
        flag_row("spread-job", "", UNS, env="SBATCH_SPREAD_JOB"),
        row("switches", "", REQ, UNS, env="SBATCH_REQ_SWITCH SBATCH_WAIT4SWITCH"),
        row("tasks-per-node", "", REQ, key="ntasks_per_node"),  # hidden alias
        flag_row("test-only"),
        row("thread-spec", "", REQ, UNS, env="SBATCH_THREAD_SPEC"),
        row("threads-per-core", "", REQ, UNS, env="SBATCH_THREADS_PER_CORE"),
        row("time", "t", REQ, env="SBATCH_TIMELIMIT"),
        row("time-min", "", REQ, UNS),
        row("tmp", "", REQ, UNS),
        row("uid", "", REQ, UNS),
        flag_row("use-min-nodes", "", IGN, env="SBATCH_USE_MIN_NODES"),
        flag_row("verbose", "v", env="SBATCH_DEBUG", repeat="count"),
        row("version", "V"),
        row("usage"),
        flag_row("wait", "W", UNS, env="SBATCH_WAIT"),
        row("wait-all-nodes", "", REQ, UNS, env="SBATCH_WAIT_ALL_NODES"),
        row("wckey", "", REQ, IGN, env="SBATCH_WCKEY"),
        row("wrap", "", REQ),
    ),
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
        row("json", "", NO, UNS),
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
        row("json", "", NO, UNS),
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
        row("json", "", NO, UNS),
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
        row("oneliner", "o"),
        row("quiet", "Q"),
        row("sibling", "", NO, IGN, env="SCONTROL_SIB SCONTROL_SIBLING"),
        row("uid", "u", REQ, UNS),
        row("usage", "", key="help"),  # scontrol --usage prints the help
        row("verbose", "v", repeat="count"),
        row("version", "V"),
    ),
)

TABLES: dict[str, OptionTable] = {
    t.prog: t for t in (SBATCH, SQUEUE, SCANCEL, SINFO, SACCT, SCONTROL)
}
