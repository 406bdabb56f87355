"""squeue asks the controller only for the fields it reads: the tables that say which.

``squeue`` lists 10,000 jobs fast by asking for a projection
(``cli.squeue.needed_fields``); a column that read a field left out of
``NEEDS`` would crash, or print a default instead of the truth.  These tests
run every column getter and sort key over varied jobs twice -- on the full
``JobInfo`` and on a row carrying only the listed fields -- and demand the
same text.  Adding a column or a field without updating the tables fails here.
"""

from __future__ import annotations

import dataclasses
from collections import namedtuple

import pytest

from cli import squeue
from cli import squeue_bulk as bulk
from cli import squeue_format as sf
from cli import squeue_sort as ssort
from cli.squeue_sort import sort_letters
from slurmlite.protocol import JobInfo
from tests.cli.test_squeue_format import NOW, job

KNOWN = {f.name for f in dataclasses.fields(JobInfo)}


def samples() -> list[JobInfo]:
    """Jobs that take the branches the getters have (state, None vs set, arrays, groups)."""
    return [
        job(),
        job(8, state="RUNNING", start_time=NOW - 100, nodes=["n1", "n2"], batch_host="n1",
            time_limit=None, group=""),
        job(9, state="COMPLETED", start_time=NOW - 100, end_time=NOW - 10, nodes=["n1"],
            std_out="/o", std_err=None, nodes_max=None, priority=7),
        job(10, state="CANCELLED", flags=["COMPLETING"], start_time=NOW - 100, end_time=NOW - 10,
            nodes=["n1"], std_out=None, exclusive=True),
        job(11, state="FAILED", reason="NonZeroExitCode", state_desc="bad news", exit_code=256),
        job(12, array_job_id=5, array_task_id=3, mem_per_gpu=100, mem_per_node=10,
            mem_per_cpu=None, cpus_per_task=0),
        job(13, state="SUSPENDED", start_time=NOW - 100, mem_per_cpu=5, requeue=True),
        job(14, state="TIMEOUT", start_time=NOW - 100, end_time=NOW + 5, time_limit=1),
        job(15, start_time=NOW + 100, exc_nodes=["n3"], req_nodes=["n1"], comment="c"),
    ]  # fmt: skip


def projected(info: JobInfo, fields: list[str]):  # type: ignore[no-untyped-def]
    """What the controller sends for ``fields`` (each must be a JobInfo field)."""
    assert set(fields) <= KNOWN, f"not JobInfo fields: {set(fields) - KNOWN}"
    return namedtuple("Job", fields)(*(getattr(info, f) for f in fields))


def both_rows(info: JobInfo, fields: list[str]) -> tuple[sf.Row, sf.Row]:
    return sf.Row.of(info), sf.Row.of(projected(info, fields))


@pytest.mark.parametrize("key", sorted(sf.FIELDS))
def test_every_column_reads_only_the_fields_its_needs_entry_lists(key):
    fields = list(dict.fromkeys([*bulk.ROW_NEEDS, *bulk.NEEDS.get(key, ())]))
    ctx = sf.Ctx(NOW)
    for info in samples():
        full, light = both_rows(info, fields)
        assert sf.FIELDS[key].value(light, ctx) == sf.FIELDS[key].value(full, ctx), info.job_id


@pytest.mark.parametrize("letter", sorted(ssort.sort_keys(NOW)) + ["S"])
def test_every_sort_key_reads_only_listed_fields(letter):
    fields = list(dict.fromkeys([*bulk.ROW_NEEDS, *bulk.SORT_NEEDS.get(letter, ())]))
    rows_full = [sf.Row.of(j) for j in samples()]
    rows_light = [sf.Row.of(projected(j, fields)) for j in samples()]
    order_full = [r.job.job_id for r in ssort.sort_rows(rows_full, letter, NOW)]
    order_light = [r.job.job_id for r in ssort.sort_rows(rows_light, letter, NOW)]
    assert order_light == order_full


def test_filters_read_only_the_row_needs_and_their_own():
    queries = [
        squeue.Query(job_ids=[(9, None), (5, 3)]), squeue.Query(accounts=["vision"]),
        squeue.Query(qos=["normal"]), squeue.Query(nodes={"n1"}), squeue.Query(uids={1002}),
        squeue.Query(names=["train"]), squeue.Query(partitions=["gpu"]),
        squeue.Query(states={"RUNNING"}), squeue.Query(all_states=True),
    ]  # fmt: skip
    for q in queries:
        fields = bulk.needed_fields(
            [], sort_letters(None), q
        )  # the row needs + this query's filters
        full = [r.job.job_id for r in squeue.select_rows(samples(), q)]
        light = squeue.select_rows([projected(j, fields) for j in samples()], q)
        assert [r.job.job_id for r in light] == full


def test_tables_name_only_jobinfo_fields_and_the_default_listing_asks_for_few():
    for table in (bulk.NEEDS, bulk.SORT_NEEDS):
        for key, names in table.items():
            assert set(names) <= KNOWN, key
    assert set(bulk.ROW_NEEDS) <= KNOWN
    assert all(set(n) <= KNOWN for n in bulk.FILTER_NEEDS.values())
    columns, _ = sf.parse_format_long(sf.DEFAULT_FORMAT2)
    wanted = bulk.needed_fields(columns, sort_letters(None))
    # the default listing needs the row fields (13: the implicit start-time order reads
    # a pending job's estimate and begin time too; a pending array its task ranges), then
    # user, nodes, end_time and num_nodes for its columns and priority for the default
    # sort: 18 of JobInfo's ~60
    assert set(wanted) == {*bulk.ROW_NEEDS, "user", "nodes", "end_time", "num_nodes", "priority"}
    assert len(wanted) == 18
    assert "steps" not in wanted and "alloc" not in wanted


@pytest.mark.parametrize(
    "fmt",
    [None, "%all", "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", "%5R|%-10j|%3t %N %Z %b"],
)
def test_fast_rendering_prints_what_row_line_prints(fmt):
    """``rows_text`` (column-wise, for big queues) and ``row_line`` (per row) agree."""
    columns, _ = sf.parse_format_long(sf.DEFAULT_FORMAT2) if fmt is None else sf.parse_format(fmt)
    rows = [sf.Row.of(j) for j in samples()]
    ctx = sf.Ctx(NOW)
    assert bulk.rows_text(rows, columns, ctx) == "".join(
        sf.row_line(r, columns, ctx) + "\n" for r in rows
    )
    assert bulk.rows_text([], columns, ctx) == ""


@pytest.mark.parametrize(
    "q",
    [squeue.Query(), squeue.Query(states={"RUNNING", "COMPLETING"}), squeue.Query(all_states=True)],
    ids=["default states", "running+completing", "all"],
)
def test_the_state_only_shortcut_keeps_what_keep_keeps(q):
    jobs = samples()
    by_keep = [r.job.job_id for r in map(sf.Row.of, jobs) if squeue.keep(r, q)]
    rows = [projected(j, bulk.needed_fields([], sort_letters(None), q)) for j in jobs]
    assert [r.job.job_id for r in squeue.select_rows(rows, q)] == by_keep
    assert by_keep  # the samples hold jobs in these states
