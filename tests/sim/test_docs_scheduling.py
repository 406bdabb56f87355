"""``docs/scheduling.md`` is checked: every command it shows is run again, and every
figure, per-job table and Gantt chart it quotes must agree with what the commands print.

Conventions of the chapter (its last section says the same to its readers):

* A fenced block whose info string is ``console`` holds commands and their
  output: a line ``$ slurmlite simulate ARGS`` or ``$ cat FILE``, then the lines
  it prints (stdout, then stderr), up to the next ``$`` line or the block's end.
  ``console slow`` marks a block (LANL-CM5, slurm on lublin_256) that runs only
  with ``SLURMLITE_DOCS_ALL=1``.
* Commands run from the checkout's root, so ``docs/examples/...`` and
  ``traces/...`` (the traces shipped in the repository) mean what they say there.  The files a command
  writes (``--jobs-csv``, ``--starts-csv``, ``--plot``: plain names) go to a
  temporary folder, and ``$ cat NAME`` reads them there; a block is one test.
* Masked on both sides: the last two columns of the results table (replay
  seconds, jobs per second) and ``replay_seconds``, ``jobs_per_second`` and
  ``passes`` of ``--json`` (the count of passes measures the replay's shortcuts,
  not the schedule).  Every other character of every line must match.
* ``<!-- check: jobs NAME.csv -->`` before a Markdown table: each row's start,
  end, wait and bounded slowdown (the last number of each cell) are those of
  the ``--jobs-csv`` file ``NAME.csv`` that a ``cat`` of the chapter prints.
  ``<!-- check: gantt NAME.csv SECONDS -->`` before a text block: its ``CPU n``
  rows, one character per ``SECONDS``, show that file's jobs (job id, or ``.``
  for an idle CPU).
* Quoted figures: outside code, every number written with four decimals
  (``595.7143``) and every whole number of five digits or more (``7,949,022``)
  appears in the output of some ``console`` block.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.golden_path import CHECKOUT

DOC = CHECKOUT / "docs" / "scheduling.md"
TRACES = CHECKOUT / "traces"
ALL = "SLURMLITE_DOCS_ALL"
OUTPUT_OPTIONS = ("--jobs-csv", "--starts-csv", "--plot")
FENCE = re.compile(r"^```(\S*)(.*)$")
MARKER = re.compile(r"^<!-- check: (jobs|gantt) (\S+)(?: (\d+))? -->$")
# a results row: policy, jobs, wait, bsld, utilization, makespan | replay seconds, jobs/s
ROW = re.compile(r"^(\S+\s+\d+\s+\d+\.\d{4}\s+\d+\.\d{4}\s+\d+\.\d{4}\s+\d+)\s+\d+\.\d{2} s\s+\S+$")
# --json: the timing, and the count of passes (how much work the replay skipped, not a result)
TIMING_KEY = re.compile(r'^(\s*"(?:replay_seconds|jobs_per_second|passes)": )[^,]*(,?)$')
FIGURE = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{5,})(?![\w,]|\.\d)")
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@dataclass
class Command:
    line: int  # 1-based line of the ``$`` in the chapter
    argv: list[str]
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    line: int
    slow: bool
    commands: list[Command]

    @property
    def needs_traces(self) -> bool:
        return any(a.startswith("traces/") for c in self.commands for a in c.argv)

    @property
    def name(self) -> str:
        first = self.commands[0].argv
        trace = next((Path(a).name.split(".")[0] for a in first if "/" in a), "cmd")
        return f"L{self.line}-{trace}"


@dataclass
class Chapter:
    blocks: list[Block]
    markers: list[tuple[int, str, str, int | None, list[str]]]  # line, kind, file, step, body
    prose: list[tuple[int, str]]  # lines outside fences and comments, inline code removed


def parse(text: str) -> Chapter:
    """The chapter's console blocks, checked tables and charts, and prose."""
    lines = text.splitlines()
    blocks: list[Block] = []
    markers: list[tuple[int, str, str, int | None, list[str]]] = []
    prose: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            marker = MARKER.match(lines[i].strip())
            if marker:
                kind, name, step = marker.group(1), marker.group(2), marker.group(3)
                body, j = _following(lines, i + 1, kind)
                markers.append((i + 1, kind, name, int(step) if step else None, body))
                i = j
                continue
            if not lines[i].lstrip().startswith("<!--"):
                prose.append((i + 1, re.sub(r"`[^`]*`", "", lines[i])))
            i += 1
            continue
        start, info = i + 1, (fence.group(1) + fence.group(2)).split()
        body = []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        if info and info[0] == "console":
            blocks.append(Block(start, "slow" in info[1:], _commands(body, start)))
    return Chapter(blocks, markers, prose)


