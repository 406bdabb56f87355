"""What every Slurm look-alike command shares: messages, exit codes, the client.

Slurm's commands speak in a few fixed shapes, and scripts grep for them:

* ``prog: error: <text>`` -- :func:`error` (Slurm's ``error()``);
* ``<label>: <text>`` with no program name -- :func:`perror` (Slurm's
  ``slurm_perror``), e.g. ``slurm_load_jobs error: Invalid job id specified``;
* ``slurm-wlm 22.05.8 (slurmlite 0.1.0)`` for ``--version`` (Debian's package
  name, golden ``00_sinfo_version.txt``, then which slurmlite) -- :func:`print_version`.

Commands reach the controller only through :class:`cli.client.ControllerClient`;
:func:`get_client` looks the class up at call time so tests can replace
``cli.client.ControllerClient.from_env`` with a fake.  Option parsing goes
through :func:`parse_options`, which turns ``slurmlite.getopt`` errors into
the exact lines and exit status of the real command::

    args = parse_options(SQUEUE, argv)     # may raise SystemExit(1) after
                                           # "squeue: unrecognized option ..."
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from slurmlite.errors import CommandLineError
from slurmlite.getopt import OptionTable, ParsedOptions, resolve

TYPE_CHECKING = False  # importing typing costs a command ~3 ms; annotations are
if TYPE_CHECKING:  # strings, so only type checkers need these names
    from collections.abc import Callable
    from typing import Any, NoReturn, TextIO

if TYPE_CHECKING:
    from cli.client import ControllerClient

# The Slurm words of ``--version``: Debian's package name and the dialect spoken
# (slurmlite.config.SLURM_VERSION, not imported here: it costs a command ~10 ms).
VERSION = "slurm-wlm 22.05.8"

EXIT_OK = 0
EXIT_ERROR = 1  # squeue, sinfo, scontrol, sacct...: any failure
EXIT_SBATCH_OPTION = 255  # sbatch/srun option parsing errors


def error(prog: str, message: str, stream: TextIO | None = None) -> None:
    """``prog: error: message`` on stderr."""
    print(f"{prog}: error: {message}", file=stream or sys.stderr)


def perror(label: str, message: object, stream: TextIO | None = None) -> None:
    """``label: message`` on stderr, as ``slurm_perror`` prints it."""
    print(f"{label}: {message}", file=stream or sys.stderr)


def fail(prog: str, message: str, code: int = EXIT_ERROR) -> NoReturn:
    """Print ``prog: error: message`` and leave with ``code``."""
    error(prog, message)
    raise SystemExit(code)


def reported(exc: CommandLineError) -> int:
    """A command's boundary: print the refusal's lines on stderr, give its exit status.

    Every command raises :class:`~slurmlite.errors.CommandLineError` for a bad
    command line (or anything else that ends it with lines of its own) and
    catches it only in ``main``: ``except CommandLineError as exc: return reported(exc)``.
    """
    for line in exc.lines:
        print(line, file=sys.stderr)
    return exc.exit_code


def exit_from(run: Callable[[list[str]], int], argv: Sequence[str] | None) -> NoReturn:
    """The boundary of a command whose ``run(args)`` gives its exit status.

    A :class:`~slurmlite.errors.CommandLineError` prints its lines and gives
    its status; Ctrl-C exits 1; stdout is flushed before the process exits.
    """
    try:
        code = run(argv_or_default(argv))
    except CommandLineError as exc:
        code = reported(exc)
    except KeyboardInterrupt:
        code = 1
    sys.stdout.flush()
    raise SystemExit(code)


def version_line() -> str:
    """``slurm-wlm 22.05.8 (slurmlite 0.1.0)``: what every command's ``--version``/``-V`` prints.

    One line, Slurm's words first, slurmlite's in parentheses after them: the
    tools that read a Slurm version take the second word (``split()[1]``,
    ``awk '{print $2}'``, ``cut -d' ' -f2``: torchx, spec/clients.md) or match
    ``slurm... N.N.N`` at the start of the first line, and all of them still get
    ``22.05.8``; a second line would give ``awk '{print $2}'`` two words.
    """
    from slurmlite.version import slurmlite_version  # late: reads package metadata

    return f"{VERSION} (slurmlite {slurmlite_version()})"


def print_version(stream: TextIO | None = None) -> None:
    print(version_line(), file=stream or sys.stdout)


def answered_info(opts: ParsedOptions, prog: str) -> bool:
    """``--help`` or ``--usage``, else ``--version``: print it and return True (the
    command then exits 0 without doing anything else).  The help pages are
    rendered from ``prog``'s option table by :mod:`cli.help`, imported only here."""
    if opts.flag("help") or opts.flag("usage"):
        from cli.help import show

        show(prog, "help" if opts.flag("help") else "usage")
        return True
    if opts.flag("version"):
        print_version()
        return True
    return False


