"""srun's and salloc's requests: command line + environment -> what to ask for.

:func:`build_srun` and :func:`build_salloc` do what the real commands do
before they talk to the controller, with sbatch's machinery
(``slurmlite.sbatch_values``: the same value parsers and memory checks;
``slurmlite.sbatch_request``: node and task arithmetic, GPU fields; error
texts renamed to the command):

1. getopt over the table of ``slurmlite.srun_options`` up to the first word
   that is not an option (the command and its arguments);
   ``--help/--usage/--version`` answer at once.
2. Input variables, then the command line (later wins).  Inside an
   allocation (``--jobid`` or ``SLURM_JOB_ID``) some of srun's input
   variables are the allocation's own output, and Slurm's srun does not
   take them as requests for the step: ``SLURM_JOB_NAME`` (the batch job's
   name is not the step's), the node count, the GPU and memory echoes; and
   ``SLURM_NTASKS`` is dropped when the command line shapes the step with
   ``-N`` or ``--ntasks-per-node`` but no ``-n``.  So in
   ``sbatch -N2 --ntasks-per-node=2`` a bare ``srun cmd`` runs 4 tasks and
   ``srun -N1 cmd`` one.
3. The result: ``step`` (the fields of a ``StepRequest`` but the
   environment, which needs the allocation: :func:`step_environment`) and,
   outside an allocation or for salloc, ``submit`` (the fields of a
   ``JobSubmit`` with ``allocation=True``, no script).

I/O modes of ``-o/-e/-i`` (srun(1)): ``all`` (the default: streamed to and
from srun), ``none`` (``/dev/null``), a task id (only that task's stream),
anything else a file-name pattern that the node opens (spec §6.3).  Without
``-e``, stderr goes where ``-o`` sends stdout.

Worked example: ``srun -l -n4 -o none -e 2 hostname`` -> ``step["ntasks"] ==
4``, ``step["std_out"] == "/dev/null"`` (no stdout at all), ``step["std_err"]
== ""`` with ``err_task == 2`` (stderr streamed, task 2's only), ``label``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from slurmlite import resources
from slurmlite.errors import CommandLineError
from slurmlite.getopt import Getopt, Occurrence, env_occurrences
from slurmlite.sbatch_request import COPIED, echo_env, gpu_fields, task_geometry
from slurmlite.sbatch_values import Options, check_memory
from slurmlite.srun_options import SALLOC, SRUN

TYPE_CHECKING = False  # importing typing costs a command ~3 ms
if TYPE_CHECKING:
    from typing import Any

    from slurmlite.getopt import OptionTable

# srun input variables that, inside an allocation, describe the allocation itself
_ALLOCATION_ECHOES = frozenset(
    {
        "SLURM_JOB_NAME",
        "SLURM_JOB_NUM_NODES",
        "SLURM_NNODES",
        "SLURM_GPUS",
        "SLURM_GPUS_PER_NODE",
        "SLURM_MEM_PER_NODE",
        "SLURM_MEM_PER_CPU",
        "SLURM_MEM_PER_GPU",
    }
)
_STEP_IO = ("output", "error", "input", "open_mode")  # never part of an allocation request
_DISTRIBUTIONS = ("block", "cyclic")


class SrunCommand:
    """What srun (or salloc) should do; see the module docstring.

    ``request``: ``help``/``usage``/``version`` (nothing else is set).
    ``argv``: the command.  ``job_id``: the existing allocation (srun inside
    one) or None.  ``out_task``/``err_task``: stream only that task's
    stdout/stderr.  ``read_stdin``: srun forwards its stdin.  ``wait_s``:
    ``-W`` seconds (0: none).  ``export``: the ``--export`` text.
    """

    def __init__(self, prog: str, request: str | None = None) -> None:
        self.prog, self.request = prog, request
        self.argv: list[str] = []
        self.job_id: int | None = None
        self.step: dict[str, Any] = {}
        self.submit: dict[str, Any] | None = None
        self.out_task: int | None = None
        self.err_task: int | None = None
        self.read_stdin = True
        self.pty = self.label = self.unbuffered = False
        self.quit_on_interrupt = self.disable_status = self.kill_on_bad_exit = False
        self.wait_s = 0
        self.quiet = False
        self.verbose = 0
        self.export = "ALL"
        self.warnings: list[str] = []
        self.ignored: list[str] = []


# how each command says a submission was refused: for a value it cannot send (here) and
# for the controller's refusal (cli.allocation)
REFUSED = {
    "srun": "Unable to allocate resources",
    "salloc": "Job submit/allocate failed",
}


def _retitle(line: str, prog: str) -> str:
    """sbatch's helpers speak as ``sbatch:``; say ``srun:``/``salloc:`` instead, and
    a refused submission in the command's own words (``--dependency=bogus``:
    ``srun: error: Unable to allocate resources: Job dependency problem``)."""
    if not line.startswith("sbatch:"):
        return line
    refused = "sbatch: error: Batch job submission failed: "
    if line.startswith(refused) and prog in REFUSED:
        return f"{prog}: error: {REFUSED[prog]}: {line[len(refused) :]}"
    return f"{prog}:{line[7:]}"


def _retitled(exc: CommandLineError, prog: str) -> CommandLineError:
    return CommandLineError([_retitle(line, prog) for line in exc.lines], exc.exit_code)


def _error(prog: str, text: str, code: int = 1) -> CommandLineError:
    return CommandLineError([f"{prog}: error: {text}"], code)


def _count(prog: str, text: object, option: str) -> int:
    """A non-negative integer option value (``Invalid numeric value`` otherwise, exit 1)."""
    value = str(text).strip()
    if not value.isdigit():
        raise _error(prog, f'Invalid numeric value "{text}" for {option}.')
    return int(value)


def io_mode(text: str | None) -> tuple[str, int | None]:
    """``-o/-e/-i`` value -> (mode, task): ``all``, ``none``, ``task`` or ``file``."""
    if text is None or text.lower() == "all":
        return "all", None
    if text.lower() == "none":
        return "none", None
    if text.isdigit():
        return "task", int(text)
    return "file", None


def _parse(
    table: OptionTable, argv: list[str], env: Mapping[str, str], cwd: str
) -> tuple[SrunCommand, Options, list[Occurrence]]:
    """getopt + variables, folded with sbatch's rules (early return for --help etc.)."""
    prog = table.prog
    command = SrunCommand(prog)
    getopt = Getopt(table, argv)
    cli: list[Occurrence] = []
    try:
        for occ in getopt:
            if occ.spec.key in ("help", "usage", "version"):
                return SrunCommand(prog, occ.spec.key), Options(cwd), []
            cli.append(occ)
    except CommandLineError as exc:
        raise _retitled(exc, prog) from None
    command.argv = getopt.positionals
    cli_keys = {o.spec.key for o in cli}
    from_env, command.warnings = env_occurrences(table, env, cli_keys)
    jobid = next((o.value for o in reversed(cli) if o.spec.key == "jobid"), None)
    if prog == "srun" and not jobid:
        jobid = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if jobid:
        command.job_id = _count(prog, jobid, "--jobid")
        shaped = cli_keys & {"nodes", "ntasks_per_node"} and "ntasks" not in cli_keys
        from_env = [
            o
            for o in from_env
            if o.written not in _ALLOCATION_ECHOES and not (shaped and o.spec.key == "ntasks")
        ]
    opts = Options(cwd)
    try:
        for occ in [*from_env, *cli]:
            opts.apply(occ)
    except CommandLineError as exc:
        raise _retitled(exc, prog) from None
    command.verbose, command.ignored = opts.verbose, opts.ignored
    command.quiet = bool(opts.get("quiet"))
    return command, opts, cli


