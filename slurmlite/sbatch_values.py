"""sbatch's option values: how each option's text becomes a checked value.

:class:`Options` collects what one pass over sbatch's inputs sets (command
line, ``#SBATCH`` directives, ``SBATCH_*`` variables; see
``slurmlite.sbatch_request`` for the passes and their order).  Each
occurrence goes through the parser of its key, so a bad value fails where
it is written, with Slurm's text and exit code:

* counts (``--ntasks``, ``--cpus-per-task``, ...): ``Invalid numeric value
  "x" for --ntasks.``, exit 1;
* sizes, times and modes (``--mem``, ``--time``, ``--open-mode``, ...):
  ``Invalid --time specification``, exit 255;
* ``--exclusive``, ``--gres``, ``--signal``, ``--dependency``,
  ``--mail-type`` have their own checks (``--mail-type`` adds up when
  repeated, as in Slurm); anything else is kept as text (True for a flag).

Repeated options: the last one wins (each pass overwrites), except the
``SBATCH_*`` flag variables that switch a flag off (``occ.reset``).

:func:`check_memory` then applies Slurm's rule for the memory options:
at most one of ``--mem``, ``--mem-per-cpu`` and ``--mem-per-gpu`` from the
script and command line, and one given there silences those from the
environment.  srun and salloc (``slurmlite.srun_request``) reuse all of this.

Example: ``sbatch --mem=4G --mem-per-cpu=1G`` fails with ``sbatch: fatal:
--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.`` (exit 1),
while ``SBATCH_MEM_PER_CPU=1G sbatch --mem=4G`` asks for 4096 MiB per node.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from slurmlite import mailtype, resources
from slurmlite.batchscript import PROG, SbatchError, sbatch_error
from slurmlite.dependency import DependencyError, format_deps
from slurmlite.dependency import parse as parse_deps
from slurmlite.getopt import IGNORED, Occurrence, refuse_unsupported
from slurmlite.timefmt import parse_datetime

_MEM_KEYS = ("mem", "mem_per_cpu", "mem_per_gpu")


class Options:
    """Option values as the passes set them (None: not given)."""

    def __init__(self, cwd: str, verbose: int = 0) -> None:
        self.cwd = cwd
        self.values: dict[str, object] = {}
        self.mem_source: dict[str, str] = {}  # "cli" or "env"
        self.verbose = verbose
        self.ignored: list[str] = []

    def get(self, key: str, default: object = None) -> object:
        return self.values.get(key, default)

    def apply(self, occ: Occurrence) -> None:
        refuse_unsupported(PROG, occ)
        key, value = occ.spec.key, occ.value
        if occ.spec.status == IGNORED and occ.spec.name not in self.ignored:
            self.ignored.append(occ.spec.name)
        if occ.reset:  # an SBATCH_* flag variable switched off
            self.values.pop("requeue" if key == "no_requeue" else key, None)
            return
        if key == "verbose":
            self.verbose += 1
        elif key in _PARSERS:
            self.values[key] = _PARSERS[key](value, self)
        elif key == "no_requeue":
            self.values["requeue"] = False
        elif key == "requeue":
            self.values["requeue"] = True
        else:  # plain text, or True for a flag
            self.values[key] = True if value is None else value
        if key in _MEM_KEYS:
            self.mem_source[key] = "env" if occ.source == "env" else "cli"


_Parser = Callable[[str | None, "Options"], object]


def _via(parse: Callable[[str], object], message: str = "", code: int = 255) -> _Parser:
    """Run a resources parser; its ValueError becomes Slurm's error line."""

    def run(value: str | None, _opts: Options) -> object:
        try:
            return parse(value or "")
        except ValueError as exc:
            raise sbatch_error(message or str(exc), code=code) from None

    return run


def _exclusive(value: str | None, _opts: Options) -> bool:
    word = (value or "exclusive").lower()
    if word in ("exclusive", "oversubscribe"):
        return word == "exclusive"
    if word in ("user", "mcs", "topo"):
        raise sbatch_error(f"--exclusive={value} is not supported yet")
    raise sbatch_error("Invalid --exclusive specification", code=255)


def _gres(value: str | None, _opts: Options) -> str:
    if (value or "").lower() in ("help", "list"):
        raise sbatch_error("--gres=help is not supported yet")
    return value or ""


def _signal(value: str | None, _opts: Options) -> tuple[int, int, str]:
    try:
        number, seconds, flags = resources.parse_signal_warning(value or "")
    except ValueError as exc:
        raise sbatch_error(str(exc), code=255) from None
    if "R" in flags:  # a warning before a reservation ends: slurmlite has no reservations
        raise sbatch_error("--signal=R: is not supported yet")
    return number, seconds, flags


def _dependency(value: str | None, _opts: Options) -> str:
    try:
        return format_deps(parse_deps(value or "")) or ""
    except DependencyError:
        raise sbatch_error("Batch job submission failed: Job dependency problem") from None


def _mail_type(value: str | None, opts: Options) -> str:
    """``--mail-type``: repeated options add up, as in Slurm (``slurmlite.mailtype``)."""
    try:
        parsed = mailtype.parse(value or "")
    except ValueError as exc:
        raise sbatch_error(str(exc), code=255) from None
    earlier = opts.get("mail_type")
    return mailtype.combine(earlier if isinstance(earlier, str) else None, parsed)


def _yes_no(value: str) -> bool:
    word = value.lower()
    if word not in ("yes", "no"):
        raise ValueError(word)
    return word == "yes"


_PARSERS: dict[str, _Parser] = {
    "chdir": lambda v, opts: os.path.normpath(os.path.join(opts.cwd, v or "")),
    "cpus_per_task": _via(lambda v: resources.parse_positive_int(v, "--cpus-per-task"), code=1),
    "exclusive": _exclusive,
    "gres": _gres,
    "mem": _via(resources.parse_mem, "Invalid --mem specification"),
    "mem_per_cpu": _via(resources.parse_mem, "Invalid --mem-per-cpu specification"),
    "mem_per_gpu": _via(resources.parse_mem, "Invalid --mem-per-gpu specification"),
    "nice": lambda v, opts: _via(resources.parse_nice)("100" if v is None else v, opts),
    "nodes": _via(resources.parse_node_count),
    "ntasks": _via(lambda v: resources.parse_positive_int(v, "--ntasks"), code=1),
    "ntasks_per_node": _via(lambda v: resources.parse_positive_int(v, "--ntasks-per-node"), code=1),
    "open_mode": _via(resources.parse_open_mode, "Invalid --open-mode specification"),
    "signal": _signal,
    "begin": _via(lambda v: parse_datetime(v, time.time(), past=False), code=1),
    "dependency": _dependency,
    "kill_on_invalid_dep": _via(_yes_no, "Invalid --kill-on-invalid-dep specification"),
    "mail_type": _mail_type,
    "time": _via(resources.parse_time_limit, "Invalid --time specification"),
}


def _fatal(text: str) -> SbatchError:
    return SbatchError([f"{PROG}: fatal: {text}"], 1)


def check_memory(opts: Options) -> None:
    """At most one memory option from the script/command line; env loses."""
    given = [k for k in _MEM_KEYS if k in opts.values and opts.mem_source.get(k) == "cli"]
    from_env = [k for k in _MEM_KEYS if k in opts.values and opts.mem_source.get(k) == "env"]
    if len(given) > 1:
        raise _fatal("--mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.")
    if given:
        for key in from_env:
            del opts.values[key]
    elif len(from_env) > 1:
        raise _fatal(
            "SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are mutually exclusive."
        )
