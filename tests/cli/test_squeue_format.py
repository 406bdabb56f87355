"""squeue's pure parts: cells, format parsing, field values, ordering, arrays."""

from __future__ import annotations

import os
import random
import time

import pytest

from cli import squeue
from cli import squeue_format as sf
from cli import squeue_sort as ssort
from cli.squeue_format import Ctx, Row
from slurmlite.protocol import JobInfo
from slurmlite.taskranges import format_task_ranges, parse_task_ranges

NOW = 1_000_000.0


def job(job_id: int = 7, **kw: object) -> JobInfo:
    fields: dict[str, object] = dict(
        job_id=job_id, name="train", user="bob", uid=1002, gid=1002, group="bob",
        account="vision", qos="normal", partition="gpu", state="PENDING", flags=[],
        reason="Priority", priority=100, submit_time=NOW - 600, work_dir="/w",
        submit_dir="/w", num_nodes=1, num_cpus=2, num_tasks=1, cpus_per_task=2, time_limit=60,
    )  # fmt: skip
    fields.update(kw)
    return JobInfo(**fields)  # type: ignore[arg-type]


def line(fmt: str, info: JobInfo, now: float = NOW) -> str:
    columns, problems = sf.parse_format(fmt)
    assert problems == []
    return sf.row_line(Row.of(info), columns, Ctx(now=now))


# ------------------------------------------------------------------- cells


@pytest.mark.parametrize(
    ("text", "width", "right", "cut", "want"),
    [
        ("big-running", 8, True, True, "big-runn"),  # right-justified, cut keeps the left
        ("0:09", 10, True, False, "      0:09"),
        ("1-00:00:00:00", 5, True, False, "1-00:00:00:00"),  # uncut fields overflow
        ("1-00:00:00:00", 5, False, False, "1-00:"),  # left-justified always cuts
        ("ab", 5, False, True, "ab   "),
        ("anything", 0, False, True, "anything"),
        (None, 8, True, True, "  (null)"),
        (None, 20, False, True, "(null)" + " " * 14),
        (None, 3, False, True, "   "),  # glibc prints nothing for %.3s of NULL
    ],
)
def test_cell(text, width, right, cut, want):
    assert sf.cell(text, width, right, cut) == want


@pytest.mark.parametrize(
    ("mb", "want"),
    [(0, "0"), (1000, "1000M"), (1024, "1G"), (2560, "2.50G"), (4000, "4000M"), (1048576, "1T")],
)
def test_memory_units_scale_only_when_exact(mb, want):
    # 2560 MB = 2.5 * 1024: halves still count as exact in Slurm
    assert sf.convert_mb(mb) == want


# ----------------------------------------------------------------- parsing


def test_format_prefix_and_percent_pairs():
    columns, problems = sf.parse_format("id=%.4i%%|%t!")
    # pieces between '%': ".4i", "", "|", "t!" -- "%%" is no escape: the empty
    # piece vanishes and "|" becomes an unknown letter printed as "%|"
    assert problems == ["Invalid job format specification: |"]
    assert sf.row_line(Row.of(job()), columns, Ctx(NOW)) == "id=   7%|PD!"
    assert sf.parse_format("no percent at all")[0][0].suffix == "no percent at all"


def test_unknown_letter_is_kept_literally_with_an_error():
    columns, problems = sf.parse_format("%i %=5 %t")
    assert problems == ["Invalid job format specification: ="]
    assert sf.row_line(Row.of(job(state="RUNNING")), columns, Ctx(NOW)) == "7 %=5 R"


def test_all_letters_format_skips_unknown_letters_silently():
    columns, problems = sf.parse_format("%all")
    assert problems == []
    headers = sf.header_line(columns).split("|")
    assert headers[:3] == ["ACCOUNT", "TRES_PER_NODE", "MIN_CPUS"]  # %a %b %c
    assert len(headers) == len(sf.SHORT)  # every known letter once


