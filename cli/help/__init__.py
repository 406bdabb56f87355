"""``--help`` and ``--usage`` of every command, rendered from its option table.

Each command keeps one :class:`~slurmlite.getopt.OptionTable` (what it
accepts); the help words -- a value name such as ``name`` or ``time``, a short
description, the group the option is listed under -- live next door in one
data module per command (``cli/help/sbatch.py`` ...), imported only when
someone asks for help, so a command's normal start-up never pays for them.

:func:`page` joins the two, so the help cannot drift from what getopt takes:

* an option appears as ``-A, --account=name`` (short flag first, the value
  form from the row's argument kind: ``--nice[=value]`` for an optional one,
  nothing for a flag), descriptions in one column, grouped as in Slurm 22.05;
* an option the command accepts without effect ends with
  ``(accepted, no effect)``; one slurmlite adds to Slurm's set with
  ``[slurmlite]``; another long name of the same option shows as
  ``(also --cluster)``;
* real Slurm options slurmlite refuses are listed by name in a last group,
  ``Slurm options not supported by slurmlite:``;
* ``--usage`` is the short synopsis: every accepted option in brackets,
  wrapped under the command's name.

A row of the table without help words, or words naming no row, is an error
(:class:`HelpMismatch`) when ``strict``; the tests render every page strictly.
"""

from __future__ import annotations

import importlib
import textwrap

from slurmlite.getopt import NO_ARG, OPTIONAL, SUPPORTED, UNSUPPORTED, OptionSpec, OptionTable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

# every command with a page; each is a data module of this package
COMMANDS = (
    "sbatch", "srun", "salloc", "squeue", "scancel", "sinfo", "sacct", "scontrol", "sprio",
    "sshare", "sacctmgr", "sreport", "seff",
)  # fmt: skip
IGNORED_MARK = "(accepted, no effect)"
OWN_MARK = "[slurmlite]"
REFUSED_TITLE = "Slurm options not supported by slurmlite:"
WIDTH = 79
_NBSP = "\x00"  # a space --usage never breaks a line at ("[-A name]" stays whole)


class HelpMismatch(ValueError):
    """The help words and the option table disagree (a row without words, a word without row)."""


class HelpPage:
    """One command's help: its table, the words of each option, the layout.

    ``sections`` is a sequence of ``(title, names)``: ``names`` space-separated
    option names (a row's long name as messages print it, without dashes, or
    the letter of a short-only row) in the order they are listed; an empty
    title continues without a heading.  ``words`` maps a name to ``(value,
    description)`` (``shared``: words of rows the command may lack, such as
    those sbatch, srun and salloc share); ``own`` names the options slurmlite
    adds; ``also`` maps the name of a row kept off the page to the row it is
    shown on as ``(also --cluster)`` (one for rows _aliases cannot pair: a
    different key).  ``synopsis`` is the first line of ``--help``; ``tail`` the positional part of ``--usage``;
    ``intro``/``trailer`` are free text before and after the options.
    """

    def __init__(
        self,
        table: OptionTable,
        synopsis: str,
        sections: Sequence[tuple[str, str]],
        words: Mapping[str, tuple[str, str]],
        column: int = 30,
        shared: Mapping[str, tuple[str, str]] | None = None,
        own: str = "",
        also: Mapping[str, str] | None = None,
        tail: str = "",
        intro: str = "",
        trailer: str = "",
    ) -> None:
        self.table, self.synopsis, self.sections = table, synopsis, sections
        self.own_words = words
        self.words = {**(shared or {}), **words}
        self.column, self.own = column, set(own.split())
        self.also = dict(also or {})
        self.tail, self.intro, self.trailer = tail, intro, trailer


def name_of(spec: OptionSpec) -> str:
    """How sections and words name a row: ``account``, or ``U`` for a short-only row."""
    return spec.name.lstrip("-")


def _aliases(table: OptionTable) -> dict[str, list[OptionSpec]]:
    """Rows that only repeat another row (same key and argument kind), by that row's name."""
    first: dict[tuple[str, str], OptionSpec] = {}
    extra: dict[str, list[OptionSpec]] = {}
    for spec in table.specs:
        ident = (spec.key, spec.arg)
        if ident in first:
            extra.setdefault(name_of(first[ident]), []).append(spec)
        else:
            first[ident] = spec
    return extra


def _spellings(spec: OptionSpec) -> list[str]:
    names = [f"--{n}" for n in spec.long]
    return names + ([f"-{spec.short}"] if spec.short else [])


