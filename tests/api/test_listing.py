"""GET /v1/jobs?fields=...: the projected listing, and the in-memory view that serves it.

The projection must give, field for field, what the whole-job answer gives;
the live-jobs view must equal the store after every kind of write the
controller makes (ORM changes, bulk UPDATEs, INSERTs), on SQLite and
PostgreSQL alike (``harness`` runs each test on both).
"""

from __future__ import annotations

import dataclasses
import threading

from sqlalchemy import delete, select, text, update

from controller.store.job_query import JobQuery
from controller.store.models import JobRow
from controller.store.rows import job_dict
from slurmlite.protocol import JobCompletion, JobInfo
from tests.api.conftest import BOB, ROOT

SQUEUE = ["job_id", "partition", "name", "user", "state", "flags", "num_nodes", "reason", "nodes"]


def rows(h, fields, **params):  # type: ignore[no-untyped-def]
    r = h.client.get("/v1/jobs", params={"fields": ",".join(fields), "all_states": True, **params})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["fields"] == list(fields)
    return body["rows"]


def whole(h, **params):  # type: ignore[no-untyped-def]
    r = h.client.get("/v1/jobs", params={"all_states": True, **params})
    assert r.status_code == 200, r.text
    return r.json()["jobs"]


def in_store(h, fields):  # type: ignore[no-untyped-def]
    """The truth, read through the ORM: every job's fields, in id order."""
    with h.ctl.db.read() as s:
        jobs = [job_dict(r) for r in s.scalars(select(JobRow).order_by(JobRow.id))]
    return [[j[f] for f in fields] for j in jobs]


def a_busy_cluster(h):  # type: ignore[no-untyped-def]
    """Jobs in every listable condition: completed, running on 2 nodes with 4 GPUs,
    cancelled while pending, cancelled while running (completing), pending; their ids."""
    done = h.submit(name="done")["job_id"]
    gpu = h.submit(name="gpu", gpus_per_node=2, tres_per_node="gres:gpu:2", nodes_min=2)["job_id"]
    h.tick()
    h.ctl.jobs.complete(
        "n1", JobCompletion(node="n1", job_id=done, restarts=0, step_id="batch", exit_code=0)
    )
    held = h.submit(name="held", hold=True)["job_id"]
    h.as_user(BOB)
    bobs = h.submit(name="bobs", partition="long", time_limit=30)["job_id"]
    h.as_user(ROOT)
    h.client.post("/v1/jobs/cancel", json={"job_ids": [held]})
    h.tick()  # bobs starts on the CPU n1 has left
    h.client.post("/v1/jobs/cancel", json={"job_ids": [bobs]})  # CANCELLED + COMPLETING
    waits = h.submit(name="waits", gpus_per_node=1, tres_per_node="gres:gpu:1")["job_id"]
    h.tick()  # every GPU is taken: pending, asking for 1
    return [done, gpu, held, bobs, waits]


# ------------------------------------------------------------ the contract


def test_every_field_projects_exactly_what_the_whole_job_answer_holds(harness):
    h = harness
    a_busy_cluster(h)
    names = [f.name for f in dataclasses.fields(JobInfo)]  # every JobInfo field, steps too
    jobs = whole(h, steps=True)
    got = rows(h, names)
    assert len(got) == len(jobs) == 5
    assert got == [[j[f] for f in names] for j in jobs]
    # and without steps asked for (served from memory), the same minus the steps
    no_steps = [f for f in names if f != "steps"]
    assert rows(h, no_steps) == [[j[f] for f in no_steps] for j in jobs]


def test_rows_come_in_job_id_order_with_the_fields_in_the_order_asked(harness):
    h = harness
    ids = [h.submit(name=f"j{i}")["job_id"] for i in range(3)]
    got = rows(h, ["state", "job_id", "name"])
    assert got == [["PENDING", i, f"j{n}"] for n, i in enumerate(ids)]


def test_fields_may_be_repeated_and_comma_separated(harness):
    h = harness
    jid = h.submit()["job_id"]
    r = h.client.get("/v1/jobs", params=[("fields", "job_id,state"), ("fields", "flags")])
    assert r.json() == {"fields": ["job_id", "state", "flags"], "rows": [[jid, "PENDING", []]]}


def test_an_unknown_field_is_a_400_naming_it_even_with_no_jobs(harness):
    h = harness
    for query in ("bogus", "job_id,bogus", "job_id,script"):  # script is a column, not a field
        r = h.client.get("/v1/jobs", params={"fields": query})
        assert r.status_code == 400
        assert r.json()["detail"] == f"Invalid field: {query.split(',')[-1]}"
    h.submit()
    assert h.client.get("/v1/jobs", params={"fields": "nope"}).status_code == 400


def test_without_fields_the_answer_keeps_its_shape(harness):
    h = harness
    jid = h.submit(name="plain")["job_id"]
    body = h.client.get("/v1/jobs").json()
    assert list(body) == ["jobs"]
    [job] = body["jobs"]
    assert (job["job_id"], job["name"], job["steps"]) == (jid, "plain", [])


