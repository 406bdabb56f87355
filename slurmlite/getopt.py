"""getopt_long for the Slurm look-alikes, plus folding options into values.

Every slurmlite command parses its arguments from one table of
:class:`OptionSpec` rows (``slurmlite.options``) with the rules of glibc's
``getopt_long``, because that is what users of real Slurm type and what
scripts rely on:

* ``--partition=debug`` and ``--partition debug`` are the same; a long option
  with an *optional* argument takes a value only with ``=``
  (``--nice 5`` is ``--nice`` followed by the word ``5``);
* any unambiguous prefix names a long option (``--part`` = ``--partition``).
  An exact name always wins; a prefix matching several *different* options is
  an error that lists them in table order.  Two rows with the same ``key`` and
  argument kind are aliases, so a prefix matching only those is fine;
* short options bundle: ``-hv`` = ``-h -v``; ``-N2`` and ``-ofmt`` carry their
  value in the same word, otherwise the next word is the value;
* ``--`` ends the options; a lone ``-`` is an ordinary word;
* *permute* tables (squeue, scancel, sacct...) accept options after
  positional words; the others (sbatch) stop at the first positional word:
  ``sbatch -p debug job.sh -p x`` gives ``-p x`` to the script.

Errors (kinds of ``slurmlite.errors.CommandLineError``) carry glibc's exact
lines, prefixed by the program name, then the command's ``Try "prog --help"
for more information`` hint when it prints one::

    sbatch: unrecognized option '--bogus-option'
    sbatch: option '--pa' is ambiguous; possibilities: '--parsable' '--partition'
    sbatch: option '--wrap' requires an argument
    sbatch: option '--parsable' doesn't allow an argument
    sbatch: invalid option -- 'Z'
    sbatch: option requires an argument -- 'J'

The second half, :func:`resolve`, is what most commands call: parse argv, add
the input environment variables of the table (command line wins), refuse
options slurmlite does not implement (``squeue: error: --json is not supported
yet``), note the ignored ones, and fold repeated options (last wins, append,
or count).  Worked example with squeue's table::

    >>> from slurmlite.options import SQUEUE
    >>> r = resolve(SQUEUE, ["-h", "--jobs=5,6", "-tR", "x"], {"SQUEUE_SORT": "i"})
    >>> r.flag("noheader"), r.get("jobs"), r.get("states"), r.get("sort"), r.positionals
    (True, '5,6', 'R', 'i', ['x'])

(``-j`` takes its value only when attached -- ``squeue -j 5`` leaves ``5`` as
a positional word, which squeue then reads as the job list.)

Facts from glibc ``posix/getopt.c`` and Slurm 22.05's option tables, written
in our own words.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence

from slurmlite.errors import CommandLineError

TYPE_CHECKING = False  # importing typing costs a command ~3 ms; annotations are
if TYPE_CHECKING:  # strings, so only type checkers need these names
    from typing import Any


# argument kinds
NO_ARG = "none"
REQUIRED = "required"
OPTIONAL = "optional"

# what slurmlite does with an option
SUPPORTED = "supported"
IGNORED = "ignored"  # accepted, has no effect here (mail, wckey, federation...)
UNSUPPORTED = "unsupported"  # a real Slurm option slurmlite refuses for now

# how an environment variable switches a flag (an option without argument)
ENV_PRESENCE = "presence"  # set at all -> on
ENV_SLURM_BOOL = "slurm"  # "", "yes" or a non-zero number -> on; else reset
ENV_TRUE_FALSE = "truefalse"  # true/T -> on, false/F -> off, else a warning


class OptionSpec:
    """One row of a command's option table.

    ``key`` names the destination; rows sharing ``key`` and ``arg`` are
    aliases.  ``env`` lists input variables (later ones win), skipped when an
    option in ``env_unless`` was given.  ``repeat``: ``last`` (last one wins),
    ``append`` (a list of every value) or ``count`` (``-vvv`` = 3).

    (Plain classes, not dataclasses, throughout this module: every command
    imports it, and ``dataclasses`` alone costs a command ~10 ms of start-up.)
    """

    __slots__ = ("key", "long", "short", "arg", "status", "env", "env_unless", "env_flag", "repeat")

    def __init__(
        self,
        key: str,
        long: tuple[str, ...] = (),
        short: str = "",
        arg: str = NO_ARG,
        status: str = SUPPORTED,
        env: tuple[str, ...] = (),
        env_unless: tuple[str, ...] = (),
        env_flag: str = ENV_PRESENCE,
        repeat: str = "last",
    ) -> None:
        self.key, self.long, self.short, self.arg = key, long, short, arg
        self.status, self.env, self.env_unless = status, env, env_unless
        self.env_flag, self.repeat = env_flag, repeat

    def __repr__(self) -> str:
        return f"OptionSpec({self.name}, key={self.key!r}, arg={self.arg!r})"

    @property
    def name(self) -> str:
        """How messages name it: ``--partition`` (or ``-U`` if short only).

        Among aliases, the one spelled like the key: ``--clusters``.
        """
        if not self.long:
            return f"-{self.short}"
        preferred = self.key.replace("_", "-")
        return f"--{preferred if preferred in self.long else self.long[0]}"


class OptionTable:
    """A command's options in its own order, and how its getopt behaves.

    ``permute=False``: stop at the first positional word (sbatch);
    ``try_help``: print 'Try "prog --help" ...' after getopt errors;
    ``error_exit``: exit status for getopt errors (sbatch: 255).
    """

    def __init__(
        self,
        prog: str,
        specs: tuple[OptionSpec, ...],
        permute: bool = True,
        try_help: bool = True,
        error_exit: int = 1,
    ) -> None:
        self.prog, self.specs = prog, specs
        self.permute, self.try_help, self.error_exit = permute, try_help, error_exit
        shorts = [s.short for s in specs if s.short]
        longs = [n for s in specs for n in s.long]
        if len(set(shorts)) != len(shorts) or len(set(longs)) != len(longs):
            raise ValueError(f"{prog}: duplicate option letter or name in table")
        self.long_names: list[tuple[str, OptionSpec]] = [(n, s) for s in specs for n in s.long]
        self.shorts: dict[str, OptionSpec] = {s.short: s for s in specs if s.short}

    def spec(self, key: str) -> OptionSpec:
        """The first row with ``key`` (KeyError if none)."""
        for s in self.specs:
            if s.key == key:
                return s
        raise KeyError(key)


class OptionError(CommandLineError):
    """getopt refused the command line (glibc's message + the help hint)."""


class UnsupportedOption(CommandLineError):
    """A real Slurm option slurmlite does not implement yet (exit 1)."""


class Occurrence:
    """One option found: its row, value (None: no value), where it came from.

    ``source`` is ``cli``, ``env`` or ``directive``; ``written`` is the text
    as given (``--part``, ``-p``) or the variable name for ``env``; ``reset``
    is an environment flag switched off (``SBATCH_REQUEUE=no``).
    """

    __slots__ = ("spec", "value", "source", "written", "reset")

    def __init__(
        self,
        spec: OptionSpec,
        value: str | None,
        source: str = "cli",
        written: str = "",
        reset: bool = False,
    ) -> None:
        self.spec, self.value, self.source = spec, value, source
        self.written, self.reset = written, reset

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Occurrence) and all(
            getattr(self, k) == getattr(other, k) for k in self.__slots__
        )

    def __repr__(self) -> str:
        return f"Occurrence({self.spec.name}, {self.value!r}, {self.source!r}, {self.written!r})"