class _Layout:
    """The rows of a page sorted into its sections, checked against the table."""

    def __init__(self, page: HelpPage, strict: bool) -> None:
        table = page.table
        self.page = page
        by_name = {name_of(s): s for s in table.specs}
        problems: list[str] = []
        self.sections: list[tuple[str, list[OptionSpec]]] = []
        placed: set[str] = set()
        for title, names in page.sections:
            rows = []
            for name in names.split():
                spec = by_name.get(name)
                if spec is None:
                    problems.append(f"{table.prog}: help names {name!r}, which is no option")
                    continue
                placed.add(name)
                if spec.status != UNSUPPORTED:
                    rows.append(spec)
            self.sections.append((title, rows))
        self.aliases = {
            name: [s for s in rows if name_of(s) not in placed]
            for name, rows in _aliases(table).items()
        }
        for name, target in page.also.items():
            if name not in by_name or target not in by_name or name in placed:
                problems.append(f"{table.prog}: help shows {name!r} on {target!r}, which fails")
            else:
                self.aliases.setdefault(target, []).append(by_name[name])
        hidden = {name_of(s) for rows in self.aliases.values() for s in rows}
        loose = [
            s
            for s in table.specs
            if name_of(s) not in placed and name_of(s) not in hidden and s.status != UNSUPPORTED
        ]
        for spec in loose:
            problems.append(f"{table.prog}: option {spec.name} has no place in the help")
        if loose:
            self.sections.append(("Other options:", loose))
        for _, rows in self.sections:
            for spec in rows:
                problems.extend(self._check_words(spec))
        for word in page.own_words:
            if word not in by_name:
                problems.append(f"{table.prog}: help words for {word!r}, which is no option")
        if strict and problems:
            raise HelpMismatch("\n".join(problems))
        self.refused = [
            s for s in table.specs if s.status == UNSUPPORTED and name_of(s) not in hidden
        ]

    def _check_words(self, spec: OptionSpec) -> list[str]:
        prog, name = self.page.table.prog, name_of(spec)
        if name not in self.page.words:
            return [f"{prog}: option {spec.name} has no help words"]
        value = self.page.words[name][0]
        if (spec.arg == NO_ARG) == bool(value):
            return [f"{prog}: option {spec.name}: value name {value!r} does not fit its row"]
        return []

    def value_of(self, spec: OptionSpec) -> str:
        return self.page.words.get(name_of(spec), ("", ""))[0]

    def flag_text(self, spec: OptionSpec) -> str:
        """``-A, --account=name`` / ``    --nice[=value]`` / ``-U name``."""
        value = self.value_of(spec) or "value"
        if not spec.long:
            tail = "" if spec.arg == NO_ARG else f" {value}"
            return f"-{spec.short}{tail}"
        head = f"-{spec.short}, " if spec.short else "    "
        tail = {NO_ARG: "", OPTIONAL: f"[={value}]"}.get(spec.arg, f"={value}")
        return f"{head}{spec.name}{tail}"

    def description(self, spec: OptionSpec) -> str:
        text = self.page.words.get(name_of(spec), ("", ""))[1]
        others = [n for n in _spellings(spec) if n != spec.name and n != f"-{spec.short}"]
        for alias in self.aliases.get(name_of(spec), []):
            others += _spellings(alias)
        marks = [text] if text else []
        if others:
            marks.append(f"(also {', '.join(others)})")
        if spec.status != SUPPORTED:
            marks.append(IGNORED_MARK)
        if name_of(spec) in self.page.own:
            marks.append(OWN_MARK)
        return " ".join(marks)


def _option_lines(flag: str, text: str, column: int) -> list[str]:
    lead = f"  {flag}"
    width = max(WIDTH - column, 30)
    chunks = textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]
    if len(lead) + 1 > column:
        lines = [lead]
    else:
        lines = [f"{lead.ljust(column)}{chunks.pop(0)}".rstrip()]
    return lines + [" " * column + c for c in chunks]


def render_help(page: HelpPage, strict: bool = False) -> str:
    """The whole ``--help`` text (ends with a newline)."""
    layout = _Layout(page, strict)
    out = [page.synopsis]
    if page.intro:
        out += ["", page.intro.rstrip("\n")]
    for title, rows in layout.sections:
        if not rows:
            continue
        out.append("")
        if title:
            out.append(title)
        for spec in rows:
            out += _option_lines(layout.flag_text(spec), layout.description(spec), page.column)
    if layout.refused:
        names = ", ".join(s.name for s in layout.refused)
        indent = {"initial_indent": "  ", "subsequent_indent": "  "}
        out += ["", REFUSED_TITLE, *textwrap.wrap(names, WIDTH, break_on_hyphens=False, **indent)]
    if page.trailer:
        out += ["", page.trailer.rstrip("\n")]
    return "\n".join(out) + "\n"


def render_usage(page: HelpPage, strict: bool = False) -> str:
    """``Usage: prog [-A name] [--comment=text] ... [-hQv] tail``, wrapped (ends with a newline)."""
    layout = _Layout(page, strict)
    words: list[str] = []
    letters = ""
    for _, rows in layout.sections:
        for spec in rows:
            value = layout.value_of(spec) or "value"
            if spec.arg == NO_ARG and spec.short:
                letters += spec.short
            elif spec.arg == NO_ARG:
                words.append(f"[{spec.name}]")
            elif spec.short and spec.arg == OPTIONAL:
                words.append(f"[-{spec.short}[{value}]]")
            elif spec.short:
                words.append(f"[-{spec.short}{_NBSP}{value}]")
            elif spec.arg == OPTIONAL:
                words.append(f"[{spec.name}[={value}]]")
            else:
                words.append(f"[{spec.name}={value}]")
    if letters:
        words.append(f"[-{letters}]")
    if page.tail:
        words.append(page.tail)
    lead = f"Usage: {page.table.prog} "
    lines = textwrap.wrap(
        " ".join(w.replace(" ", _NBSP) for w in words),
        WIDTH,
        initial_indent=lead,
        subsequent_indent=" " * len(lead),
        break_long_words=False,
        break_on_hyphens=False,
    )
    return "\n".join(lines or [lead.rstrip()]).replace(_NBSP, " ") + "\n"


def load(prog: str) -> HelpPage:
    """The help page of ``prog`` (its data module's ``PAGE``)."""
    return importlib.import_module(f"cli.help.{prog}").PAGE  # type: ignore[no-any-return]


def text(prog: str, kind: str = "help", strict: bool = False) -> str:
    """``kind`` is ``help`` or ``usage``."""
    page = load(prog)
    return render_usage(page, strict) if kind == "usage" else render_help(page, strict)


def show(prog: str, kind: str = "help") -> None:
    """Print ``prog``'s ``--help`` (or ``--usage``) on stdout."""
    print(text(prog, kind), end="")
