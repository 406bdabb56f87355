"""The golden story replayed with real jobs: each LIVE golden file compared by shape.

``golden_scenario.Story`` runs the anchor's story once on the session
cluster (about 15 s) and captures every LIVE file's command at its moment;
each test below compares one capture with its golden file as
``golden_live_specs.SPECS`` says (see ``golden_compare`` for what "same
shape" means).  Known differences that need a code fix are strict xfails
whose reason quotes the difference, so a fix turns them into failures that
ask for the mark to go.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.golden_catalog import LIVE, Golden, load
from tests.e2e.golden_compare import (
    DATE_LINE,
    Norm,
    Table,
    delimited_table,
    env_differences,
    env_dump_differences,
    fixed_table,
    layout_differences,
    record_differences,
    row_differences,
)
from tests.e2e.golden_live_specs import CAPTURE_HOST, GOLDEN_ROLES, SPECS, Spec
from tests.e2e.golden_scenario import Capture, Story
from tests.golden_path import needs_golden

pytestmark = needs_golden

# Differences found by this suite that need a code fix (golden value first).
XFAIL: dict[str, str] = {}


@pytest.fixture(scope="module")
def story(cluster):
    s = Story(cluster, cluster.new_workdir())
    try:
        s.play()
        yield s
    finally:
        s.cleanup()


def norms(story: Story, cap: Capture, spec: Spec) -> tuple[Norm, Norm]:
    """The golden side gets the anchor's environment swapped for ours."""
    u, g = f"{story.user}({story.uid})", f"{story.group}({story.gid})"
    account = cap.account or story.account
    golden = Norm(
        roles={**GOLDEN_ROLES, **cap.golden_roles},
        subst=[
            *((pattern, repl.replace(CAPTURE_HOST, story.host)) for pattern, repl in spec.subst),
            ("/home/alice/work", str(cap.cwd)),
            (r"alice\(1001\)", u),
            (r"\balice\b", story.user),
            # the story's jobs run under acct_a as on the anchor (Story.accounts): no swap;
            # a job another test made (the TIMEOUT one) ran under its own account
            *([] if account == "acct_a" else [(r"\bacct_[ab]\b", account)]),
            (r"\bby 1001\b", f"by {story.uid}"),
        ],
        keyed={
            "GroupId": [(r"alice\(1001\)", g)],
            "SLURM_JOB_UID": [(r"^1001$", str(story.uid))],
            "SLURM_JOB_GID": [(r"^1001$", str(story.gid))],
            "SLURM_SUBMIT_HOST": [(r"^vm$", story.host)],
        },
    )
    ours = Norm(roles={**{i: r for r, i in story.ids.items()}, **cap.our_roles})
    return golden, ours


def table_differences(golden: Golden, cap: Capture, spec: Spec, gn: Norm, on: Norm) -> list[str]:
    gtext, otext, diffs = golden.stdout, cap.stdout, []
    if spec.dated:
        gfirst, _, gtext = gtext.partition("\n")
        ofirst, _, otext = otext.partition("\n")
        if not (DATE_LINE.fullmatch(gfirst) and DATE_LINE.fullmatch(ofirst)):
            diffs.append(f"first line {ofirst!r} is not a date like {gfirst!r}")
    names = list(spec.names) if spec.names else None

    def keep(n: Norm, leave_out: dict[str, str]):  # type: ignore[no-untyped-def]
        def check(first: str) -> bool:
            role = n.role_of(first)
            job = None if role is None else role.split(".")[0].split("_")[0]  # arr_3.batch: arr
            return not spec.keyed or (job is not None and job not in leave_out)

        return check

    def wanted(line: str) -> bool:
        return spec.rows is None or re.search(spec.rows, line) is not None

    gkeep, okeep = keep(gn, spec.skip), keep(on, {**spec.skip, **spec.extra})
    if spec.kind == "fixed":
        first = lambda line: line.split()[0] if line.strip() else ""  # noqa: E731
        gt = fixed_table(gtext, spec.header, names, lambda x: gkeep(first(x)) and wanted(x))
        ot = fixed_table(otext, spec.header, names, lambda x: okeep(first(x)) and wanted(x))
        diffs += layout_differences(gt, ot)
    else:
        gt = delimited_table(
            gtext,
            spec.sep,
            spec.header,
            names,
            lambda x: gkeep(x.split(spec.sep)[0]) and wanted(x),
        )
        ot = delimited_table(
            otext,
            spec.sep,
            spec.header,
            names,
            lambda x: okeep(x.split(spec.sep)[0]) and wanted(x),
        )
    for table in (gt, ot):
        shaped(table, spec.shapes)
    if spec.keyed and not gt.rows:
        diffs.append("no golden row is one of the replayed jobs: the spec compares nothing")
    diffs += row_differences(gt, ot, gn, on, spec.order, set(spec.unordered), keyed=spec.keyed)
    if any(d.startswith("rows missing") for d in diffs):  # which rows did we print?
        diffs.append(f"ours printed {cap.stdout[-800:]!r} (roles {on.roles})")
    return diffs


