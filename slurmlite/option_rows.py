"""How the option tables are written, and the rows sbatch, srun and salloc share.

A table row is built with :func:`row`: ``row("time", "t", REQ,
env="SBATCH_TIMELIMIT")`` is ``-t/--time`` with a required value, key
``time``, read also from ``$SBATCH_TIMELIMIT``.  :func:`flag_row` is a flag
whose variable follows spec §6.4 (``yes``, a number or empty switches it on).

The three commands that ask for resources know mostly the same options:
``--account``, ``--gpus-per-node``, ``--mem-per-cpu`` and about eighty more
mean the same in sbatch, srun and salloc, and their input variables differ
only in prefix (``SBATCH_ACCOUNT``, ``SLURM_ACCOUNT``, ``SALLOC_ACCOUNT``).
:func:`resource_rows` states each such row once, with the prefix as its
parameter; a row marked "salloc and sbatch" (or another pair) is shared by
those two only, the third command writing its own (srun reads ``--chdir``
from ``SLURM_WORKING_DIR``, a name no prefix rule gives).

:func:`command_table` lays a command's table out in that command's own order
(glibc lists an ambiguous prefix's matches in table order, so the order is a
fact of each command): a string names shared rows, an :class:`OptionSpec`
is one of the command's own rows, and ``status`` says where the command's
support differs from the shared row's::

    >>> t = command_table("salloc", "SALLOC_", ["account", row("bell")], {"account": IGN})
    >>> [(s.name, s.env, s.status) for s in t.specs]
    [('--account', ('SALLOC_ACCOUNT',), 'ignored'), ('--bell', (), 'supported')]

Sources: the Slurm 22.05 man pages of sbatch, srun and salloc and their
long-option arrays (facts only).
"""

from __future__ import annotations

from slurmlite.getopt import (
    ENV_SLURM_BOOL,
    IGNORED,
    NO_ARG,
    OPTIONAL,
    REQUIRED,
    SUPPORTED,
    UNSUPPORTED,
    OptionSpec,
    OptionTable,
)

TYPE_CHECKING = False  # importing typing costs a command ~3 ms; annotations are strings
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

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
    """A flag whose variable follows spec §6.4 (yes/number/empty)."""
    return row(names, short, NO, status, env, env_flag=ENV_SLURM_BOOL, **kw)