def _allocation(
    command: SrunCommand,
    opts: Options,
    env: Mapping[str, str],
    cwd: str,
    hostname: str,
    umask: int | None,
    name: str,
) -> dict[str, Any]:
    """The JobSubmit fields of an allocation (``allocation=True``, no script)."""
    prog = command.prog
    try:
        check_memory(opts)
        geometry = task_geometry(opts, cwd, command.warnings)
        gpu = gpu_fields(opts)
    except CommandLineError as exc:
        raise _retitled(exc, prog) from None
    command.warnings[:] = [_retitle(line, prog) for line in command.warnings]
    per_task = opts.get("gpus_per_task")
    if isinstance(per_task, str) and not gpu:  # the allocation must hold every task's GPUs
        count = _gpus(prog, per_task)
        per_node, ntasks = geometry["ntasks_per_node"], geometry["ntasks"]
        if isinstance(per_node, int):
            gpu = {
                "gpus_per_node": count * per_node,
                "tres_per_node": f"gres:gpu:{count * per_node}",
            }
        else:
            total = count * (ntasks if isinstance(ntasks, int) else 1)
            gpu = {"gpus_total": total, "tres_per_job": f"gres:gpu:{total}"}
    environment, export_warnings = resources.export_environment(command.export, env)
    command.warnings.extend(f"{prog}: error: {w}" for w in export_warnings)
    submit: dict[str, Any] = dict(
        script="",
        allocation=True,
        name=name,
        work_dir=str(opts.get("chdir") or cwd),
        submit_dir=cwd,
        submit_host=hostname,
        environment=environment,
        export=command.export,
        time_unlimited="time" in opts.values and opts.get("time") is None,
        exclusive=bool(opts.get("exclusive")),
        umask=f"{umask:04o}" if umask is not None else None,
        echo_env=echo_env(opts, geometry["ntasks"], env),
        **geometry,
        **gpu,
    )
    for key, attr in COPIED.items():
        if key not in _STEP_IO and opts.get(key) is not None:
            submit[attr] = opts.get(key)
    return submit


