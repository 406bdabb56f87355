"""``--dependency`` lists: parsing and display (spec §1.8).

A list is elements joined by ``,`` (every one must hold) or ``?`` (any one
suffices); the two separators cannot be mixed.  An element is
``type:id[:id...]`` (``after`` takes ``id+minutes``) or ``singleton``; a bare
``id`` means ``afterany:id``.  Each ``type:id1:id2`` becomes one element per id,
so the store keeps one flat list that the scheduler shortens as elements hold::

    >>> d = parse("afterok:41:42,after:7+5")
    >>> [(e.kind, e.job_id, e.minutes) for e in d.elements]
    [('afterok', 41, 0), ('afterok', 42, 0), ('after', 7, 5)]
    >>> format_deps(d)
    'afterok:41,afterok:42,after:7+5'
    >>> show(d, failed=False)
    'afterok:41(unfulfilled),afterok:42(unfulfilled),after:7+5(unfulfilled)'

Bad syntax raises ``DependencyError``; the controller answers it with Slurm's
``Job dependency problem``.  Job ids are checked here only for form: a job the
controller does not know is treated as ended (Slurm 22.05 runs the job, golden
``41_dependency_on_unknown_job``).
"""

from __future__ import annotations

import re

KINDS = ("after", "afterany", "afterok", "afternotok", "aftercorr", "singleton")
_ID = re.compile(r"^(\d+)(?:_(\d+))?(?:\+(\d+))?$")


class DependencyError(ValueError):
    """A ``--dependency`` value that does not parse."""


class Dep:
    """One element: ``kind`` (afterok, singleton, ...), its target and ``+minutes``.

    A plain class, not a dataclass: sbatch imports this module, and the commands
    stay clear of ``dataclasses`` (tests/cli/test_import_budget.py)."""

    __slots__ = ("kind", "job_id", "minutes")

    def __init__(self, kind: str, job_id: int = 0, minutes: int = 0) -> None:
        self.kind = kind
        self.job_id = job_id  # 0 for singleton
        self.minutes = minutes  # after:id+minutes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Dep) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Dep({self.kind!r}, {self.job_id}, {self.minutes})"

    def _key(self) -> tuple[str, int, int]:
        return (self.kind, self.job_id, self.minutes)

    def text(self) -> str:
        if self.kind == "singleton":
            return "singleton"
        plus = f"+{self.minutes}" if self.minutes else ""
        return f"{self.kind}:{self.job_id}{plus}"


class Deps:
    """The elements of a dependency list, joined by ``,`` (all) or ``?`` (any)."""

    __slots__ = ("elements", "any_of")

    def __init__(self, elements: tuple[Dep, ...], any_of: bool = False) -> None:
        self.elements = elements
        self.any_of = any_of  # "?" joined: one satisfied element suffices

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Deps) and (self.elements, self.any_of) == (
            other.elements,
            other.any_of,
        )

    def __hash__(self) -> int:
        return hash((self.elements, self.any_of))

    def __repr__(self) -> str:
        return f"Deps({self.elements!r}, {self.any_of})"

    @property
    def sep(self) -> str:
        return "?" if self.any_of else ","


def parse(text: str) -> Deps:
    """The elements of ``text``; ``DependencyError`` when it is not a dependency list."""
    text = text.strip()
    if not text:
        raise DependencyError("empty dependency")
    if "," in text and "?" in text:
        raise DependencyError("',' and '?' mixed")
    any_of = "?" in text
    out: list[Dep] = []
    for part in text.split("?" if any_of else ","):
        out.extend(_element(part))
    return Deps(tuple(out), any_of)


def _element(part: str) -> list[Dep]:
    if part == "singleton":
        return [Dep("singleton")]
    kind, colon, rest = part.partition(":")
    if not colon:  # a bare job id: afterany
        kind, rest = "afterany", part
    if kind not in KINDS or kind == "singleton" or not rest:
        raise DependencyError(f"bad dependency element {part!r}")
    out = []
    for ident in rest.split(":"):
        m = _ID.match(ident)
        if m is None or int(m.group(1)) <= 0:
            raise DependencyError(f"bad job id {ident!r}")
        minutes = int(m.group(3) or 0)
        if minutes and kind != "after":
            raise DependencyError(f"+minutes only with after: {part!r}")
        out.append(Dep(kind, int(m.group(1)), minutes))
    return out


def format_deps(deps: Deps) -> str | None:
    """The stored form (``None`` once nothing is left)."""
    if not deps.elements:
        return None
    return deps.sep.join(e.text() for e in deps.elements)


def show(deps: Deps | None, failed: bool) -> str:
    """``scontrol show job``'s ``Dependency=`` value: ``afterok:50(unfulfilled)``."""
    if deps is None or not deps.elements:
        return "(null)"
    mark = "(failed)" if failed else "(unfulfilled)"
    return deps.sep.join(e.text() + mark for e in deps.elements)


def stored(text: str | None) -> Deps | None:
    """A stored list back (it was written by :func:`format_deps`, so it parses)."""
    return parse(text) if text else None