class Getopt:
    """Iterate the options of ``args`` (no program name) in order.

    Errors are raised when the bad word is reached, so a caller acting on each
    option as it comes (``sbatch --version --bogus`` prints the version)
    behaves like a C loop around ``getopt_long``.  After iteration,
    ``positionals`` holds the other words (for a stop-at-first table: the
    first positional and everything after it).
    """

    def __init__(self, table: OptionTable, args: Sequence[str], source: str = "cli") -> None:
        self.table = table
        self.args = list(args)
        self.source = source
        self.positionals: list[str] = []

    def _error(self, message: str) -> OptionError:
        prog = self.table.prog
        lines = [f"{prog}: {message}"]
        if self.table.try_help:
            lines.append(f'Try "{prog} --help" for more information')
        return OptionError(lines, self.table.error_exit)

    def __iter__(self) -> Iterator[Occurrence]:
        args, i = self.args, 0
        while i < len(args):
            word = args[i]
            if word == "--":
                self.positionals.extend(args[i + 1 :])
                return
            if not word.startswith("-") or word == "-":
                if not self.table.permute:
                    self.positionals.extend(args[i:])
                    return
                self.positionals.append(word)
                i += 1
                continue
            if word.startswith("--"):
                occurrence, i = self._long(word, i)
                yield occurrence
                continue
            for occurrence, consumed in self._shorts(word, i):
                i = consumed
                yield occurrence
            i += 1

    def _long(self, word: str, i: int) -> tuple[Occurrence, int]:
        body = word[2:]
        name, eq, value = body.partition("=")
        exact = [(n, s) for n, s in self.table.long_names if n == name]
        matches = exact or [(n, s) for n, s in self.table.long_names if n.startswith(name)]
        if not matches:
            raise self._error(f"unrecognized option '{word}'")
        first_name, spec = matches[0]
        ident = (spec.key, spec.arg)
        if any((s.key, s.arg) != ident for _, s in matches):
            # glibc lists the first match and every match that differs from it
            listed = [n for n, s in matches if n == first_name or (s.key, s.arg) != ident]
            names = " ".join(f"'--{n}'" for n in listed)
            raise self._error(f"option '{word}' is ambiguous; possibilities: {names}")
        if eq:
            if spec.arg == NO_ARG:
                raise self._error(f"option '--{first_name}' doesn't allow an argument")
            return Occurrence(spec, value, self.source, word), i + 1
        if spec.arg == REQUIRED:
            if i + 1 >= len(self.args):
                raise self._error(f"option '--{first_name}' requires an argument")
            return Occurrence(spec, self.args[i + 1], self.source, word), i + 2
        return Occurrence(spec, None, self.source, word), i + 1

    def _shorts(self, word: str, i: int) -> Iterator[tuple[Occurrence, int]]:
        j = 1
        while j < len(word):
            letter = word[j]
            spec = self.table.shorts.get(letter)
            if spec is None:
                raise self._error(f"invalid option -- '{letter}'")
            written = f"-{letter}"
            if spec.arg == NO_ARG:
                yield Occurrence(spec, None, self.source, written), i
                j += 1
                continue
            rest = word[j + 1 :]
            if rest or spec.arg == OPTIONAL:
                yield Occurrence(spec, rest or None, self.source, written), i
            elif i + 1 < len(self.args):
                yield Occurrence(spec, self.args[i + 1], self.source, written), i + 1
            else:
                raise self._error(f"option requires an argument -- '{letter}'")
            return


