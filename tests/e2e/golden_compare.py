"""Compare a command's output with a golden file by shape, and say precisely what differs.

Four kinds of output, four comparisons; each returns a list of
differences (empty: same shape):

* **Fixed-width tables** (``squeue``, ``sinfo``, ``sacct``).  Column spans
  are found from the text itself: a column is a maximal run of character
  positions where at least one line (header or row) has a non-space.  A
  golden column whose cells all start at the span's first position is left
  justified; if they all end at its last position it is right justified.
  Ours must have the same header lines byte for byte, the same number of
  columns, the same left edge for left-justified columns and the same right
  edge for right-justified ones (so a 3-digit job id may widen a
  right-justified JOBID span to the left, never move its edge).  Example::

      golden  "   JOBID NAME"      spans (0,8) (9,13): JOBID right, NAME left
              "      56 gpu-"
      ours    "   JOBID NAME"      right edge of column 0 is 8 in both: same shape
              "     123 gpu-"

* **Delimited tables** (``-P``, ``--parsable2``, ``-o "%i|%T"``): split on
  the delimiter.
* **Records** (``scontrol show``): each line's indentation and ``Key=``
  sequence must be the same; values are compared after normalisation.
* **Environment dumps** (``env | sort`` in a job, ``srun env``): the same
  variables Slurm sets with the same values; a dump of several tasks is cut
  at its text lines (``====task1``) and each task compared with its golden.

Cells and values are normalised the same way on both sides (``Norm``): job
ids become scenario roles (``50.batch`` -> ``<big-running>.batch``), times
``<TIME>``, durations ``<DUR>``, priorities ``N``, single node names ``nN``;
the golden side also gets the capture environment swapped for ours (alice ->
our user, ``/home/alice/work`` -> our working directory, ``acct_a`` -> our
account).  Rows are matched by role (rows of unknown jobs are left out), so
the session's other jobs and the golden rows of jobs whose features are
deferred do not disturb the comparison.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
DATE_LINE = re.compile(r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}")
DURATION = re.compile(r"(\d+-)?(\d+:)?\d+:\d\d")
NODE = re.compile(r"n\d+")
BLOCKED = {"Resources": "<Resources|Priority>", "Priority": "<Resources|Priority>"}

DURATION_COLUMNS = {"TIME", "Elapsed", "RunTime"}
NUMBER_COLUMNS = {"PRIORITY", "Priority", "SLURM_TASK_PID", "CPULoad", "FreeMem", "NodeAddr"}
PRIORITY_COLUMNS = {"PRIORITY", "Priority"}
ZERO = re.compile(r"0(\.0+)?")
ID_COLUMNS = {"JOBID", "ARRAY_JOB_ID", "JobID", "JobIDRaw", "JobId", "ArrayJobId"}
NODE_COLUMNS = {"NODELIST(REASON)", "NodeList", "BatchHost", "NODELIST", "SCHEDNODES"}
REASON_COLUMNS = {"REASON", "NODELIST(REASON)", "Reason"}


@dataclass
class Norm:
    """How one side's text is normalised: its job ids' roles and (golden only) substitutions."""

    roles: dict[int, str]
    subst: list[tuple[str, str]] = field(default_factory=list)  # (regex, replacement)
    keyed: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # per column/key first
    blocked_alike: bool = True  # Resources and Priority compare equal (issue 6: priorities)

    def swap(self, text: str, column: str = "") -> str:
        for pattern, repl in self.keyed.get(column, []) + self.subst:
            text = re.sub(pattern, lambda _m, r=repl: r, text)
        return text

    def job(self, text: str) -> str:
        """``50.batch`` -> ``<big-running>.batch``; an unknown id stays as it is."""
        m = re.fullmatch(r"(\d+)(.*)", text)
        if m and int(m.group(1)) in self.roles:
            return f"<{self.roles[int(m.group(1))]}>{m.group(2)}"
        return text

    def role_of(self, cell: str) -> str | None:
        m = re.fullmatch(r"(\d+)(.*)", cell.strip())
        if m and int(m.group(1)) in self.roles:
            return self.roles[int(m.group(1))] + m.group(2)
        return None

    def value(self, column: str, text: str) -> str:
        """One table cell or ``Key=`` value in comparable form."""
        v = self.swap(text, column)
        if column in ID_COLUMNS:
            v = self.job(v)
        v = TIME.sub("<TIME>", v)
        v = re.sub(r"slurm-(\d+)(?=[._])", lambda m: f"slurm-{self.job(m.group(1))}", v)
        v = re.sub(r"(?<=after)(\w*:)(\d+)", lambda m: m.group(1) + self.job(m.group(2)), v)
        if column in DURATION_COLUMNS:
            v = DURATION.sub("<DUR>", v)
        if column in NUMBER_COLUMNS and not (column in PRIORITY_COLUMNS and ZERO.fullmatch(v)):
            v = re.sub(r"\d+", "N", v)  # a priority of 0 means held: it is kept
        if column == "OS":  # "Linux 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0 ": uname -s -r -v
            v = re.sub(r"^(\S+) \S+ \S.* $", r"\1 <release> <version> ", v)
        if column in NODE_COLUMNS:
            v = re.sub(r"^\(?n\d+\)?$", lambda m: NODE.sub("nN", m.group(0)), v)
        if column == "AllocNode:Sid":  # the submit host and the submitter's session id
            v = re.sub(r"^(?!\(null\))[^:\s]+:\d+$", "<host>:<sid>", v)
        if column in REASON_COLUMNS and self.blocked_alike:
            v = re.sub(r"\b(Resources|Priority)\b", lambda m: BLOCKED[m.group(1)], v)
        return v

    def text(self, text: str) -> str:
        """Free text (file names, messages): times, job ids after ``job``/``JOB``, at line
        starts and in file names, and node names are normalised."""
        t = TIME.sub("<TIME>", self.swap(text))
        t = re.sub(r"(?m)(\b[Jj]ob(?: id)? |\bJOB |^|slurm-|o-|pat-|-)(\d+)\b", r"\1N", t)
        t = re.sub(r"(?m)(?<![\w-])\d+(?=_[\d\[])|(?<=-)\d+(?=_\d)|(?<=\|)\d+$", "N", t)
        return NODE.sub("nN", t)


# ------------------------------------------------------------------ tables


def spans(lines: Iterable[str]) -> list[tuple[int, int]]:
    """Maximal runs of positions where some line has a non-space: the columns."""
    width = 0
    used: set[int] = set()
    for line in lines:
        width = max(width, len(line))
        used |= {i for i, c in enumerate(line) if c != " "}
    out: list[tuple[int, int]] = []
    start = None
    for i in range(width + 1):
        if i in used and start is None:
            start = i
        elif i not in used and start is not None:
            out.append((start, i))
            start = None
    return out


def cut(line: str, cols: list[tuple[int, int]]) -> list[str]:
    return [line[s:e] for s, e in cols]


def justification(lines: list[str], cols: list[tuple[int, int]]) -> list[str]:
    """``"L"``, ``"R"``, ``"LR"`` (every cell fills its span) or ``""`` per column."""
    out = []
    for s, e in cols:
        cells = [line[s:e].ljust(e - s) for line in lines if line[s:e].strip()]
        left = all(not c[0].isspace() for c in cells)
        right = all(not c[-1].isspace() for c in cells)
        out.append(("L" if left else "") + ("R" if right else ""))
    return out


@dataclass
class Table:
    """A table split into header lines and rows of cells (raw, unstripped)."""

    header: list[str]
    names: list[str]  # column names (from the header, or given)
    rows: list[list[str]]
    cols: list[tuple[int, int]]
    lines: list[str]  # header + compared rows, for layout checks


def fixed_table(
    text: str, header_lines: int, names: list[str] | None, keep: Callable[[str], bool]
) -> Table:
    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    header, body = lines[:header_lines], lines[header_lines:]
    body = [line for line in body if keep(line)]
    cols = spans(header + body)
    if names is None:
        names = [c.strip() for c in cut(header[0], cols)] if header else []
    return Table(header, names, [cut(line, cols) for line in body], cols, header + body)


def delimited_table(
    text: str, sep: str, header_lines: int, names: list[str] | None, keep: Callable[[str], bool]
) -> Table:
    lines = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")
    header, body = lines[:header_lines], [x for x in lines[header_lines:] if keep(x)]
    if names is None:
        names = header[0].split(sep) if header else []
    return Table(header, names, [line.split(sep) for line in body], [], header + body)


def layout_differences(golden: Table, ours: Table) -> list[str]:
    """Column count, edges and justification of a fixed-width table (see the docstring)."""
    diffs = []
    if len(golden.cols) != len(ours.cols):
        return [f"{len(ours.cols)} columns {ours.cols}, golden {len(golden.cols)} {golden.cols}"]
    just = justification(golden.lines, golden.cols)
    for k, ((gs, ge), (os_, oe), j) in enumerate(zip(golden.cols, ours.cols, just, strict=True)):
        name = golden.names[k] if k < len(golden.names) else str(k)
        if j == "L" and os_ != gs:
            diffs.append(f"column {name}: left edge at {os_}, golden {gs} (left-justified)")
        if j == "R" and oe != ge:
            diffs.append(f"column {name}: right edge at {oe}, golden {ge} (right-justified)")
        if j == "LR" and os_ != gs and oe != ge:
            diffs.append(f"column {name}: span {os_}-{oe}, golden {gs}-{ge}")
        for line in ours.lines:
            cell = line[os_:oe].ljust(oe - os_)
            if not cell.strip():
                continue
            if j == "L" and cell[0].isspace():
                diffs.append(f"column {name}: {cell!r} is not left-justified as in golden")
            if j == "R" and cell[-1].isspace() and k < len(ours.cols) - 1:
                diffs.append(f"column {name}: {cell!r} is not right-justified as in golden")
    return diffs


def row_differences(
    golden: Table,
    ours: Table,
    gnorm: Norm,
    onorm: Norm,
    order: str,
    unordered: set[str] = frozenset(),  # type: ignore[assignment]
    keyed: bool = True,
) -> list[str]:
    """Header, row set, row order and every cell.

    ``order``: ``"id"`` (same sequence of jobs as the golden, except roles in
    ``unordered``), ``"groups"`` (pending before running etc.: ours is
    sorted by the golden's (partition, state) groups; the order inside a
    group follows priorities, issue 6), ``"rows"`` (no roles: row by row).
    """
    diffs = []
    if golden.header != ours.header:
        diffs.append(f"header {ours.header!r}, golden {golden.header!r}")
    if golden.names != ours.names:
        diffs.append(f"columns {ours.names}, golden {golden.names}")

    def normed(t: Table, n: Norm, row: list[str]) -> list[str]:
        return [
            n.value(t.names[i] if i < len(t.names) else "", c.strip()) for i, c in enumerate(row)
        ]

    if not keyed:
        g = [normed(golden, gnorm, r) for r in golden.rows]
        o = [normed(ours, onorm, r) for r in ours.rows]
        if g != o:
            diffs.append(f"rows {o}, golden {g}")
        return diffs
    gkeys = [gnorm.role_of(r[0]) for r in golden.rows]
    okeys = [onorm.role_of(r[0]) for r in ours.rows]
    gmap = {k: normed(golden, gnorm, r) for k, r in zip(gkeys, golden.rows, strict=True) if k}
    omap = {k: normed(ours, onorm, r) for k, r in zip(okeys, ours.rows, strict=True) if k}
    if missing := [k for k in gmap if k not in omap]:
        diffs.append(f"rows missing: {missing}")
    if extra := [k for k in omap if k not in gmap]:
        diffs.append(f"rows golden does not have: {extra}")
    for k in gmap:
        if k in omap and gmap[k] != omap[k]:
            diffs.append(f"row {k}: {omap[k]}, golden {gmap[k]}")
    common = [k for k in gmap if k in omap]
    ours_order = [k for k in omap if k in gmap]
    if order == "id":
        g_seq = [k for k in common if k.split(".")[0] not in unordered]
        o_seq = [k for k in ours_order if k.split(".")[0] not in unordered]
        if g_seq != o_seq:
            diffs.append(f"row order {o_seq}, golden {g_seq}")
    elif order == "groups":
        g_seq = _group_runs(golden.names, gmap, common)
        o_seq = _group_runs(ours.names, omap, ours_order)
        if g_seq != o_seq:
            diffs.append(f"(partition, state) groups in order {o_seq}, golden {g_seq}")
    return diffs


def _group_runs(names: list[str], rows: dict[str, list[str]], keys: list[str]) -> list[tuple]:
    """The (partition, state) of each row, consecutive repeats collapsed: squeue sorts
    by these first, then by priority (our priorities are issue 6, so only groups count)."""
    pcol = next((i for i, n in enumerate(names) if n == "PARTITION"), None)
    scol = next((i for i, n in enumerate(names) if n in ("ST", "STATE")), None)
    runs: list[tuple] = []
    for k in keys:
        g = tuple(rows[k][c] for c in (pcol, scol) if c is not None)
        if not runs or runs[-1] != g:
            runs.append(g)
    return runs


# ----------------------------------------------------------------- records

KEY = re.compile(r"(?:^|(?<= ))([A-Za-z][\w/:.]*)=")


def parse_records(text: str) -> list[list[tuple[str, list[tuple[str, str]]]]]:
    """``scontrol show`` text -> records -> lines -> (indent, [(key, value)])."""
    records: list[list[tuple[str, list[tuple[str, str]]]]] = []
    current: list[tuple[str, list[tuple[str, str]]]] = []
    for line in text.split("\n"):
        if line == "":
            if current:
                records.append(current)
            current = []
            continue
        body = line.lstrip(" ")
        indent = line[: len(line) - len(body)]
        marks = list(KEY.finditer(body))
        pairs = []
        for i, m in enumerate(marks):
            end = marks[i + 1].start() - 1 if i + 1 < len(marks) else len(body)
            pairs.append((m.group(1), body[m.end() : end]))
        current.append((indent, pairs))
    if current:
        records.append(current)
    return records


def _kept(
    record: list[tuple[str, list[tuple[str, str]]]], drop: set[str]
) -> list[tuple[str, list[tuple[str, str]]]]:
    return [(i, p) for i, p in record if not p or any(k not in drop for k, _ in p)]


def record_differences(
    golden: str,
    ours: str,
    gnorm: Norm,
    onorm: Norm,
    ignore: Iterable[str] = (),
    drop: Iterable[str] = (),
    values: dict[str, Callable[[str], str]] | None = None,
) -> list[str]:
    """Same records, same lines, same ``Key=`` sequence, same values after normalisation.

    ``drop``: keys removed on both sides before comparing (anchor artefacts);
    ``ignore``: keys whose values are not compared; ``values``: extra per-key
    normalisers applied on both sides.
    """
    drop, ignore, values = set(drop), set(ignore), values or {}
    diffs = []
    # a line of dropped keys only (slurmlite's SystemComment=...) goes as a whole
    grecs, orecs = ([_kept(rec, drop) for rec in parse_records(t)] for t in (golden, ours))
    if len(grecs) != len(orecs):
        return [f"{len(orecs)} records, golden {len(grecs)}"]
    for r, (grec, orec) in enumerate(zip(grecs, orecs, strict=True)):
        if len(grec) != len(orec):
            diffs.append(f"record {r}: {len(orec)} lines, golden {len(grec)}")
            continue
        for (gi, gpairs), (oi, opairs) in zip(grec, orec, strict=True):
            gpairs = [p for p in gpairs if p[0] not in drop]
            opairs = [p for p in opairs if p[0] not in drop]
            gkeys, okeys = [k for k, _ in gpairs], [k for k, _ in opairs]
            if gi != oi or gkeys != okeys:
                diffs.append(f"record {r}: line keys {oi!r}{okeys}, golden {gi!r}{gkeys}")
                continue
            for (key, gv), (_, ov) in zip(gpairs, opairs, strict=True):
                if key in ignore:
                    continue
                extra = values.get(key, lambda v: v)
                g, o = extra(gnorm.value(key, gv)), extra(onorm.value(key, ov))
                if g != o:
                    diffs.append(f"{key}={ov!r} (normalised {o!r}), golden {gv!r} ({g!r})")
    return diffs


# ------------------------------------------------------------- environment

CAPTURE_ENV = {"HOME", "LANG", "LOGNAME", "PATH", "PWD", "SHELL", "SHLVL", "USER", "_"}
SLURMISH = ("SLURM", "CUDA_", "GPU_", "ROCR_", "ZE_")
ENV_ID_KEYS = {"SLURM_JOB_ID": "JobId", "SLURM_JOBID": "JobId", "SLURM_ARRAY_JOB_ID": "JobId"}
# pids, the controller's port, the port srun listens on
ENV_VARYING = {
    "SLURM_TASK_PID",
    "SLURM_WORKING_CLUSTER",
    "SLURM_SRUN_COMM_PORT",
    "SLURM_STEP_LAUNCHER_PORT",
}
ENV_PATHS = {"SLURM_CONF"}  # where the config file is: the capture host's business
# what slurmlite adds on purpose (DESIGN.md section 3, README "Non-GPU jobs")
ENV_EXTRAS = {"SLURMLITE_INJECTED": None, "CUDA_VISIBLE_DEVICES": ""}


def parse_env(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def env_differences(
    golden: str, ours: str, gnorm: Norm, onorm: Norm, inherited: dict[str, str] | None = None
) -> list[str]:
    """The variables Slurm sets (the golden ran under ``env -i``, so everything but the
    login variables is Slurm's) against ours: same names, same values once ids, pids,
    ports and node names are normalised. ``inherited`` is the submitter's environment:
    a variable passed through from it unchanged (CI's ``SLURMLITE_REQUIRE_PG``, say) is
    the user's, as it would be under Slurm, not one the job step added."""
    genv, oenv = parse_env(golden), parse_env(ours)
    passed = {k for k, v in (inherited or {}).items() if oenv.get(k) == v}
    theirs = set(genv) - CAPTURE_ENV
    mine = {
        k
        for k in oenv
        if (k.startswith(SLURMISH) or k in ("ENVIRONMENT", "HOSTNAME", "TMPDIR"))
        and k not in passed
    }
    diffs = [f"missing {k}={genv[k]}" for k in sorted(theirs - set(oenv))]
    for k in sorted(mine - theirs):
        allowed = ENV_EXTRAS.get(k, "absent")
        if allowed != "absent" and (allowed is None or oenv[k] == allowed):
            continue
        diffs.append(f"extra {k}={oenv[k]}")
    for k in sorted(theirs & set(oenv)):
        if k in ENV_PATHS:
            continue

        def norm(n: Norm, v: str, key: str = k) -> str:
            v = n.swap(v, key)
            if key in ENV_ID_KEYS:
                v = n.job(v)
            if key in ENV_VARYING:
                v = re.sub(r"\d+", "N", v)
            return NODE.sub("nN", v) if NODE.fullmatch(v) else v

        if norm(gnorm, genv[k]) != norm(onorm, oenv[k]):
            diffs.append(f"{k}={oenv[k]}, golden {genv[k]}")
    return diffs


ENV_LINE = re.compile(r"[A-Za-z_]\w*=")


def _split_at(text: str, marks: list[str]) -> tuple[list[str], list[str]]:
    """The text cut at the marker lines, found in order: (blocks, markers not found)."""
    blocks, current, left = [], [], list(marks)
    for line in text.splitlines(True):
        if left and line.rstrip("\n") == left[0]:
            blocks.append("".join(current))
            current = []
            left.pop(0)
        else:
            current.append(line)
    return [*blocks, "".join(current)], left


def env_dump_differences(
    golden: str, ours: str, gnorm: Norm, onorm: Norm, inherited: dict[str, str] | None = None
) -> list[str]:
    """Environment dumps with text lines between them, each task's against its golden.

    The golden's lines that are not ``NAME=value`` (``=== batch step env``,
    ``task PROCID=1 LOCALID=1 ...``, ``====task1``) must appear in ours in the
    same order, verbatim; they cut both texts into blocks, and the n-th
    block of ours is compared with the golden's n-th by ``env_differences``.
    Example: ``A=1 / ====task1 / A=2`` against ``A=1 / ====task1 / A=3``
    gives ``after '====task1': A=3, golden 2``.
    """
    marks = [x for x in golden.splitlines() if not ENV_LINE.match(x)]
    gblocks, _ = _split_at(golden, marks)
    oblocks, missing = _split_at(ours, marks)
    if missing:
        lines = [x for x in ours.splitlines() if not ENV_LINE.match(x)]
        return [f"line {m!r} missing; ours has {lines}" for m in missing[:1]]
    diffs = []
    for where, g, o in zip(["", *marks], gblocks, oblocks, strict=True):
        said = f"after {where!r}: " if where else ""
        diffs += [said + d for d in env_differences(g, o, gnorm, onorm, inherited)]
    return diffs
