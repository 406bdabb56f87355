"""Reading the repository's Markdown for the docs tests: files, links, code blocks, anchors.

A *shell example* is a fenced code block with at least one line starting with
``$ ``: those lines are commands (a line ending in ``\\`` continues on the next,
and a here-document's body runs up to its end word), every other line is shown
output.  ``<!-- not-run: REASON -->`` on the line before the fence (blank lines
between are allowed) marks a block that cannot run on a local test cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^\s*(```+|~~~+)(.*)$")
NOT_RUN = re.compile(r"^<!--\s*not-run:(.*?)-->\s*$")
EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
# runners of their own: the replay chapter (tests/sim/test_docs_scheduling.py)
OWN_RUNNER = {"docs/scheduling.md"}


def doc_files() -> list[Path]:
    """README.md and every Markdown file under docs/, sorted."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def rel(path: Path) -> str:
    """The path from the repository's root (as given when outside it)."""
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


@dataclass
class Command:
    line: int  # 1-based line of its ``$ `` in the file
    text: str  # what bash runs (continuations and here-document included)
    exit_code: int  # what it must exit with: 0 unless ``# exit N``


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    not_run: str | None  # the marker's reason ("" when the marker has none)
    commands: list[Command] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{rel(self.path)}:{self.line}"


def fenced_blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """(0-based index of the opening fence, the lines inside) for every fenced block."""
    blocks: list[tuple[int, list[str]]] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, start, body = m.group(1), i, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        blocks.append((start, body))
        i += 1
    return blocks


def _commands(first: int, body: list[str]) -> list[Command]:
    commands: list[Command] = []
    i = 0
    while i < len(body):
        line = body[i]
        if not line.startswith("$ "):
            i += 1
            continue
        number, parts = first + i + 1, [line[2:]]
        i += 1
        while parts[-1].endswith("\\") and i < len(body):
            parts.append(body[i])
            i += 1
        heredoc = HEREDOC.search(parts[0])
        if heredoc:
            word = heredoc.group(2)
            while i < len(body):
                parts.append(body[i])
                i += 1
                if parts[-1].strip() == word:
                    break
        code = EXIT.search(parts[0] if heredoc else parts[-1])
        commands.append(Command(number, "\n".join(parts), int(code.group(1)) if code else 0))
    return commands


def shell_examples(path: Path) -> list[Block]:
    """The shell examples of one file, with their not-run markers."""
    lines = path.read_text().splitlines()
    found: list[Block] = []
    for start, body in fenced_blocks(lines):
        if not any(line.startswith("$ ") for line in body):
            continue
        reason = None
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0 and (m := NOT_RUN.match(lines[j].strip())):
            reason = m.group(1).strip()
        # body line k sits at 0-based index start + 1 + k, i.e. 1-based line start + 2 + k
        found.append(Block(path, start + 1, reason, _commands(start + 1, body)))
    return found


def prose(path: Path) -> list[tuple[int, str]]:
    """(1-based line, text) of the lines outside fenced code blocks."""
    lines = path.read_text().splitlines()
    inside: set[int] = set()
    for start, body in fenced_blocks(lines):
        inside.update(range(start, start + len(body) + 2))
    return [(n + 1, line) for n, line in enumerate(lines) if n not in inside]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: their text
    text = text.strip().lower().replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file (repeated headings get -1, -2, ...)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose(path):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found