def env_flag_state(spec: OptionSpec, value: str) -> bool | None:
    """Does the variable switch the flag on (True), off (False)? None: invalid."""
    if spec.env_flag == ENV_PRESENCE:
        return True
    if spec.env_flag == ENV_TRUE_FALSE:
        lowered = value.lower()
        return True if lowered in ("true", "t") else False if lowered in ("false", "f") else None
    if value == "" or value.lower() == "yes":
        return True
    try:
        return int(value) != 0
    except ValueError:
        return False


def env_occurrences(
    table: OptionTable, env: Mapping[str, str], cli_keys: set[str] | frozenset[str] = frozenset()
) -> tuple[list[Occurrence], list[str]]:
    """Occurrences from the table's input variables, in table order.

    A variable is skipped when an ``env_unless`` option was given (on the
    command line or by an earlier variable), and for ``append`` options the
    command line replaces it.  Returns the occurrences and warning lines.
    """
    found: list[Occurrence] = []
    warnings: list[str] = []
    seen: set[str] = set(cli_keys)
    for spec in table.specs:
        for var in spec.env:
            if var not in env:
                continue
            if set(spec.env_unless) & seen:
                continue
            if spec.repeat == "append" and spec.key in cli_keys:
                continue
            raw = env[var]
            if spec.arg == NO_ARG:
                state = env_flag_state(spec, raw)
                if state is None:
                    warnings.append(f"{table.prog}: error: Unrecognized {var} value: {raw}")
                    continue
                found.append(Occurrence(spec, None, "env", var, reset=not state))
            else:
                value = None if (spec.arg == OPTIONAL and raw == "") else raw
                found.append(Occurrence(spec, value, "env", var))
            seen.add(spec.key)
    return found, warnings