def test_long_format_widths_justification_and_suffix():
    columns, problems = sf.parse_format_long("name:.6|,state,bogus:3x,jobid:")
    assert problems == ["Invalid job format specification: bogus"]
    # name right-justified 6 + "|", state default 20 left, bogus -> its suffix "x", jobid width 0
    assert sf.header_line(columns) == "  NAME|STATE               xJOBID"
    assert sf.row_line(Row.of(job()), columns, Ctx(NOW)) == " train|PENDING             x7"


def test_default_and_long_formats_headers():
    default, _ = sf.parse_format_long(sf.DEFAULT_FORMAT2)
    long, _ = sf.parse_format_long(sf.LONG_FORMAT2)
    assert (
        sf.header_line(default)
        == "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"
    )
    assert sf.header_line(long).split()[4:7] == ["STATE", "TIME", "TIME_LIMI"]  # cut to 9


# ------------------------------------------------------------------ values


def test_reason_column_pending_failed_and_completing():
    assert line("%R", job()) == "(Priority)"
    assert (
        line("%R", job(state_desc="ReqNodeNotAvail, UnavailableNodes:n1"))
        == "(ReqNodeNotAvail, UnavailableNodes:n1)"
    )
    assert (
        line("%R", job(state="FAILED", reason="NonZeroExitCode", nodes=["n1"]))
        == "(NonZeroExitCode)"
    )
    assert line("%R", job(state="TIMEOUT", reason="TimeLimit", nodes=["n1"])) == "(TimeLimit)"
    # completing jobs and finished-fine jobs show their (sorted, compressed) nodes
    flags = ["COMPLETING"]
    assert line("%R", job(state="FAILED", flags=flags, nodes=["n2", "n1"])) == "n[1-2]"
    assert line("%R", job(state="CANCELLED", reason="None")) == ""


def test_times_used_left_and_limits():
    running = job(state="RUNNING", start_time=NOW - 3723, time_limit=120)
    # used 3723 s = 1:02:03; left 7200 - 3723 = 3477 s = 57:57
    assert line("%M|%l|%L", running) == "1:02:03|2:00:00|57:57"
    assert line("%M|%l|%L", job(time_limit=None)) == "0:00|UNLIMITED|UNLIMITED"
    ended = job(state="COMPLETED", start_time=NOW - 100, end_time=NOW - 40)
    assert line("%M", ended) == "1:00"  # end - start, not now - start
    ancient = job(state="RUNNING", start_time=NOW - 366 * 86400)
    assert line("%M", ancient) == "INVALID"  # more than a year


@pytest.fixture
def utc():
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def test_end_time_none_for_unlimited_running_jobs(utc):
    assert line("%e", job(state="RUNNING", start_time=NOW, time_limit=None)) == "NONE"
    # start 500000 s + 60 min = 503600 s = 5 days 19:53:20 after the epoch
    assert line("%e", job(state="RUNNING", start_time=5e5, time_limit=60)) == "1970-01-06T19:53:20"
    assert line("%e|%S", job()) == "N/A|N/A"
    # pending until its --begin (golden 50_squeue_o_many, "later"): ends NONE, or start + limit
    later = dict(state="PENDING", reason="BeginTime", eligible_time=5e5)
    assert line("%S|%e", job(**later, time_limit=None)) == "1970-01-06T18:53:20|NONE"
    assert line("%e", job(**later, time_limit=60)) == "1970-01-06T19:53:20"


def test_array_ids_and_priority():
    task = job(25, array_job_id=24, array_task_id=0)
    assert line("%i|%A|%F|%K", task) == "24_0|25|24|0"
    plain = job(priority=5725)
    assert line("%i|%F|%K|%Q|%p", plain) == "7|7|N/A|5725|0.00000133295544"


def test_array_task_ranges():
    assert parse_task_ranges("0-9%2") == list(range(10))
    assert parse_task_ranges("1,3-7:2") == [1, 3, 5, 7]
    assert format_task_ranges([5, 0, 1, 2, 9]) == "0-2,5,9"


