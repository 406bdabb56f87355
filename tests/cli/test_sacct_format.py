"""sacct's pure column parsing, values and printing (spec §8.3, golden 60_sacct_*)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from cli import sacct_format as af
from slurmlite.errors import CommandLineError
from slurmlite.protocol import JobInfo, NodeAlloc, StepInfo
from tests.golden_path import golden_path

FIXED = af.Style()
P2 = af.Style(parsable="P")


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def a_job(**kw: object) -> JobInfo:
    fields: dict[str, object] = dict(
        job_id=65, name="ok", user="alice", uid=1001, gid=1001, group="alice", account="acct_a",
        qos="normal", partition="debug", state="COMPLETED", flags=[], reason="None", priority=1,
        submit_time=1796005773.0, work_dir="/w", submit_dir="/w", num_nodes=1, num_cpus=1,
        num_tasks=1, cpus_per_task=1, time_limit=None, start_time=1796005774.0,
        end_time=1796005784.0, nodes=["n1"], alloc=[NodeAlloc("n1", 1, 1000)], mem_per_cpu=1000,
        exit_code=0,
    )  # fmt: skip
    fields.update(kw)
    return JobInfo(**fields)  # type: ignore[arg-type]


def values(spec: str, job: JobInfo, step: StepInfo | None = None) -> list[af.Value]:
    return af.row_values(
        af.parse_fields(spec + ","), job, step, af.Ctx(now=1796005800.0, cluster="anchor")
    )


# ------------------------------------------------------------ --format


def test_names_are_case_insensitive_prefixes_in_table_order() -> None:
    cols = af.parse_fields("jobid,JOBIDRAW,st,nodel,alloctres,")
    # "st" is a prefix of Start (before State in the table), "nodel" of NodeList
    assert [c.name for c in cols] == ["JobID", "JobIDRaw", "Start", "NodeList", "AllocTRES"]
    assert [c.width for c in cols] == [-12, -12, 19, 15, 10]


def test_percent_width_and_last_width_wins_for_repeated_field() -> None:
    cols = af.parse_fields("JobID%-20,State%5,jobid%7,")
    # the table keeps one width per field: both JobID columns end up 7 wide
    assert [(c.name, c.width) for c in cols] == [("JobID", 7), ("State", 5), ("JobID", 7)]


def test_all_and_empty_item() -> None:
    assert len(af.parse_fields("ALL,")) == len(af.FIELDS)
    # an empty item ends the list, as in sacct
    assert [c.name for c in af.parse_fields("jobid,,state,")] == ["JobID"]


def test_unknown_and_removed_fields() -> None:
    # the level is part of the line: "error" or "fatal" (both exit 1)
    with pytest.raises(CommandLineError) as exc:
        af.parse_fields("jobid,bogus%9,")
    assert exc.value.lines == ['sacct: error: Invalid field requested: "bogus"']
    assert exc.value.exit_code == 1
    with pytest.raises(CommandLineError) as exc:
        af.parse_fields("allocgres,")
    assert exc.value.lines == ["sacct: fatal: AllocGRES has been removed, please use AllocTRES"]
    assert exc.value.exit_code == 1


def test_helpformat_matches_golden() -> None:
    path = golden_path("60_sacct_helpformat.txt")
    expected = "".join(line + "\n" for line in path.read_text().splitlines()[1:-1])
    assert af.helpformat_text() == expected


# ------------------------------------------------------------- printing


def test_fixed_width_cuts_text_with_plus_and_pads_with_one_space() -> None:
    cols = af.parse_fields("jobid,state,alloccpus%2,start%10,")
    row = af.render_row(cols, ["65", "CANCELLED by 1001", 1234, 1796005774.0], FIXED)
    # text: cut to 10 with '+'; numbers overflow; dates are cut silently
    assert row == "65           CANCELLED+ 1234 2026-11-30 "


def test_header_and_dashes() -> None:
    cols = af.parse_fields("JobID%-6,JobName%3,")
    assert af.header_lines(cols, FIXED) == ["JobID  Job ", "------ --- "]


def test_unset_values_print_blank() -> None:
    cols = af.parse_fields("partition,ntasks,elapsed,")
    assert af.render_row(cols, [None, None, None], FIXED) == " " * 11 + " " * 9 + " " * 11


def test_parsable_styles_and_delimiter() -> None:
    cols = af.parse_fields("jobid,state,")
    vals: list[af.Value] = ["65", "COMPLETED"]
    assert af.render_row(cols, vals, af.Style(parsable="p")) == "65|COMPLETED|"
    assert af.render_row(cols, vals, P2) == "65|COMPLETED"
    assert af.render_row(cols, vals, af.Style(parsable="P", delimiter=";;")) == "65;;COMPLETED"
    assert af.header_lines(cols, af.Style(parsable="p")) == ["JobID|State|"]


# --------------------------------------------------------------- values


def test_finished_job_and_batch_step() -> None:
    job = a_job()
    step = StepInfo(65, "batch", "batch", "COMPLETED", 0, 1796005774.0, None, ["n1"], 1)
    spec = "jobid,jobname,elapsed,end,alloctres,reqtres,partition,reqmem,cputimeraw"
    # the job ran 10 s on 1 CPU; the step inherits the job's end time
    assert values(spec, job) == ["65", "ok", 10, 1796005784.0, "billing=1,cpu=1,mem=1000M,node=1",
                                 "billing=1,cpu=1,mem=1000M,node=1", "debug", "1000M", 10]  # fmt: skip
    assert values(spec, job, step) == ["65.batch", "batch", 10, 1796005784.0, "cpu=1,mem=1000M,node=1",
                                       None, None, None, 10]  # fmt: skip


def test_pending_job_has_no_allocation() -> None:
    job = a_job(state="PENDING", start_time=None, end_time=None, nodes=[], alloc=[], num_cpus=2,
                exit_code=None)  # fmt: skip
    # requested: 2 CPUs x 1000 MB per CPU = 2000M
    assert values("nodelist,alloctres,reqtres,alloccpus,exitcode,elapsed,start", job) == [
        "None assigned",
        None,
        "billing=2,cpu=2,mem=2000M,node=1",
        2,
        "0:0",
        0,
        None,
    ]


def test_cancelled_state_names_the_canceller_and_exit_codes() -> None:
    assert values("state", a_job(state="CANCELLED", cancelled_by=1001)) == ["CANCELLED by 1001"]
    assert values("state", a_job(state="CANCELLED")) == ["CANCELLED"]
    # raw wait statuses: exit 3 -> 3:0, SIGKILL -> 0:9, a shell's 137 -> 9:0
    assert values("exitcode", a_job(exit_code=3 << 8)) == ["3:0"]
    assert values("exitcode", a_job(exit_code=9)) == ["0:9"]
    assert values("exitcode", a_job(exit_code=137 << 8)) == ["9:0"]
    assert values("derivedexitcode", a_job(derived_exit_code=1 << 8)) == ["1:0"]


def test_job_ids_of_arrays() -> None:
    task = a_job(job_id=24, array_job_id=24, array_task_id=1)
    assert values("jobid,jobidraw", task) == ["24_1", "24"]
    pending = a_job(job_id=57, array_job_id=57, state="PENDING")
    pending.array_task_str = "0-9%2"  # type: ignore[attr-defined]
    assert values("jobid", pending) == ["57_[0-9%2]"]


def test_time_limits_and_reason() -> None:
    assert values("timelimit,timelimitraw", a_job(time_limit=None)) == ["UNLIMITED", "UNLIMITED"]
    assert values("timelimit,timelimitraw", a_job(time_limit=61)) == ["01:01:00", "61"]
    # reasons set at the end (or the scheduler's Priority) are not "previous" reasons
    assert values("reason", a_job(reason="NonZeroExitCode")) == ["None"]
    assert values("reason", a_job(state="CANCELLED", reason="Dependency")) == ["Dependency"]


def test_gpus_and_memory_units() -> None:
    job = a_job(num_cpus=2, gpus=2, alloc=[NodeAlloc("n1", 2, 2048, [0, 1])])
    assert values("alloctres", job) == ["billing=2,cpu=2,gres/gpu=2,mem=2G,node=1"]
    assert af.convert_mb(2560) == "2.50G"
    assert af.convert_mb(2048, convert=False) == "2048M"


def test_job_row_of_a_job_the_controller_ended_keeps_exit_0_0() -> None:
    # golden 60_sacct_j_states: TIMEOUT 0:0 on the job row while scontrol shows 0:15
    assert values("exitcode", a_job(state="TIMEOUT", exit_code=15)) == ["0:0"]
    assert values("exitcode", a_job(state="CANCELLED", exit_code=15)) == ["0:0"]
    assert values("exitcode", a_job(state="FAILED", exit_code=9)) == ["0:9"]