def refuse_unsupported(prog: str, occurrence: Occurrence) -> None:
    """Raise :class:`UnsupportedOption` if the option is not implemented."""
    if occurrence.spec.status != UNSUPPORTED or occurrence.reset:
        return
    name = occurrence.spec.name
    if occurrence.source == "env":
        name = f"{name} (from {occurrence.written})"
    raise UnsupportedOption([f"{prog}: error: {name} is not supported yet"], 1)


class ParsedOptions:
    """Folded values: flags True, ``count`` ints, ``append`` lists, else text.

    An optional-argument option given without a value is stored as ``None``:
    test it with :meth:`has`.  ``ignored`` names options accepted without
    effect (e.g. ``["--mail-type"]``).
    """

    def __init__(
        self,
        values: dict[str, Any] | None = None,
        sources: dict[str, str] | None = None,
        positionals: builtins.list[str] | None = None,
        ignored: builtins.list[str] | None = None,
        warnings: builtins.list[str] | None = None,
    ) -> None:
        self.values = {} if values is None else values
        self.sources = {} if sources is None else sources
        self.positionals = [] if positionals is None else positionals
        self.ignored = [] if ignored is None else ignored
        self.warnings = [] if warnings is None else warnings

    def has(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def flag(self, key: str) -> bool:
        return bool(self.values.get(key, False))

    def count(self, key: str) -> int:
        return int(self.values.get(key, 0))

    def list(self, key: str) -> builtins.list[str]:
        """Every value of an ``append`` option (``[]`` if absent)."""
        return builtins.list(self.values.get(key, []))


def fold(parsed: ParsedOptions, occurrence: Occurrence) -> None:
    """Apply one occurrence to ``parsed`` following its row's ``repeat`` rule."""
    spec = occurrence.spec
    if occurrence.reset:
        parsed.values.pop(spec.key, None)
        parsed.sources.pop(spec.key, None)
        return
    if spec.status == IGNORED and spec.name not in parsed.ignored:
        parsed.ignored.append(spec.name)
    value: Any = True if spec.arg == NO_ARG else occurrence.value
    if spec.repeat == "count":
        parsed.values[spec.key] = parsed.count(spec.key) + 1
    elif spec.repeat == "append":
        parsed.values.setdefault(spec.key, []).append(value)
    else:
        parsed.values[spec.key] = value
    parsed.sources[spec.key] = occurrence.source


def resolve(table: OptionTable, args: Sequence[str], env: Mapping[str, str]) -> ParsedOptions:
    """Parse ``args`` (no program name), add input variables, refuse, fold.

    Raises :class:`OptionError` (getopt's lines, ``table.error_exit``) or
    :class:`UnsupportedOption` (exit 1).  Variables apply first so the command
    line wins.
    """
    getopt = Getopt(table, args)
    cli = list(getopt)
    from_env, warnings = env_occurrences(table, env, {o.spec.key for o in cli})
    parsed = ParsedOptions(positionals=getopt.positionals, warnings=warnings)
    for occurrence in [*from_env, *cli]:
        refuse_unsupported(table.prog, occurrence)
        fold(parsed, occurrence)
    return parsed


__all__ = [
    "NO_ARG",
    "REQUIRED",
    "OPTIONAL",
    "SUPPORTED",
    "IGNORED",
    "UNSUPPORTED",
    "OptionSpec",
    "OptionTable",
    "Occurrence",
    "Getopt",
    "CommandLineError",
    "OptionError",
    "UnsupportedOption",
    "ParsedOptions",
    "env_occurrences",
    "refuse_unsupported",
    "fold",
    "resolve",
]