def test_filters_and_default_states_apply_as_in_the_whole_answer(harness):
    h = harness
    done, gpu, held, bobs, _waits = a_busy_cluster(h)
    by_query = [
        {"users": "bob"},
        {"names": "gpu,held"},
        {"partitions": "long"},
        {"ids": f"{done},{bobs}"},
        {"states": "CANCELLED"},
        {"states": "PENDING,RUNNING"},
    ]
    for params in by_query:
        expect = [[j[f] for f in SQUEUE] for j in whole(h, **params)]
        assert rows(h, SQUEUE, **params) == expect, params
    # without all_states: squeue's default states (pending, running, completing...)
    default = h.client.get("/v1/jobs", params={"fields": "job_id"}).json()["rows"]
    assert default == [[j["job_id"]] for j in h.client.get("/v1/jobs").json()["jobs"]]
    assert [done] not in default and [held] not in default and [gpu] in default


def test_finished_jobs_leave_the_listing_after_min_job_age(harness):
    h = harness
    jid = h.submit()["job_id"]
    h.tick()
    h.ctl.jobs.complete(
        "n1", JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=0)
    )
    h.pass_time(300)  # MinJobAge=300: ended 300 s ago, still shown
    assert rows(h, ["job_id", "state"]) == [[jid, "COMPLETED"]]
    h.pass_time(1)  # 301 s: only sacct sees it now
    assert rows(h, ["job_id"]) == [] and whole(h) == []
    accounted = h.client.get("/v1/accounting").json()["jobs"]
    assert [j["job_id"] for j in accounted] == [jid]
    # a larger MinJobAge (scontrol reconfigure) shows it again: 301 s <= 600 s
    h.ctl.jobs.min_job_age = 600
    assert rows(h, ["job_id"]) == [[jid]]
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


# ------------------------------------------ the in-memory view stays exact


def test_every_kind_of_write_is_seen_by_the_next_listing(harness):
    h = harness
    fields = ["job_id", "state", "flags", "reason", "priority", "nodes", "num_cpus", "comment"]
    ids = a_busy_cluster(h)
    assert rows(h, fields) == in_store(h, fields)  # loaded
    ids.append(h.submit(comment="new")["job_id"])  # a submission (an INSERT)
    assert rows(h, fields) == in_store(h, fields)
    assert rows(h, fields)[-1][-1] == "new"
    with h.ctl.db.write() as s:  # an ORM change
        s.get(JobRow, ids[3]).comment = "orm"
    assert rows(h, fields) == in_store(h, fields)
    with h.ctl.db.write() as s:  # a bulk UPDATE bounded by ids
        s.execute(update(JobRow).where(JobRow.id.in_(ids[:2])).values(priority=7))
    assert rows(h, fields) == in_store(h, fields)
    with h.ctl.db.write() as s:  # a bulk UPDATE with any other WHERE
        s.execute(update(JobRow).where(JobRow.state == "PENDING").values(reason="Priority"))
    assert rows(h, fields) == in_store(h, fields)
    with h.ctl.db.write() as s:  # raw SQL
        s.execute(text("UPDATE jobs SET comment = 'raw' WHERE id = :i"), {"i": ids[0]})
    assert rows(h, fields) == in_store(h, fields)
    with h.ctl.db.write() as s:  # a delete
        s.execute(delete(JobRow).where(JobRow.id == ids[2]))
    assert rows(h, fields) == in_store(h, fields)
    assert [r[0] for r in rows(h, ["job_id"])] == [ids[0], ids[1], ids[3], ids[4], ids[5]]


def test_a_rolled_back_change_is_never_shown(harness):
    h = harness
    jid = h.submit(comment="before")["job_id"]
    assert rows(h, ["comment"]) == [["before"]]
    try:
        with h.ctl.db.write() as s:
            s.get(JobRow, jid).comment = "never"
            s.flush()
            raise RuntimeError("abandon the transaction")
    except RuntimeError:
        pass
    assert rows(h, ["comment"]) == [["before"]]


def test_concurrent_writers_and_readers_end_equal_to_the_store(harness):
    h = harness
    ids = [h.submit()["job_id"] for _ in range(20)]
    stop = threading.Event()
    errors: list[BaseException] = []

    def write(k: int) -> None:
        mine = ids[k::3]  # writer k owns every third job: no other writer changes them
        try:
            for n in range(15):
                jid = mine[n % len(mine)]
                with h.ctl.db.write() as s:
                    s.get(JobRow, jid).priority = k * 100 + n
                # read-your-writes: this thread's next listing shows its change
                [job] = h.ctl.jobs.list_jobs(ROOT, job_ids=[jid], all_states=True)
                assert job.priority == k * 100 + n
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    def read() -> None:
        while not stop.is_set():
            h.ctl.jobs.list_json(ROOT, JobQuery(all_states=True), ["job_id", "priority"])

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(k,)) for k in range(3)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join(timeout=120)
    stop.set()
    for t in readers:
        t.join(timeout=60)
    assert not errors, errors
    assert rows(h, ["job_id", "priority"]) == in_store(h, ["job_id", "priority"])
