"""``#SBATCH`` lines: which lines count, and how a line splits into words.

Scanning (spec §6.2):

1. Read the script line by line from the top.
2. A line starting *in column 0* with exactly ``#SBATCH`` is a directive;
   the words after it are options.  ``#SLURM`` is accepted too, with a
   warning.  ``  #SBATCH`` (indented) and ``# SBATCH`` are plain comments.
3. Blank lines and comments (first non-blank character ``#``, ``#!``
   included) are skipped.  The first other line is a command: scanning stops
   there, so later ``#SBATCH`` lines are ignored.

Splitting one directive (after ``#SBATCH``):

* words are separated by blanks;
* single or double quotes group (the quotes are removed; the other kind of
  quote is literal inside); ``--comment="a b"`` is one word ``--comment=a b``;
* a backslash makes the next character literal (``\\"``, ``\\ ``);
* an unquoted ``#`` ends the directive (an inline comment);
* an unmatched quote or a word starting with ``:`` is fatal (exit 1);
* ``hetjob`` (heterogeneous job separator) is refused: not supported yet.

The words of all directive lines form *one* argument list, parsed exactly
like a command line (``slurmlite.sbatch_request``), so
``#SBATCH --job-name`` followed by ``#SBATCH demo`` names the job ``demo``
and a word that is not an option gives ``Invalid directive found in batch
script: <word>`` (exit 255).  Shell variables are not expanded.

Example::

    >>> scan('#!/bin/sh\\n#SBATCH -N 2 --comment="a b"  # two nodes\\n'
    ...      '\\n#SBATCH -t 5\\nhostname\\n#SBATCH -p late\\n').tokens
    ['-N', '2', '--comment=a b', '-t', '5']

Difference from Slurm: ``""`` gives an empty word (Slurm ends the line there)
and ``\\ `` keeps the blank (Slurm splits there).  Reference: Slurm 22.05
``sbatch/opt.c`` (``_opt_batch_script``, ``get_argument``), facts only.
"""

from __future__ import annotations

from slurmlite.getopt import CommandLineError

BLANKS = " \t\n\v\f\r"
SBATCH_MAGIC = "#SBATCH"
SLURM_MAGIC = "#SLURM"


class DirectiveError(CommandLineError):
    """A directive line sbatch cannot accept (lines already prefixed)."""


class Directives:
    """The option words found in ``#SBATCH`` lines, and warnings (stderr lines)."""

    def __init__(self) -> None:
        self.tokens: list[str] = []
        self.warnings: list[str] = []


def invalid_directive(word: str, prog: str = "sbatch") -> DirectiveError:
    """The error for a word in ``#SBATCH`` lines that is not an option."""
    return DirectiveError([f"{prog}: error: Invalid directive found in batch script: {word}"], 255)


def _fatal(prog: str, text: str) -> DirectiveError:
    return DirectiveError([f"{prog}: fatal: {text}"], 1)


def _is_het_separator(rest: str) -> bool:
    word = rest.lstrip(BLANKS)
    for sep in ("hetjob", "packjob"):
        if word[: len(sep)].lower() == sep and (len(word) == len(sep) or word[len(sep)] in BLANKS):
            return True
    return False


def split_directive(rest: str, where: str, line: str, prog: str = "sbatch") -> list[str]:
    """Words of one directive; ``where`` is ``"<file>: line <n>"`` for errors."""
    words: list[str] = []
    pos, end = 0, len(rest)
    while True:
        while pos < end and rest[pos] in BLANKS:
            pos += 1
        if pos >= end:
            return words
        if rest[pos] == ":":
            raise _fatal(prog, f"{where}: Unexpected `:` in [{line}]")
        chars: list[str] = []
        quote, quoted, comment = "", False, False
        while pos < end:
            ch = rest[pos]
            pos += 1
            if ch == "\\":
                if pos < end:
                    chars.append(rest[pos])
                    pos += 1
            elif quote:
                if ch == quote:
                    quote = ""
                else:
                    chars.append(ch)
            elif ch in BLANKS:
                break
            elif ch in "\"'":
                quote, quoted = ch, True
            elif ch == "#":
                comment = True
                break
            else:
                chars.append(ch)
        if quote:
            raise _fatal(prog, f"{where}: Unmatched `{quote}` in [{line}]")
        if chars or quoted:
            words.append("".join(chars))
        if comment:
            return words


def scan(script: str, file: str = "stdin", prog: str = "sbatch") -> Directives:
    """Find the directive words of ``script`` (see the module docstring).

    ``file`` (the script's base name, or ``stdin``) appears in fatal errors:
    ``sbatch: fatal: job.sh: line 3: Unmatched `"` in [#SBATCH -J "x]``.
    """
    found = Directives()
    for lineno, line in enumerate(script.split("\n"), start=1):
        if line.startswith(SBATCH_MAGIC):
            rest = line[len(SBATCH_MAGIC) :]
        elif line.startswith(SLURM_MAGIC):
            rest = line[len(SLURM_MAGIC) :]
            if not found.warnings:
                found.warnings.append(
                    f"{prog}: error: #SLURM directives are deprecated: "
                    "write #SBATCH and check the options are valid for sbatch"
                )
        else:
            stripped = line.lstrip(BLANKS)
            if not stripped or stripped.startswith("#"):
                continue
            break
        if _is_het_separator(rest):
            raise DirectiveError(
                [f"{prog}: error: heterogeneous jobs (hetjob) are not supported yet"], 1
            )
        found.tokens.extend(split_directive(rest, f"{file}: line {lineno}", line, prog))
    return found