def _following(lines: list[str], i: int, kind: str) -> tuple[list[str], int]:
    """The table (``jobs``) or fenced block (``gantt``) right after a marker."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    body = []
    if kind == "jobs":
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            body.append(lines[i])
            i += 1
        return body, i
    assert i < len(lines) and lines[i].startswith("```"), f"line {i + 1}: a chart must follow"
    i += 1
    while i < len(lines) and not lines[i].startswith("```"):
        body.append(lines[i])
        i += 1
    return body, i + 1


def _commands(body: list[str], start: int) -> list[Command]:
    commands: list[Command] = []
    for n, line in enumerate(body, start=start + 1):
        if line.startswith("$ "):
            commands.append(Command(n, shlex.split(line[2:])))
        else:
            assert commands, f"line {n}: a console block starts with a '$ ' command"
            commands[-1].expected.append(line)
    return commands


def masked(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        line = line.rstrip()
        row = ROW.match(line)
        if row:
            line = row.group(1) + "  <replay s, jobs/s>"
        else:
            line = TIMING_KEY.sub(r"\1<timing>\2", line)
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return out


CHAPTER = parse(DOC.read_text()) if DOC.exists() else Chapter([], [], [])


def _csv_files() -> dict[str, list[dict[str, str]]]:
    """Every ``cat NAME.csv`` output of the chapter, as rows."""
    files: dict[str, list[dict[str, str]]] = {}
    for block in CHAPTER.blocks:
        for c in block.commands:
            if c.argv[:1] == ["cat"] and c.argv[1].endswith(".csv"):
                assert c.argv[1] not in files, f"line {c.line}: {c.argv[1]} shown twice"
                files[c.argv[1]] = list(csv.DictReader(io.StringIO("\n".join(c.expected))))
    return files


# -- the chapter's shape ----------------------------------------------------------------


def test_the_chapter_exists_and_shows_its_commands():
    assert DOC.exists(), f"{DOC} is missing"
    assert len(CHAPTER.blocks) >= 10
    for block in CHAPTER.blocks:
        for c in block.commands:
            assert c.argv[:2] == ["slurmlite", "simulate"] or (
                c.argv[0] == "cat" and len(c.argv) == 2
            ), f"line {c.line}: only 'slurmlite simulate' and 'cat FILE' are run"
    lanl = [b for b in CHAPTER.blocks if any("LANL" in a for c in b.commands for a in c.argv)]
    assert lanl and all(b.slow for b in lanl), "LANL blocks are marked 'console slow'"


def test_every_quoted_figure_is_printed_by_a_command():
    printed: set[str] = set()
    for block in CHAPTER.blocks:
        for c in block.commands:
            for line in c.expected:
                printed.update(n.replace(",", "") for n in NUMBER.findall(line))
    missing = []
    for n, line in CHAPTER.prose:  # checked tables and charts are not prose
        for figure in FIGURE.findall(line):
            plain = figure.replace(",", "")
            quoted = len(plain) >= 5 if "." not in plain else len(plain.split(".")[1]) == 4
            if quoted and plain not in printed:
                missing.append(f"line {n}: {figure}")
    assert not missing, "figures quoted but printed by no command: " + ", ".join(missing)


# -- tables and charts against the jobs CSV the chapter prints ---------------------------


def _last_number(cell: str) -> float | None:
    numbers = re.findall(r"-?\d+(?:\.\d+)?", cell.replace(",", ""))
    return float(numbers[-1]) if numbers else None


def _decimals(cell: str) -> int:
    numbers = re.findall(r"-?\d+(?:\.(\d+))?", cell.replace(",", ""))
    return len(numbers[-1]) if numbers else 0


def _bsld(row: dict[str, str]) -> float:
    wait, run = float(row["waiting_time"]), float(row["execution_time"])
    return max(1.0, (wait + run) / max(run, 10.0))


@pytest.mark.parametrize(
    "marker", [m for m in CHAPTER.markers if m[1] == "jobs"], ids=lambda m: f"L{m[0]}-{m[2]}"
)
def test_a_per_job_table_agrees_with_its_jobs_csv(marker):
    line, _, name, _, body = marker
    rows = {r["job_id"]: r for r in _csv_files()[name]}
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in body]
    header, data = cells[0], [c for c in cells[2:]]
    columns = {
        "start": lambda r: float(r["starting_time"]),
        "end": lambda r: float(r["finish_time"]),
        "wait": lambda r: float(r["waiting_time"]),
        "bsld": _bsld,
    }
    seen = set()
    for row in data:
        job = row[header.index("job")].strip("*")
        for column, value in columns.items():
            if column not in header:
                continue
            cell = row[header.index(column)]
            shown = _last_number(cell)
            if job == "mean":
                if column not in ("wait", "bsld"):
                    continue
                actual = sum(value(r) for r in rows.values()) / len(rows)
            else:
                actual = value(rows[job])
            decimals = _decimals(cell)  # shown rounded; without decimals, exact
            tolerance = (0.5 * 10**-decimals if decimals else 0) + 1e-9
            assert shown is not None and abs(shown - actual) <= tolerance, (
                f"line {line}: job {job} {column} {cell!r}, the replay says {actual:.4f}"
            )
        seen.add(job)
    assert set(rows) <= seen, f"line {line}: jobs {sorted(set(rows) - seen)} not in the table"


@pytest.mark.parametrize(
    "marker", [m for m in CHAPTER.markers if m[1] == "gantt"], ids=lambda m: f"L{m[0]}-{m[2]}"
)
def test_a_gantt_chart_agrees_with_its_jobs_csv(marker):
    line, _, name, step, body = marker
    assert step, f"line {line}: give the seconds per character"
    rows = _csv_files()[name]
    end = max(float(r["finish_time"]) for r in rows)
    width = int(-(-end // step))
    drawn = {}
    for text in body:
        m = re.match(r"^\s*CPU\s+(\d+)\s+(\S+)\s*$", text)
        if m:
            drawn[int(m.group(1))] = m.group(2)
    cpus = max(int(p.split("-")[-1]) for r in rows for p in r["allocated_resources"].split()) + 1
    assert sorted(drawn) == list(range(cpus)), f"line {line}: one row per CPU"
    for cpu in range(cpus):
        want = ["."] * width
        for r in rows:
            held = any(
                int(p.split("-")[0]) <= cpu <= int(p.split("-")[-1])
                for p in r["allocated_resources"].split()
            )
            if held:
                for k in range(int(float(r["starting_time"]) // step), width):
                    if k * step < float(r["finish_time"]):
                        want[k] = r["job_id"]
        assert drawn[cpu] == "".join(want), f"line {line}: CPU {cpu}"


# -- the commands, run again ---------------------------------------------------------------


def _argv(argv: list[str], tmp: Path) -> list[str]:
    out = list(argv[2:])
    for k, arg in enumerate(out[:-1]):
        if arg in OUTPUT_OPTIONS:
            assert "/" not in out[k + 1], "output files of the chapter are plain names"
            out[k + 1] = str(tmp / out[k + 1])
    return [sys.executable, "-m", "cli.slurmlite", "simulate", *out]


def _run(command: Command, tmp: Path) -> list[str]:
    if command.argv[0] == "cat":
        return (tmp / command.argv[1]).read_text().splitlines()
    env = dict(os.environ, PYTHONPATH=str(CHECKOUT))
    done = subprocess.run(
        _argv(command.argv, tmp),
        cwd=CHECKOUT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, f"line {command.line}: exit {done.returncode}\n{done.stderr}"
    return (done.stdout + done.stderr).replace(f"{tmp}{os.sep}", "").splitlines()


@pytest.mark.parametrize("block", CHAPTER.blocks, ids=lambda b: b.name)
def test_a_console_block_prints_what_the_chapter_says(block, tmp_path):
    if block.slow and os.environ.get(ALL) != "1":
        pytest.skip(f"slow (LANL-CM5 or slurm on lublin_256): set {ALL}=1 to run it")
    if block.needs_traces and not TRACES.is_dir():
        pytest.fail(f"the traces are missing from {TRACES}")
    for command in block.commands:
        got = masked(_run(command, tmp_path))
        want = masked(command.expected)
        assert got == want, f"line {command.line}: $ {shlex.join(command.argv)}"
    for command in block.commands:
        argv = command.argv
        if "--plot" in argv:
            written = tmp_path / argv[argv.index("--plot") + 1]
            assert written.stat().st_size > 10_000, f"line {command.line}: no plot"
