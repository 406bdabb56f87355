"""sbatch's request: command line + environment + script -> :class:`JobSubmit`.

:func:`build_submit` does everything sbatch does before it talks to the
controller, in real sbatch's order, so that the first error a user sees is
the one Slurm would show:

1. **First pass** over the command line (getopt, ``slurmlite.options.SBATCH``,
   stop at the first positional word = the script, the rest are its
   arguments).  ``--help``/``--usage``/``--version`` answer at once; every
   value is checked here (``--time=abc`` fails before the script is read;
   the value parsers are in ``slurmlite.sbatch_values``);
   unsupported options are refused (``sbatch: error: --array is not supported
   yet``, exit 1).
2. **The script**: ``--wrap=CMD`` builds ``#!/bin/sh`` + a comment + ``CMD``
   (a script file as well is an error); else the path argument (``./x`` and
   ``/abs`` as given, a bare name is looked up in the current directory, then
   ``$PATH``); ``/dev/stdin`` or no argument reads standard input.  Sanity
   checks: empty, whitespace only, no ``#!`` on line 1, NUL bytes, DOS line
   breaks -> exit 1.
3. **Second pass**: ``#SBATCH`` words < ``SBATCH_*`` variables < command
   line, later wins (spec §6.2.6).  The early options (help, usage, version,
   quiet, verbose, wrap) are taken from the command line only, as in Slurm.
4. **Checks and derived values**, as ``sbatch`` does them: memory options are
   mutually exclusive; ``--nodelist`` raises the node minimum to its host
   count; ``--ntasks-per-node`` with a fixed node count gives ``ntasks``;
   fewer tasks than nodes lowers the node count (with a warning); GRES must
   be GPUs; the script must fit in 4 MiB; the exported environment must be
   within ``slurmlite.batchscript``'s limits (count, size of each variable,
   total), else ``sbatch: error: the environment has 5000 variables, more
   than the limit of 4096`` and the controller's "too long" line, exit 1.

Exit codes follow Slurm 22.05: getopt and option-value errors 255
(``Invalid --time specification``), non-numeric counts 1 (``Invalid numeric
value "x" for --ntasks.``, Slurm's ``parse_int`` exits 1), script and GRES
errors 1.  Every error is a :class:`SbatchError` (a
``slurmlite.errors.CommandLineError``) carrying the exact stderr lines.

Worked example: ``#SBATCH -t 10`` in the script, ``SBATCH_TIMELIMIT=20`` in
the environment and ``sbatch -t 30 job.sh`` -> ``time_limit == 30``; without
``-t 30`` it is 20 (the variable beats the directive).

The ``echo_env`` of the request lists what Slurm's batch environment echoes
from the options (``SLURM_CPUS_PER_TASK``, ``SLURM_NTASKS``/``SLURM_NPROCS``,
``SLURM_NTASKS_PER_NODE``, ``SLURM_GPUS``, ``SLURM_GPUS_PER_NODE``,
``SLURM_MEM_PER_GPU``, ``SLURM_OPEN_MODE``, ``SLURM_EXPORT_ENV``); the
controller adds the allocation's own variables.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from slurmlite import hostlist, resources
from slurmlite.batchscript import (
    MAX_SCRIPT_BYTES,
    PROG,
    TOO_LONG,
    BatchScript,
    InputLimitError,
    check_environment,
    load_script,
    sbatch_error,
)
from slurmlite.directives import invalid_directive, scan
from slurmlite.getopt import Getopt, Occurrence, env_occurrences
from slurmlite.options import SBATCH, SBATCH_EARLY
from slurmlite.sbatch_values import Options, check_memory

TYPE_CHECKING = False  # importing typing costs a command ~3 ms; annotations are
if TYPE_CHECKING:  # strings, so only type checkers need these names
    from typing import Any

if TYPE_CHECKING:
    from slurmlite.protocol import JobSubmit


class SbatchCommand:
    """What the sbatch command should do.

    ``request`` is ``"help"``, ``"usage"`` or ``"version"`` when sbatch must
    only print that (then ``fields`` is None).  ``fields`` is the request as
    ``JobSubmit`` field names -> values (fields left out take the
    dataclass's defaults); sbatch sends it as it is, without building the
    dataclass (start-up time).  ``warnings`` are stderr lines to print
    before submitting; ``ignored`` names the options accepted without
    effect (worth a line with ``-v``); ``cluster`` comes from -M/--clusters
    (``--parsable`` then prints ``ID;cluster``).
    """

    def __init__(
        self,
        fields: dict[str, Any] | None,
        parsable: bool = False,
        test_only: bool = False,
        cluster: str | None = None,
        quiet: bool = False,
        verbose: int = 0,
        request: str | None = None,
        script_args: list[str] | None = None,
        warnings: list[str] | None = None,
        ignored: list[str] | None = None,
        wait: bool = False,
    ) -> None:
        self.fields = fields
        self.wait = wait  # -W/--wait: sbatch stays until the job ends (cli.sbatch_wait)
        self.parsable, self.test_only, self.cluster = parsable, test_only, cluster
        self.quiet, self.verbose, self.request = quiet, verbose, request
        self.script_args = script_args or []
        self.warnings = warnings or []
        self.ignored = ignored or []

    @property
    def submit(self) -> JobSubmit | None:
        """The request as a ``JobSubmit`` (for the bench and tests; sbatch sends ``fields``)."""
        if self.fields is None:
            return None
        from slurmlite.protocol import JobSubmit, from_dict

        return from_dict(JobSubmit, self.fields)


# --------------------------------------------------------------------- build


def build_submit(
    argv: list[str],
    env: Mapping[str, str],
    cwd: str,
    read_stdin: Callable[[], bytes],
    hostname: str,
    uid_name: str,
    *,
    umask: int | None = None,
) -> SbatchCommand:
    """Turn ``sbatch ARGS`` into a request (``argv`` = ``sys.argv[1:]``).

    ``env`` is the submitting environment, ``cwd`` its directory (relative
    paths, ``SLURM_SUBMIT_DIR``), ``read_stdin`` is called only when the
    script comes from standard input, ``hostname`` becomes the submit host,
    ``umask`` (optional) is sent for ``SLURM_UMASK``.  ``uid_name`` is the
    submitting user, kept for messages; the controller authenticates the user
    itself.  Raises :class:`SbatchError` / ``CommandLineError``.
    """
    del uid_name  # the controller learns the user from authentication
    first = Options(cwd)
    getopt = Getopt(SBATCH, argv)
    cli: list[Occurrence] = []
    for occ in getopt:
        if occ.spec.key in ("help", "usage", "version"):
            return SbatchCommand(None, request=occ.spec.key)
        first.apply(occ)
        cli.append(occ)
    args = getopt.positionals
    if args[:1] == [":"]:
        raise sbatch_error("heterogeneous jobs (hetjob) are not supported yet")
    wrap = first.get("wrap")
    if wrap is not None and args:
        raise sbatch_error("Script arguments not permitted with --wrap option")
    script = load_script(args, wrap if isinstance(wrap, str) else None, cwd, env, read_stdin)

    opts = Options(cwd, verbose=first.verbose)
    directives = scan(script.text, script.label, PROG)
    words = Getopt(SBATCH, directives.tokens, source="directive")
    for occ in words:
        if occ.spec.key not in SBATCH_EARLY:
            opts.apply(occ)
    if words.positionals:
        raise invalid_directive(words.positionals[0])
    from_env, env_warnings = env_occurrences(SBATCH, env)
    for occ in from_env:
        opts.apply(occ)
    for occ in cli:
        if occ.spec.key not in SBATCH_EARLY:
            opts.apply(occ)

    command = SbatchCommand(
        None,
        parsable=bool(opts.get("parsable")),
        test_only=bool(opts.get("test_only")),
        quiet=bool(first.get("quiet")),
        verbose=opts.verbose,
        script_args=args[1:],
        warnings=[*directives.warnings, *env_warnings],
        ignored=opts.ignored,
        wait=bool(opts.get("wait")),
    )
    clusters = opts.get("clusters") or opts.get("cluster")
    if isinstance(clusters, str) and clusters:
        command.cluster = clusters.split(",")[0]
    command.fields = _finish(opts, script, command, env, cwd, hostname, umask)
    return command


def _hosts(text: str, cwd: str) -> list[str]:
    """A hostlist expression, or (if it contains ``/``) a file of names."""
    if "/" in text:
        try:
            with open(os.path.join(cwd, text), encoding="utf-8") as handle:
                text = ",".join(handle.read().split())
        except OSError:
            raise sbatch_error(f"Unable to open node list file {text}") from None
    try:
        return hostlist.expand(text)
    except ValueError:
        raise sbatch_error("Batch job submission failed: Invalid node name specified") from None


def gpu_fields(opts: Options) -> dict[str, object]:
    texts = [opts.get(k) for k in ("gres", "gpus_per_node", "gpus")]
    try:
        return resources.gpu_fields(*(t if isinstance(t, str) else None for t in texts))
    except ValueError as exc:
        raise sbatch_error(str(exc)) from None


def task_geometry(opts: Options, cwd: str, warnings: list[str]) -> dict[str, object]:
    """Node and task counts after sbatch's adjustments (see the docstring)."""
    get = opts.get
    exc_nodes = _hosts(str(get("exclude")), cwd) if get("exclude") else []
    req_nodes = list(dict.fromkeys(_hosts(str(get("nodelist")), cwd))) if get("nodelist") else []
    nodes = get("nodes")
    low, high = nodes if isinstance(nodes, tuple) else (None, None)
    if req_nodes:  # the named hosts are all needed
        low = max(len(req_nodes), low or 0)
    per_node, ntasks = get("ntasks_per_node"), get("ntasks")
    if isinstance(per_node, int) and ntasks is None and (high is None or low == high):
        ntasks = (low or 1) * per_node
    if low is not None and high is not None and low > high:
        raise sbatch_error(f"invalid number of nodes (-N {low}-{high})")
    if isinstance(ntasks, int) and low is not None:
        if high is not None and ntasks < high:
            high = ntasks
        if ntasks < low:
            warnings.append(
                f"{PROG}: Warning: can't run {ntasks} processes on {low} nodes, "
                f"setting nnodes to {ntasks}"
            )
            low = high = ntasks
            req_nodes = req_nodes[:ntasks]
    return {
        "nodes_min": low,
        "nodes_max": high,
        "ntasks": ntasks,
        "ntasks_per_node": per_node,
        "req_nodes": req_nodes,
        "exc_nodes": exc_nodes,
    }


def echo_env(opts: Options, ntasks: object, env: Mapping[str, str]) -> dict[str, str]:
    """The SLURM_* variables Slurm's batch environment echoes from options."""
    get = opts.get
    echo = {
        var: str(get(key))
        for key, var in (
            ("cpus_per_task", "SLURM_CPUS_PER_TASK"),
            ("ntasks_per_node", "SLURM_NTASKS_PER_NODE"),
            ("gpus", "SLURM_GPUS"),
            ("gpus_per_node", "SLURM_GPUS_PER_NODE"),
            ("mem_per_gpu", "SLURM_MEM_PER_GPU"),
        )
        if get(key) is not None
    }
    if ntasks is not None:
        echo["SLURM_NTASKS"] = echo["SLURM_NPROCS"] = str(ntasks)
    if get("open_mode") is not None:
        echo["SLURM_OPEN_MODE"] = "a" if get("open_mode") == "append" else "t"
    export = get("export")
    if isinstance(export, str) and export.upper() != "ALL":
        echo["SLURM_EXPORT_ENV"] = env.get("SLURM_EXPORT_ENV", export)
    return echo


# option key -> JobSubmit field, copied when given
COPIED = {
    "partition": "partition",
    "account": "account",
    "qos": "qos",
    "output": "std_out",
    "error": "std_err",
    "input": "std_in",
    "comment": "comment",
    "constraint": "constraint",
    "cpus_per_task": "cpus_per_task",
    "mem": "mem_per_node",
    "mem_per_cpu": "mem_per_cpu",
    "mem_per_gpu": "mem_per_gpu",
    "time": "time_limit",
    "nice": "nice",
    "requeue": "requeue",
    "open_mode": "open_mode",
    "array": "array",  # checked by the controller against MaxArraySize (slurmlite.arrays)
    "begin": "begin_time",  # also an allocation's: it waits as a batch job would
    "dependency": "dependency",
    "mail_type": "mail_type",  # canonical form (slurmlite.mailtype); the controller sends
    "mail_user": "mail_user",  # None: the submitting user
}


def _finish(
    opts: Options,
    script: BatchScript,
    command: SbatchCommand,
    env: Mapping[str, str],
    cwd: str,
    hostname: str,
    umask: int | None,
) -> dict[str, Any]:
    """The checks sbatch makes after the passes, then the request itself."""
    check_memory(opts)
    if command.quiet and command.verbose:
        raise sbatch_error("don't specify both --verbose (-v) and --quiet (-Q)")
    geometry = task_geometry(opts, cwd, command.warnings)
    gpu = gpu_fields(opts)
    if script.size > MAX_SCRIPT_BYTES:
        raise sbatch_error(TOO_LONG)
    get = opts.get
    export = str(get("export", "ALL"))
    environment, export_warnings = resources.export_environment(export, env)
    try:
        check_environment(environment)
    except InputLimitError as exc:
        raise sbatch_error(str(exc), TOO_LONG) from None
    command.warnings.extend(f"{PROG}: error: {w}" for w in export_warnings)
    submit: dict[str, Any] = dict(
        script=script.wire[0],
        name=str(get("job_name") or script.default_name),
        work_dir=str(get("chdir") or cwd),
        submit_dir=cwd,
        submit_host=hostname,
        environment=environment,
        export=export,
        time_unlimited="time" in opts.values and get("time") is None,
        hold=bool(get("hold")),
        exclusive=bool(get("exclusive")),
        test_only=command.test_only,
        command=script.command,
        umask=f"{umask:04o}" if umask is not None else None,
        echo_env=echo_env(opts, geometry["ntasks"], env),
        **geometry,
        **gpu,
    )
    if script.wire[1] is not None:  # not UTF-8: the bytes in base64
        submit["script_encoding"] = script.wire[1]
    for key, attr in COPIED.items():
        if get(key) is not None:
            submit[attr] = get(key)
    if command.script_args:  # sbatch job.sh a b: the script runs as "job.sh a b"
        submit["script_args"] = list(command.script_args)
    if get("kill_on_invalid_dep") is not None:
        submit["kill_invalid_dep"] = get("kill_on_invalid_dep")
    warning = get("signal")
    if isinstance(warning, tuple):  # --signal=[B:]SIG[@secs]
        submit["warn_signal"], submit["warn_time"], flags = warning
        submit["warn_batch"] = "B" in flags
    return submit
