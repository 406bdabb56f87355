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

Reading a row: ``_r("time", "t", REQ, env="SBATCH_TIMELIMIT")`` is
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


def _r(
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


def _flag(
    names: str, short: str = "", status: str = SUP, env: str = "", **kw: object
) -> OptionSpec:
    """A flag whose SBATCH_* variable follows spec §6.4 (yes/number/empty)."""
    return _r(names, short, NO, status, env, env_flag=ENV_SLURM_BOOL, **kw)


# --------------------------------------------------------------------- sbatch
# Order of Slurm 22.05's common option list (the sbatch subset).

SBATCH = OptionTable(
    prog="sbatch",
    permute=False,
    error_exit=255,
    specs=(
        _r("account", "A", REQ, env="SBATCH_ACCOUNT"),
        _r("acctg-freq", "", REQ, IGN, env="SBATCH_ACCTG_FREQ"),
        _r("array", "a", REQ, UNS, env="SBATCH_ARRAY_INX"),
        _r("batch", "", REQ, UNS, env="SBATCH_BATCH"),
        _r("begin", "b", REQ, UNS),
        _r("bb", "", REQ, UNS, env="SBATCH_BURST_BUFFER"),
        _r("bbf", "", REQ, UNS),
        _r("cluster-constraint", "", REQ, UNS, env="SBATCH_CLUSTER_CONSTRAINT"),
        _r("chdir", "D", REQ),
        _r("cluster", "", REQ, IGN),
        _r("clusters", "M", REQ, IGN, env="SBATCH_CLUSTERS SLURM_CLUSTERS"),
        _r("comment", "", REQ),
        _r("container", "", REQ, UNS, env="SBATCH_CONTAINER"),
        _r("context", "", REQ, UNS),
        _flag("contiguous", "", UNS),
        _r("constraint", "C", REQ, env="SBATCH_CONSTRAINT"),
        _r("core-spec", "S", REQ, UNS, env="SBATCH_CORE_SPEC"),
        _r("cores-per-socket", "", REQ, UNS),
        _r("cpu-freq", "", REQ, IGN, env="SBATCH_CPU_FREQ_REQ"),
        _r("cpus-per-gpu", "", REQ, UNS, env="SBATCH_CPUS_PER_GPU"),
        _r("cpus-per-task", "c", REQ),
        _r("deadline", "", REQ, UNS),
        _r("delay-boot", "", REQ, IGN, env="SBATCH_DELAY_BOOT"),
        _r("dependency", "d", REQ, UNS),
        _r("distribution", "m", REQ, UNS, env="SBATCH_DISTRIBUTION"),
        _r("error", "e", REQ, env="SBATCH_ERROR"),
        _r("exclude", "x", REQ),
        _r("exclusive", "", OPT, env="SBATCH_EXCLUSIVE"),
        _r("export", "", REQ, env="SBATCH_EXPORT"),
        _r("export-file", "", REQ, UNS),
        _r("extra-node-info", "B", REQ, UNS),
        _r("get-user-env", "", OPT, UNS, env="SBATCH_GET_USER_ENV"),
        _r("gid", "", REQ, UNS),
        _r("gpu-bind", "", REQ, UNS, env="SBATCH_GPU_BIND"),
        _r("gpu-freq", "", REQ, IGN, env="SBATCH_GPU_FREQ"),
        _r("gpus", "G", REQ, env="SBATCH_GPUS"),
        _r("gpus-per-node", "", REQ, env="SBATCH_GPUS_PER_NODE"),
        _r("gpus-per-socket", "", REQ, UNS, env="SBATCH_GPUS_PER_SOCKET"),
        _r("gpus-per-task", "", REQ, UNS, env="SBATCH_GPUS_PER_TASK"),
        _r("gres", "", REQ, env="SBATCH_GRES"),
        _r("gres-flags", "", REQ, UNS, env="SBATCH_GRES_FLAGS"),
        _r("help", "h"),
        _r("hint", "", REQ, UNS, env="SLURM_HINT SBATCH_HINT"),
        _flag("hold", "H"),
        _flag("ignore-pbs", "", IGN, env="SBATCH_IGNORE_PBS"),  # no #PBS translation anyway
        _r("input", "i", REQ, env="SBATCH_INPUT"),
        _r("job-name", "J", REQ, env="SBATCH_JOB_NAME"),
        _r("kill-on-invalid-dep", "", REQ, UNS),
        _r("licenses", "L", REQ, UNS),
        _r("mail-type", "", REQ, IGN),
        _r("mail-user", "", REQ, IGN),
        _r("mcs-label", "", REQ, IGN),
        _r("mem", "", REQ, env="SBATCH_MEM_PER_NODE"),
        _r("mem-bind", "", REQ, IGN, env="SBATCH_MEM_BIND"),
        _r("mem-per-cpu", "", REQ, env="SBATCH_MEM_PER_CPU"),
        _r("mem-per-gpu", "", REQ, env="SBATCH_MEM_PER_GPU"),
        _r("mincpus", "", REQ, UNS),
        _r("network", "", REQ, IGN, env="SBATCH_NETWORK"),
        _r("nice", "", OPT),
        _r("no-kill", "k", OPT, UNS, env="SBATCH_NO_KILL"),
        _flag("no-requeue", "", env="SBATCH_NO_REQUEUE"),
        _r("nodefile", "F", REQ, UNS),
        _r("nodelist", "w", REQ),
        _r("nodes", "N", REQ),
        _r("ntasks", "n", REQ),
        _r("ntasks-per-core", "", REQ, UNS),
        _r("ntasks-per-gpu", "", REQ, UNS),
        _r("ntasks-per-node", "", REQ),
        _r("ntasks-per-socket", "", REQ, UNS),
        _r("ntasks-per-tres", "", REQ, UNS),
        _r("open-mode", "", REQ, env="SBATCH_OPEN_MODE"),
        _r("output", "o", REQ, env="SBATCH_OUTPUT"),
        _flag("overcommit", "O", UNS, env="SBATCH_OVERCOMMIT"),
        _flag("oversubscribe", "s", UNS),
        _flag("parsable"),
        _r("partition", "p", REQ, env="SBATCH_PARTITION"),
        _r("power", "", REQ, IGN, env="SBATCH_POWER"),
        _r("prefer", "", REQ, UNS),
        _r("priority", "", REQ, UNS),
        _r("profile", "", REQ, IGN, env="SBATCH_PROFILE"),
        _r("propagate", "", OPT, IGN),
        _r("qos", "q", REQ, env="SBATCH_QOS"),
        _flag("quiet", "Q"),
        _flag("reboot", "", IGN),  # nodes are never rebooted by slurmlite
        _flag("requeue", "", env="SBATCH_REQUEUE"),
        _r("reservation", "", REQ, UNS, env="SBATCH_RESERVATION"),
        _r("signal", "", REQ, env="SBATCH_SIGNAL"),
        _r("sockets-per-node", "", REQ, UNS),
        _flag("spread-job", "", UNS, env="SBATCH_SPREAD_JOB"),
        _r("switches", "", REQ, UNS, env="SBATCH_REQ_SWITCH SBATCH_WAIT4SWITCH"),
        _r("tasks-per-node", "", REQ, key="ntasks_per_node"),  # hidden alias
        _flag("test-only"),
        _r("thread-spec", "", REQ, UNS, env="SBATCH_THREAD_SPEC"),
        _r("threads-per-core", "", REQ, UNS, env="SBATCH_THREADS_PER_CORE"),
        _r("time", "t", REQ, env="SBATCH_TIMELIMIT"),
        _r("time-min", "", REQ, UNS),
        _r("tmp", "", REQ, UNS),
        _r("uid", "", REQ, UNS),
        _flag("use-min-nodes", "", IGN, env="SBATCH_USE_MIN_NODES"),
        _flag("verbose", "v", env="SBATCH_DEBUG", repeat="count"),
        _r("version", "V"),
        _r("usage"),
        _flag("wait", "W", UNS, env="SBATCH_WAIT"),
        _r("wait-all-nodes", "", REQ, UNS, env="SBATCH_WAIT_ALL_NODES"),
        _r("wckey", "", REQ, IGN, env="SBATCH_WCKEY"),
        _r("wrap", "", REQ),
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
        _r("accounts", "A", REQ, env="SQUEUE_ACCOUNT"),
        _r("all", "a", env="SQUEUE_ALL"),
        _r("array", "r", env="SQUEUE_ARRAY"),
        _r("array-unique", "", NO, UNS, env="SQUEUE_ARRAY_UNIQUE"),
        # SQUEUE_FORMAT beats SQUEUE_FORMAT2; any format option beats both
        _r("format", "o", REQ, env="SQUEUE_FORMAT", env_unless=_SQ_FORMAT_GIVEN),
        _r("Format", "O", REQ, env="SQUEUE_FORMAT2", env_unless=_SQ_FORMAT_GIVEN),
        _r("federation", "", NO, IGN, env="SQUEUE_FEDERATION"),
        _r("help"),
        _r("hide", "", NO, IGN),  # slurmlite has no hidden partitions
        _r("iterate", "i", REQ),
        _r("jobs", "j", OPT),
        _r("local", "", NO, IGN, env="SQUEUE_LOCAL"),
        _r("long", "l"),
        _r("licenses", "L", REQ, UNS, env="SQUEUE_LICENSES"),
        _r("cluster clusters", "M", REQ, IGN, env="SLURM_CLUSTERS", key="clusters"),
        _r("me"),
        _r("name", "n", REQ, env="SQUEUE_NAMES"),
        _r("noconvert", "", NO, UNS),
        _r("node nodes nodelist", "w", REQ, key="nodelist"),
        _r("noheader", "h"),
        _r("partitions", "p", REQ, env="SQUEUE_PARTITION", key="partition"),
        _r("priority", "P", NO, UNS, env="SQUEUE_PRIORITY"),
        _r("qos", "q", REQ, env="SQUEUE_QOS"),
        _r("reservation", "R", REQ, UNS),
        _r("sib sibling", "", NO, IGN, env="SQUEUE_SIB SQUEUE_SIBLING", key="sibling"),
        _r("sort", "S", REQ, env="SQUEUE_SORT"),
        _r("start"),
        _r("steps", "s", OPT, UNS),
        _r("states", "t", REQ, env="SQUEUE_STATES"),
        _r("usage"),
        _r("user users", "u", REQ, env="SQUEUE_USERS", key="user"),
        _r("verbose", "v", repeat="count"),
        _r("version", "V"),
        _r("json", "", NO, UNS),
        _r("yaml", "", NO, UNS),
        _r("", "U", REQ, key="accounts"),  # old spelling of -A
    ),
)

# -------------------------------------------------------------------- scancel

SCANCEL = OptionTable(
    prog="scancel",
    specs=(
        _r("account", "A", REQ, env="SCANCEL_ACCOUNT"),
        _r("batch", "b", env="SCANCEL_BATCH", env_flag=ENV_TRUE_FALSE),
        _r("ctld", "", NO, IGN, env="SCANCEL_CTLD"),  # always via the controller
        _r("full", "f", env="SCANCEL_FULL", env_flag=ENV_TRUE_FALSE),
        _r("help"),
        _r("hurry", "H", NO, IGN, env="SCANCEL_HURRY"),  # no burst buffers
        _r("interactive", "i", env="SCANCEL_INTERACTIVE", env_flag=ENV_TRUE_FALSE),
        _r("cluster clusters", "M", REQ, IGN, env="SLURM_CLUSTERS", key="clusters"),
        _r("jobname", "n", REQ, env="SCANCEL_NAME", key="name"),
        _r("me"),
        _r("name", "", REQ),
        _r("nodelist", "w", REQ),
        _r("partition", "p", REQ, env="SCANCEL_PARTITION"),
        _r("qos", "q", REQ, env="SCANCEL_QOS"),
        _r("quiet", "Q"),
        _r("reservation", "R", REQ, UNS),
        _r("sibling", "", REQ, IGN),
        _r("signal", "s", REQ),
        _r("state", "t", REQ, env="SCANCEL_STATE"),
        _r("usage"),
        _r("user", "u", REQ, env="SCANCEL_USER"),
        _r(
            "verbose",
            "v",
            env="SCANCEL_VERBOSE",
            env_flag=ENV_TRUE_FALSE,
            repeat="count",
        ),
        _r("version", "V"),
        _r("wckey", "", REQ, UNS, env="SCANCEL_WCKEY"),
    ),
)

# ---------------------------------------------------------------------- sinfo

SINFO = OptionTable(
    prog="sinfo",
    specs=(
        _r("all", "a", env="SINFO_ALL"),
        _r("dead", "d"),
        _r("exact", "e"),
        _r("federation", "", NO, IGN, env="SINFO_FEDERATION"),
        _r("help"),
        _r("hide", "", NO, IGN),  # slurmlite has no hidden partitions
        _r("iterate", "i", REQ),
        _r("local", "", NO, IGN, env="SINFO_LOCAL"),
        _r("long", "l"),
        _r("cluster clusters", "M", REQ, IGN, env="SLURM_CLUSTERS", key="clusters"),
        _r("nodes", "n", REQ),
        _r("noconvert"),
        _r("noheader", "h"),
        _r("Node", "N"),
        _r("format", "o", REQ, env="SINFO_FORMAT", env_unless=("format", "Format", "summarize")),
        _r("Format", "O", REQ),
        _r("partition", "p", REQ, env="SINFO_PARTITION"),
        _r("responding", "r"),
        _r("list-reasons", "R"),
        _r("summarize", "s"),
        _r("sort", "S", REQ, env="SINFO_SORT"),
        _r("states", "t", REQ),
        _r("reservation", "T", NO, UNS),
        _r("usage"),
        _r("verbose", "v", repeat="count"),
        _r("version", "V"),
        _r("json", "", NO, UNS),
        _r("yaml", "", NO, UNS),
    ),
)

# ---------------------------------------------------------------------- sacct
# Lists accumulate: "-j 1 -j 2,3" asks for 1, 2 and 3 (submitit repeats -j).

_APPEND = {"repeat": "append"}

SACCT = OptionTable(
    prog="sacct",
    try_help=False,  # sacct prints only getopt's line
    specs=(
        _r("allusers", "a"),
        _r("accounts", "A", REQ, UNS),
        _r("allocations", "X"),
        _r("brief", "b"),
        _r("batch-script", "B", NO, UNS),
        _r("completion", "c", NO, UNS),
        _r("constraints", "C", REQ, UNS),
        _r("delimiter", "", REQ),
        _r("duplicates", "D"),
        _r("federation", "", NO, IGN, env="SACCT_FEDERATION"),
        _r("helpformat help-fields", "e", key="helpformat"),
        _r("endtime", "E", REQ),
        _r("env-vars", "", NO, UNS),
        _r("file", "f", REQ, UNS),
        _r("flags", "F", REQ, UNS),
        _r("gid group", "g", REQ, UNS, key="group"),
        _r("help", "h"),
        _r("local", "", NO, IGN, env="SACCT_LOCAL"),
        _r("name", "", REQ, **_APPEND),
        _r("nnodes", "i", REQ, UNS),
        _r("ncpus", "I", REQ, UNS),
        _r("jobs", "j", REQ, **_APPEND),
        _r("timelimit-min", "k", REQ, UNS),
        _r("timelimit-max", "K", REQ, UNS),
        _r("long", "l"),
        _r("allclusters", "L", NO, IGN),
        _r("cluster clusters", "M", REQ, IGN, key="clusters"),
        _r("nodelist", "N", REQ, UNS),
        _r("noconvert", "", NO, UNS),
        _r("units", "", REQ, UNS),
        _r("noheader", "n"),
        _r(
            "fields format",
            "o",
            REQ,
            env="SACCT_FORMAT",
            key="format",
            env_unless=("format", "brief", "long"),
            **_APPEND,
        ),
        _r("parsable", "p"),
        _r("parsable2", "P"),
        _r("qos", "q", REQ, UNS),
        _r("partition", "r", REQ, UNS),
        _r("reason", "R", REQ, UNS),
        _r("state", "s", REQ, **_APPEND),
        _r("starttime", "S", REQ),
        _r("truncate", "T", NO, UNS),
        _r("uid", "u", REQ, key="user", **_APPEND),
        _r("use-local-uid", "", NO, UNS),
        _r("usage", "U"),
        _r("user", "", REQ, **_APPEND),
        _r("verbose", "v", repeat="count"),
        _r("version", "V"),
        _r("wckeys", "W", REQ, UNS),
        _r("whole-hetjob", "", OPT, UNS),
        _r("associations", "x", REQ, UNS),
        _r("json", "", NO, UNS),
        _r("yaml", "", NO, UNS),
        _r("", "t", key="allocations"),  # old spelling of -X
    ),
)

# ------------------------------------------------------------------- scontrol
# The verbs (show, update, hold, ...) are positional words for the command.

SCONTROL = OptionTable(
    prog="scontrol",
    specs=(
        _r("all", "a", env="SCONTROL_ALL"),
        _r("cluster clusters", "M", REQ, IGN, env="SLURM_CLUSTERS", key="clusters"),
        _r("details", "d", repeat="count"),
        _r("federation", "", NO, IGN, env="SCONTROL_FEDERATION"),
        _r("future", "F", NO, UNS, env="SCONTROL_FUTURE"),
        _r("help", "h"),
        _r("hide", "", NO, IGN),  # slurmlite has no hidden partitions
        _r("local", "", NO, IGN, env="SCONTROL_LOCAL"),
        _r("oneliner", "o"),
        _r("quiet", "Q"),
        _r("sibling", "", NO, IGN, env="SCONTROL_SIB SCONTROL_SIBLING"),
        _r("uid", "u", REQ, UNS),
        _r("usage", "", key="help"),  # scontrol --usage prints the help
        _r("verbose", "v", repeat="count"),
        _r("version", "V"),
    ),
)

TABLES: dict[str, OptionTable] = {
    t.prog: t for t in (SBATCH, SQUEUE, SCANCEL, SINFO, SACCT, SCONTROL)
}