def _gpus(prog: str, text: str) -> int:
    try:
        return resources.parse_gpus(text).count
    except ValueError as exc:
        raise _error(prog, str(exc)) from None


def _step_gpus(prog: str, opts: Options) -> dict[str, int | None]:
    per_node = opts.get("gpus_per_node")
    gres = opts.get("gres")
    count = None
    if isinstance(per_node, str):
        count = _gpus(prog, per_node)
    elif isinstance(gres, str) and gres:
        try:
            parsed = resources.parse_gres(gres)
        except ValueError as exc:
            raise _error(prog, str(exc)) from None
        count = parsed.count if parsed is not None else 0
    per_task = opts.get("gpus_per_task")
    return {
        "gpus_per_node": count,
        "gpus_per_task": _gpus(prog, per_task) if isinstance(per_task, str) else None,
    }


def _io(command: SrunCommand, opts: Options) -> dict[str, Any]:
    """The step's std_out/std_err/std_in/stdin_task and srun's stream filters."""
    out = opts.get("output")
    err = opts.get("error", out)
    out_mode, command.out_task = io_mode(out if isinstance(out, str) else None)
    err_mode, command.err_task = io_mode(err if isinstance(err, str) else None)
    in_text = opts.get("input")
    in_mode, in_task = io_mode(in_text if isinstance(in_text, str) else None)
    command.read_stdin = in_mode in ("all", "task")

    def target(mode: str, text: object) -> str:
        return "/dev/null" if mode == "none" else str(text) if mode == "file" else ""

    return {
        "std_out": target(out_mode, out),
        "std_err": target(err_mode, err),
        "std_in": target(in_mode, in_text),
        "stdin_task": in_task,
    }