# ---------------------------------------------------------------- ordering


def test_parse_sort_applies_keys_last_first():
    assert ssort.parse_sort("P,t,-p") == [("p", True), ("t", False), ("P", False)]
    assert ssort.parse_sort("-cluster,i") == [("i", False)]
    with pytest.raises(ValueError, match="Invalid sort specification: Y"):
        ssort.parse_sort("Y")


def glibc_merge_sort(items: list[Row], cmp) -> list[Row]:
    """Reference: glibc's qsort shape (top-down, left half n//2, ties take the left)."""
    if len(items) <= 1:
        return list(items)
    left = glibc_merge_sort(items[: len(items) // 2], cmp)
    right = glibc_merge_sort(items[len(items) // 2 :], cmp)
    out: list[Row] = []
    while left and right:
        out.append(left.pop(0) if cmp(left[0], right[0]) <= 0 else right.pop(0))
    return out + left + right


def squeue_start_cmp(a: Row, b: Row) -> int:
    """squeue's start-time comparator with reverse order (latest first)."""
    if not a.job.start_time:
        return 1
    if not b.job.start_time:
        return -1
    return (b.job.start_time > a.job.start_time) - (b.job.start_time < a.job.start_time)


def test_jobs_without_start_time_come_out_reversed():
    rows = [
        Row.of(job(i, start_time=s))
        for i, s in ((1, None), (2, 50.0), (3, None), (4, 80.0), (5, None))
    ]
    # started jobs latest first (4 at 80 s, 2 at 50 s), then 5 3 1: reversed
    assert [r.job.job_id for r in ssort.start_order(rows, None, reverse=True)] == [4, 2, 5, 3, 1]


@pytest.mark.parametrize("seed", range(20))
def test_start_order_equals_glibc_merge_sort(seed):
    rng = random.Random(seed)
    rows = [
        Row.of(job(i, start_time=rng.choice([None, None, 10.0, 20.0, 30.0])))
        for i in range(rng.randint(0, 40))
    ]
    want = glibc_merge_sort(rows, squeue_start_cmp)
    assert [r.job.job_id for r in ssort.start_order(rows, None, reverse=True)] == [
        r.job.job_id for r in want
    ]


def test_sort_keys_are_stable_and_reversible():
    rows = [Row.of(job(i, priority=p)) for i, p in ((1, 5), (2, 9), (3, 5), (4, 9))]
    # -p: priority descending, equal priorities keep their order (after the
    # start-time pass, which reverses these never-started jobs: 4 3 2 1)
    assert [r.job.job_id for r in ssort.sort_rows(rows, "-p", NOW)] == [4, 2, 3, 1]
    assert [r.job.job_id for r in ssort.sort_rows(rows, "p,i", NOW)] == [1, 3, 2, 4]


def test_pending_array_tasks_fold_into_the_array_row():
    meta = job(40, array_job_id=40)
    meta.array_task_str = "3-4"  # type: ignore[attr-defined]
    split = job(41, array_job_id=40, array_task_id=0, reason="Resources")
    other = job(42, array_job_id=40, array_task_id=1, name="other-name")
    rows = squeue.select_rows([meta, split, other], squeue.Query())
    assert [sf.job_id_text(r) for r in rows] == ["40_[0,3-4]", "40_1"]
    assert sf.reason_text(rows[0].job) == "Priority,Resources"


def test_job_filter_keeps_part_of_a_pending_array():
    meta = job(57, array_job_id=57)
    meta.array_task_str = "0-9%2"  # type: ignore[attr-defined]
    q = squeue.Query(job_ids=squeue.parse_job_list("57_5,57_7"))
    rows = squeue.select_rows([meta, job(58)], q)
    assert [sf.job_id_text(r) for r in rows] == ["57_[5,7]"]
    rows = squeue.select_rows([meta], squeue.Query(job_ids=[(57, 3)]))
    assert [sf.job_id_text(r) for r in rows] == ["57_3"]