def current_umask() -> int:
    """The process's umask (read by setting it, then put back): jobs inherit it."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def error_exit() -> int:
    """Exit status of sbatch/srun/salloc on a failure of their own: 1, or $SLURM_EXIT_ERROR."""
    value = os.environ.get("SLURM_EXIT_ERROR")
    return int(value) & 0xFF if value and value.lstrip("-").isdigit() else 1


def built_or_exit(build: Callable[[], Any], prog: str, dashes: str = "") -> Any:
    """The parsed command of sbatch/srun/salloc, or None when nothing is left to do.

    ``build()`` parses the command line; its ``CommandLineError`` lines are
    printed and the process exits with its status.  ``--version`` and
    ``--help``/``--usage`` print and give None; otherwise the command's
    warnings are printed and, with ``-v``, each option accepted and ignored
    (``dashes`` + name: sbatch names them bare, srun/salloc with their dashes).
    """
    try:
        cmd = build()
    except CommandLineError as e:
        sys.exit(reported(e))
    if cmd.request == "version":
        print_version()
        return None
    if cmd.request in ("help", "usage"):
        from cli.help import show  # late: only --help/--usage load the help pages

        show(prog, cmd.request)
        return None
    for line in cmd.warnings:
        print(line, file=sys.stderr)
    if cmd.verbose:
        for name in cmd.ignored:
            print(f"{prog}: option {dashes}{name} accepted and ignored", file=sys.stderr)
    return cmd


def get_client(prog: str, conf_path: str | None = None) -> ControllerClient:
    """A controller client for ``prog`` (raises ``SlurmError`` if unreachable)."""
    from cli import client  # late: keeps --help/--version fast, lets tests patch

    return client.ControllerClient.from_env(prog, conf_path)


def parse_options(
    table: OptionTable, argv: Sequence[str], env: Mapping[str, str] | None = None
) -> ParsedOptions:
    """Parse ``argv`` (no program name) with ``table``; on error print and exit.

    Warnings found on the way (bad boolean environment values) are printed.
    """
    try:
        parsed = resolve(table, argv, os.environ if env is None else env)
    except CommandLineError as exc:
        raise SystemExit(reported(exc)) from None
    for line in parsed.warnings:
        print(line, file=sys.stderr)
    return parsed


def argv_or_default(argv: Sequence[str] | None) -> list[str]:
    """``main(argv)`` convention: None means the real command line."""
    return list(sys.argv[1:] if argv is None else argv)


def user_words(text: str) -> tuple[set[int], set[str]]:
    """``-u alice,1002`` -> (uids, names).  Names match as given, so a user this host's
    passwd lacks still matches by name; known names and digits also match by uid."""
    import pwd

    uids: set[int] = set()
    names: set[str] = set()
    for word in (w for w in text.split(",") if w):
        names.add(word)
        try:
            uids.add(pwd.getpwnam(word).pw_uid)
        except KeyError:
            if word.isdigit():
                uids.add(int(word))
    return uids, names


def command_lines(prompt: str, comments: bool = False):  # type: ignore[no-untyped-def]
    """Interactive mode of scontrol/sacctmgr: each typed line as shell words, until EOF
    (a newline is printed then, as Slurm's commands do); ``comments`` skips ``#`` lines."""
    import shlex

    while True:
        try:
            line = input(prompt)
        except EOFError:
            print()
            return
        if comments and line.startswith("#"):
            continue
        try:
            yield shlex.split(line)
        except ValueError:  # unbalanced quotes: plain words
            yield line.split()