def _step(command: SrunCommand, opts: Options, cwd: str, cli_keys: set[str]) -> dict[str, Any]:
    """The StepRequest fields but ``environment``."""
    prog, get = command.prog, opts.get
    distribution = str(get("distribution") or "block").lower()
    for separator in ":,=":
        distribution = distribution.split(separator)[0]
    if distribution not in _DISTRIBUTIONS:
        if distribution in ("plane", "arbitrary", "*"):
            raise _error(prog, f"--distribution={distribution} is not supported yet")
        raise _error(prog, "Invalid --distribution specification", 255)
    kill = get("kill_on_bad_exit")
    command.kill_on_bad_exit = kill is True or (kill is not None and _count(prog, kill, "-K") != 0)
    command.wait_s = _count(prog, get("wait"), "--wait") if get("wait") is not None else 0
    command.pty, command.label = bool(get("pty")), bool(get("label")) and not get("pty")
    command.unbuffered = bool(get("unbuffered")) or command.pty
    command.quit_on_interrupt = bool(get("quit_on_interrupt"))
    command.disable_status = bool(get("disable_status"))
    nodes = get("nodes")
    nodelist = get("nodelist")
    exclude = get("exclude")
    step: dict[str, Any] = dict(
        argv=command.argv,
        work_dir=str(get("chdir") or cwd),
        name=str(get("job_name") or os.path.basename(command.argv[0])),
        ntasks=get("ntasks"),
        nodes=nodes[0] if isinstance(nodes, tuple) else None,
        ntasks_per_node=get("ntasks_per_node"),
        cpus_per_task=get("cpus_per_task") or 1,
        mem_per_node=get("mem") or None,  # --mem=0 (whole node) is the job's share here
        distribution=distribution,
        nodelist=_hostnames(prog, nodelist) if isinstance(nodelist, str) else [],
        exclude=_hostnames(prog, exclude) if isinstance(exclude, str) else [],
        overlap=bool(get("overlap")),
        label=command.label,
        unbuffered=command.unbuffered,
        pty=command.pty,
        kill_on_bad_exit=command.kill_on_bad_exit,
        time_limit=get("time"),
        **_step_gpus(prog, opts),
        **_io(command, opts),
    )
    mpi = get("mpi")
    if isinstance(mpi, str) and mpi.lower() != "none" and "mpi" in cli_keys:
        command.warnings.append(f"{prog}: warning: --mpi={mpi} ignored: tasks start without MPI")
    return step


def _hostnames(prog: str, text: str) -> list[str]:
    from slurmlite import hostlist

    try:
        return hostlist.expand(text)
    except ValueError:
        raise _error(prog, "Invalid node name specified") from None


def build_srun(
    argv: list[str],
    env: Mapping[str, str],
    cwd: str,
    hostname: str,
    umask: int | None = None,
) -> SrunCommand:
    """``srun ARGS`` -> :class:`SrunCommand` (raises ``CommandLineError``)."""
    command, opts, cli = _parse(SRUN, argv, env, cwd)
    if command.request:
        return command
    if not command.argv:
        raise CommandLineError(["srun: fatal: No command given to execute."], 1)
    command.export = str(opts.get("export") or "ALL")
    command.step = _step(command, opts, cwd, {o.spec.key for o in cli})
    if command.job_id is None:
        command.submit = _allocation(command, opts, env, cwd, hostname, umask, command.step["name"])
    return command


def build_salloc(
    argv: list[str],
    env: Mapping[str, str],
    cwd: str,
    hostname: str,
    umask: int | None = None,
) -> SrunCommand:
    """``salloc ARGS [command]`` -> :class:`SrunCommand`; no command: the user's shell."""
    command, opts, _cli = _parse(SALLOC, argv, env, cwd)
    if command.request:
        return command
    if not command.argv:
        command.argv = [env.get("SHELL") or "/bin/sh"]
    name = str(opts.get("job_name") or os.path.basename(command.argv[0]))
    command.submit = _allocation(command, opts, env, cwd, hostname, umask, name)
    return command