def shaped(table: Table, shapes: dict[str, str]) -> None:
    """Cells of the ``shapes`` columns that have their column's shape become ``<Column>``
    (a blank cell stays blank, a cell of another shape stays as it is)."""
    for i, name in enumerate(table.names):
        pattern = shapes.get(name)
        if pattern is None:
            continue
        for row in table.rows:
            if i < len(row) and re.fullmatch(pattern, row[i].strip()):
                row[i] = f"<{name}>"


def env_file_differences(
    golden: Golden, cap: Capture, spec: Spec, gn: Norm, on: Norm, inherited: dict[str, str]
) -> list[str]:
    """Each ``[file X]`` of the golden against our file of the same name (the golden's
    job id swapped for ours; ``X (sorted)``: our lines sorted first, as the capture
    did); without file sections the command's stdout is the dump (``srun env``).
    Variables in ``spec.ignore`` are left out on both sides."""

    def compare(gtext: str, otext: str) -> list[str]:
        def kept(text: str) -> str:
            lines = text.splitlines(True)
            return "".join(x for x in lines if x.split("=", 1)[0] not in spec.ignore)

        return env_dump_differences(kept(gtext), kept(otext), gn, on, inherited)

    files = {h.removeprefix("file "): b for h, b in golden.sections.items() if h.startswith("file")}
    if not files:
        return compare(golden.stdout, cap.stdout)
    diffs = []
    if on.text(cap.stdout) != gn.text(golden.stdout):  # "Submitted batch job N"
        diffs.append(f"stdout {cap.stdout!r}, golden {golden.stdout!r}")
        return diffs
    gid, oid = golden.stdout.split()[-1], cap.stdout.split()[-1]
    for header, genv in files.items():
        name = re.sub(rf"(?<=-){gid}(?=[._])", oid, header.removesuffix(" (sorted)"))
        path = cap.cwd / name
        if not path.exists():
            diffs.append(f"no file {name}: {sorted(p.name for p in cap.cwd.iterdir())}")
            continue
        ours = path.read_text()
        if header.endswith(" (sorted)"):
            ours = "".join(sorted(ours.splitlines(True)))
        diffs += [f"{name}: {d}" for d in compare(genv, ours)]
    return diffs


def differences(name: str, story: Story) -> list[str]:
    golden, cap, spec = load(name), story.captures[name], SPECS[name]
    gn, on = norms(story, cap, spec)
    diffs = []
    if spec.kind == "exact":
        gout, oout = gn.swap(golden.stdout).split("\n"), cap.stdout.split("\n")
        for i in spec.id_lines:  # a line that is a job id: the same role on both sides
            gout[i] = gn.job(gout[i])
            if i < len(oout):
                oout[i] = on.job(oout[i])
        if oout != gout:
            diffs.append(f"stdout {oout}, golden {gout}")
    elif spec.kind == "text":
        if on.text(cap.stdout) != gn.text(golden.stdout):
            diffs.append(f"stdout {on.text(cap.stdout)!r}, golden {gn.text(golden.stdout)!r}")
    elif spec.kind in ("fixed", "delimited"):
        diffs += table_differences(golden, cap, spec, gn, on)
    elif spec.kind == "records":
        diffs += record_differences(
            golden.stdout, cap.stdout, gn, on, ignore=spec.ignore, drop=spec.drop
        )
    elif spec.kind == "env":
        diffs += env_file_differences(golden, cap, spec, gn, on, story.cluster.env())
    if on.text(cap.stderr) != gn.text(golden.stderr):  # "srun: job N queued ..."
        diffs.append(f"stderr {cap.stderr!r}, golden {golden.stderr!r}")
    if golden.code is not None and cap.code != golden.code:
        diffs.append(f"exit {cap.code}, golden {golden.code}")
    return diffs


def _marks(name: str):  # type: ignore[no-untyped-def]
    if name in XFAIL:
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=XFAIL[name]))
    return name


@pytest.mark.parametrize("name", [_marks(n) for n in LIVE])
def test_live_shape(story, name):
    if name in story.unavailable:
        pytest.skip(story.unavailable[name])
    diffs = differences(name, story)
    assert not diffs, f"{name}:\n  " + "\n  ".join(diffs)


def test_every_live_file_has_a_spec_and_a_capture(story):
    assert sorted(SPECS) == sorted(LIVE)
    assert sorted(set(story.captures) | set(story.unavailable)) == sorted(LIVE)


# ------------------------------------------- the comparison itself can fail