def resource_rows(p: str) -> dict[str, OptionSpec]:
    """The rows of sbatch, srun and salloc, their variables named with prefix ``p``.

    Keyed by long name; unmarked rows are in all three tables.
    """
    rows = (
        row("account", "A", REQ, env=f"{p}ACCOUNT"),
        row("acctg-freq", "", REQ, IGN, env=f"{p}ACCTG_FREQ"),
        row("bb", "", REQ, UNS, env=f"{p}BURST_BUFFER"),
        row("bbf", "", REQ, UNS),
        row("begin", "b", REQ, UNS),
        row("chdir", "D", REQ),  # salloc and sbatch
        row("cluster-constraint", "", REQ, UNS, env=f"{p}CLUSTER_CONSTRAINT"),  # salloc and sbatch
        row("cluster", "", REQ, IGN),
        row("clusters", "M", REQ, IGN, env=f"{p}CLUSTERS SLURM_CLUSTERS"),  # salloc and sbatch
        row("comment", "", REQ),
        row("constraint", "C", REQ, env=f"{p}CONSTRAINT"),
        row("container", "", REQ, UNS, env=f"{p}CONTAINER"),  # salloc and sbatch
        row("context", "", REQ, UNS),
        flag_row("contiguous", "", UNS),
        row("core-spec", "S", REQ, UNS, env=f"{p}CORE_SPEC"),
        row("cores-per-socket", "", REQ, UNS),
        row("cpu-freq", "", REQ, IGN, env=f"{p}CPU_FREQ_REQ"),
        row("cpus-per-gpu", "", REQ, UNS, env=f"{p}CPUS_PER_GPU"),
        row("cpus-per-task", "c", REQ),  # salloc and sbatch
        row("deadline", "", REQ, UNS),
        row("delay-boot", "", REQ, IGN, env=f"{p}DELAY_BOOT"),
        row("dependency", "d", REQ, UNS),  # salloc and sbatch
        row("distribution", "m", REQ, UNS, env=f"{p}DISTRIBUTION"),  # sbatch and srun
        row("exclude", "x", REQ),
        row("exclusive", "", OPT, env=f"{p}EXCLUSIVE"),
        row("extra-node-info", "B", REQ, UNS),
        row("gid", "", REQ, UNS),
        row("gpu-bind", "", REQ, UNS, env=f"{p}GPU_BIND"),
        row("gpu-freq", "", REQ, IGN, env=f"{p}GPU_FREQ"),
        row("gpus", "G", REQ, env=f"{p}GPUS"),
        row("gpus-per-node", "", REQ, env=f"{p}GPUS_PER_NODE"),
        row("gpus-per-socket", "", REQ, UNS, env=f"{p}GPUS_PER_SOCKET"),  # salloc and sbatch
        row("gpus-per-task", "", REQ, UNS, env=f"{p}GPUS_PER_TASK"),
        row("gres", "", REQ, env=f"{p}GRES"),  # salloc and sbatch
        row("gres-flags", "", REQ, UNS, env=f"{p}GRES_FLAGS"),
        row("help", "h"),
        flag_row("hold", "H", UNS),
        row("immediate", "I", OPT, UNS, env=f"{p}IMMEDIATE"),  # salloc and srun
        row("job-name", "J", REQ, env=f"{p}JOB_NAME"),
        row("licenses", "L", REQ, UNS),
        row("mail-type", "", REQ),  # slurmlite.mailtype; controller.notify sends
        row("mail-user", "", REQ),
        row("mcs-label", "", REQ, IGN),
        row("mem", "", REQ, env=f"{p}MEM_PER_NODE"),
        row("mem-bind", "", REQ, IGN, env=f"{p}MEM_BIND"),
        row("mem-per-cpu", "", REQ, env=f"{p}MEM_PER_CPU"),
        row("mem-per-gpu", "", REQ, env=f"{p}MEM_PER_GPU"),
        row("mincpus", "", REQ, UNS),
        row("network", "", REQ, IGN, env=f"{p}NETWORK"),
        row("nice", "", OPT),
        row("no-kill", "k", OPT, UNS, env=f"{p}NO_KILL"),
        row("nodefile", "F", REQ, UNS),
        row("nodelist", "w", REQ),
        row("nodes", "N", REQ),  # salloc and sbatch
        row("ntasks", "n", REQ),  # salloc and sbatch
        row("ntasks-per-core", "", REQ, UNS),
        row("ntasks-per-gpu", "", REQ, UNS),
        row("ntasks-per-node", "", REQ),  # salloc and sbatch
        row("ntasks-per-socket", "", REQ, UNS),
        row("open-mode", "", REQ, env=f"{p}OPEN_MODE"),  # sbatch and srun
        flag_row("overcommit", "O", UNS, env=f"{p}OVERCOMMIT"),
        flag_row("oversubscribe", "s", UNS),
        row("partition", "p", REQ, env=f"{p}PARTITION"),
        row("power", "", REQ, IGN, env=f"{p}POWER"),
        row("prefer", "", REQ, UNS),
        row("priority", "", REQ, UNS),
        row("profile", "", REQ, IGN, env=f"{p}PROFILE"),
        row("propagate", "", OPT, IGN),  # sbatch and srun
        row("qos", "q", REQ, env=f"{p}QOS"),
        flag_row("quiet", "Q"),
        flag_row("reboot", "", IGN),  # nodes are never rebooted by slurmlite
        row("reservation", "", REQ, UNS, env=f"{p}RESERVATION"),
        row("signal", "", REQ, UNS, env=f"{p}SIGNAL"),
        row("sockets-per-node", "", REQ, UNS),
        flag_row("spread-job", "", UNS, env=f"{p}SPREAD_JOB"),
        row("switches", "", REQ, UNS, env=f"{p}REQ_SWITCH {p}WAIT4SWITCH"),  # salloc and sbatch
        row("tasks-per-node", "", REQ, key="ntasks_per_node"),  # hidden alias
        flag_row("test-only", "", UNS),
        row("thread-spec", "", REQ, UNS, env=f"{p}THREAD_SPEC"),
        row("threads-per-core", "", REQ, UNS, env=f"{p}THREADS_PER_CORE"),  # salloc and sbatch
        row("time", "t", REQ, env=f"{p}TIMELIMIT"),
        row("time-min", "", REQ, UNS),
        row("tmp", "", REQ, UNS),
        row("uid", "", REQ, UNS),
        row("usage"),
        flag_row("use-min-nodes", "", IGN, env=f"{p}USE_MIN_NODES"),
        flag_row("verbose", "v", env=f"{p}DEBUG", repeat="count"),  # salloc and sbatch
        row("version", "V"),
        row("wckey", "", REQ, IGN, env=f"{p}WCKEY"),
        row("x11", "", OPT, UNS),  # salloc and srun
        row("wait-all-nodes", "", REQ, UNS, env=f"{p}WAIT_ALL_NODES"),  # salloc and sbatch
    )
    return {spec.long[0]: spec for spec in rows}


def _with_status(spec: OptionSpec, status: str) -> OptionSpec:
    return OptionSpec(
        spec.key,
        spec.long,
        spec.short,
        spec.arg,
        status,
        spec.env,
        spec.env_unless,
        spec.env_flag,
        spec.repeat,
    )


def command_table(
    prog: str,
    prefix: str,
    layout: Sequence[str | OptionSpec],
    status: Mapping[str, str] | None = None,
    **how: bool | int,
) -> OptionTable:
    """``prog``'s table: ``layout`` in order, shared rows named in its strings.

    ``status`` maps a shared row's name to this command's support of it;
    ``how`` is passed to :class:`OptionTable` (``permute``, ``error_exit``).
    A name that is no shared row, or a ``status`` for a row not laid out, is
    a ValueError: a typo would otherwise drop an option silently.
    """
    shared = resource_rows(prefix)
    status = dict(status or {})
    specs: list[OptionSpec] = []
    for item in layout:
        if isinstance(item, OptionSpec):
            specs.append(item)
            continue
        for name in item.split():
            if name not in shared:
                raise ValueError(f"{prog}: no shared option row {name!r}")
            spec = shared[name]
            specs.append(_with_status(spec, status.pop(name)) if name in status else spec)
    if status:
        raise ValueError(f"{prog}: support given for rows not in the table: {sorted(status)}")
    return OptionTable(prog, tuple(specs), **how)  # type: ignore[arg-type]