def test_a_wider_id_keeps_a_right_edge_but_a_moved_edge_is_found():
    golden = fixed_table("   JOBID NAME\n      56 gpu-\n", 1, None, lambda x: True)
    # "123" is one digit wider than "56" yet still ends at position 8, under "JOBID"
    wider = fixed_table("   JOBID NAME\n     123 gpu-\n", 1, None, lambda x: True)
    assert layout_differences(golden, wider) == []
    # here it ends at 7: the column is no longer right-justified
    moved = fixed_table("   JOBID NAME\n    123  gpu-\n", 1, None, lambda x: True)
    assert layout_differences(golden, moved) == [
        "column JOBID: ' 123 ' is not right-justified as in golden"
    ]


def test_rows_are_matched_by_role_and_compared_cell_by_cell():
    golden = delimited_table("JobID|State|ExitCode\n66|FAILED|1:0\n", "|", 1, None, bool)
    ours = delimited_table("JobID|State|ExitCode\n7|FAILED|3:0\n", "|", 1, None, bool)
    g, o = Norm({66: "fail1"}), Norm({7: "fail1"})
    assert row_differences(golden, ours, g, o, "id") == [
        "row fail1: ['<fail1>', 'FAILED', '3:0'], golden ['<fail1>', 'FAILED', '1:0']"
    ]


def test_records_compare_keys_in_order_and_normalise_times():
    golden = "JobId=50 JobName=x\n   SubmitTime=2026-11-30T02:29:09 Partition=debug\n"
    ours = "JobId=9 JobName=x\n   SubmitTime=2031-01-01T00:00:00 Partition=debug\n"
    g, o = Norm({50: "big"}), Norm({9: "big"})
    assert record_differences(golden, ours, g, o) == []
    swapped = "JobId=9 JobName=x\n   Partition=debug SubmitTime=2031-01-01T00:00:00\n"
    assert record_differences(golden, swapped, g, o) == [
        "record 0: line keys '   '['Partition', 'SubmitTime'], golden '   '['SubmitTime', 'Partition']"
    ]


def test_environments_compare_names_and_values_but_not_pids():
    golden = "HOME=/home/alice\nSLURM_JOB_ID=24\nSLURM_TASK_PID=10552\nSLURM_NTASKS=1\n"
    g, o = Norm({24: "env"}), Norm({7: "env"})
    same = "HOME=/root\nSLURM_JOB_ID=7\nSLURM_TASK_PID=99\nSLURM_NTASKS=1\nSLURMLITE_INJECTED=X\n"
    assert env_differences(golden, same, g, o) == []  # HOME is the login's, not Slurm's
    other = "SLURM_JOB_ID=7\nSLURM_TASK_PID=99\nSLURM_NTASKS=2\nSLURM_EXTRA=1\n"
    assert env_differences(golden, other, g, o) == [
        "extra SLURM_EXTRA=1",
        "SLURM_NTASKS=2, golden 1",
    ]
    assert env_differences(golden, "SLURM_JOB_ID=7\n", g, o) == [
        "missing SLURM_NTASKS=1",
        "missing SLURM_TASK_PID=10552",
    ]
    # passed through unchanged from the submitter: the user's, not the step's
    assert env_differences(golden, other, g, o, {"SLURM_EXTRA": "1"}) == [
        "SLURM_NTASKS=2, golden 1"
    ]
    assert env_differences(golden, other, g, o, {"SLURM_EXTRA": "2"})[0] == "extra SLURM_EXTRA=1"


def test_each_task_s_environment_is_compared_with_its_golden_task():
    golden = "=== batch\nSLURM_PROCID=0\n====task1\nSLURM_PROCID=1\n"
    g, o = Norm({}), Norm({})
    assert env_dump_differences(golden, golden, g, o) == []
    swapped = "=== batch\nSLURM_PROCID=1\n====task1\nSLURM_PROCID=0\n"
    assert env_dump_differences(golden, swapped, g, o) == [
        "after '=== batch': SLURM_PROCID=1, golden 0",
        "after '====task1': SLURM_PROCID=0, golden 1",
    ]
    # a text line of the golden (srun's "task PROCID=..." echo, say) must be there too
    assert env_dump_differences(golden, "SLURM_PROCID=0\n", g, o) == [
        "line '=== batch' missing; ours has []"
    ]


@pytest.mark.parametrize(
    "name", [n for n in LIVE if SPECS[n].kind in ("fixed", "delimited", "records")]
)
def test_each_golden_file_has_the_shape_of_itself(name):
    golden = load(name)
    spec = SPECS[name]
    roles = {**GOLDEN_ROLES, 18: "tmo"}
    cap = Capture(golden.stdout, golden.stderr, golden.code or 0, Path("/home/alice/work"))
    n = Norm(roles)
    if spec.kind == "records":
        assert record_differences(golden.stdout, cap.stdout, n, n, drop=spec.drop) == []
    else:
        assert table_differences(golden, cap, spec, n, n) == []
