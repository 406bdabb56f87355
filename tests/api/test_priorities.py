"""Multifactor priority in the controller: submit, recalculation, usage, scontrol update, sprio.

The cluster of ``tests/api/conftest.py``: n1, n2 with 2 CPUs each, so N = 2
nodes and C = 4 CPUs; partitions debug and long (PriorityJobFactor 1 each).
alice (1001) owns the jobs unless a test says otherwise; root is an operator.
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from controller.accounting.priority_facts import compact_json, encode
from controller.api.app import create_app
from controller.api.deps import get_user
from controller.context import Controller
from controller.store.db import Database
from controller.store.models import AssocRow
from slurmlite import errors
from slurmlite.clock import FakeClock
from slurmlite.config import parse_config
from slurmlite.protocol import JobCompletion
from slurmlite.scheduler.multifactor import (
    AgeOnly,
    ClusterFacts,
    JobFacts,
    PartitionFacts,
    PriorityParams,
    multifactor,
)
from slurmlite.scheduler.usage import decay_factor
from tests.api.conftest import ALICE, BOB, CONF, KEY, ROOT, Harness, register
from tests.recording_agents import RecordingAgentClient

SIZE_AND_PART = """
PriorityWeightJobSize=1000
PriorityWeightPartition=1000
"""


@pytest.fixture
def make(tmp_path, store_url):
    """``make(extra)``: the conftest harness with ``extra`` slurm.conf lines."""
    built: list[Harness] = []

    def build(extra: str = "") -> Harness:
        text = CONF.format(dir=tmp_path).replace("NodeName=", extra.strip() + "\nNodeName=", 1)
        cfg = parse_config(text, path=str(tmp_path / "slurm.conf"))
        clock = FakeClock(1_800_000_000.0)
        agents = RecordingAgentClient()
        ctl = Controller(cfg, KEY, db=Database(store_url), agents=agents, clock=clock)
        app = create_app(ctl, run_loop=False)
        h = Harness(ctl=ctl, clock=clock, agents=agents, client=TestClient(app))
        app.dependency_overrides[get_user] = lambda: h.who[0]
        register(ctl, "n1")
        register(ctl, "n2")
        built.append(h)
        return h

    yield build
    for h in built:
        h.ctl.db.close()


def update(h, jid: int, **changes) -> int:  # type: ignore[no-untyped-def]
    r = h.client.post("/v1/jobs/update", json={"job_ids": [jid], **changes})
    assert r.status_code == 200, r.text
    return r.json()["results"][0]["errno"]


def factors(h, jid: int) -> dict:  # type: ignore[no-untyped-def]
    """The job's sprio row (GET /v1/priorities)."""
    rows = h.client.get("/v1/priorities", params={"ids": jid}).json()["jobs"]
    assert len(rows) == 1
    return rows[0]


# ------------------------------------------------------------------- FIFO


def test_all_weights_zero_gives_every_job_1_and_the_queue_runs_in_submit_order(make):
    h = make()  # no PriorityWeight* key: every weight 0
    whole = {"nodes_min": 2, "ntasks": 4}  # each job needs the whole cluster
    ids = [h.submit(**whole)["job_id"] for _ in range(3)]
    assert [h.job(j)["priority"] for j in ids] == [1, 1, 1]
    h.pass_time(600)
    h.ctl.priorities.recalc(h.clock())  # age weight 0: waiting changes nothing
    assert [h.job(j)["priority"] for j in ids] == [1, 1, 1]
    h.tick()  # equal priorities: submit time decides, the first job starts
    assert [h.job(j)["state"] for j in ids] == ["RUNNING", "PENDING", "PENDING"]
    [launch] = h.agents.take("launch", 1)
    assert launch.spec.job_id == ids[0]
    h.agents.assert_nothing_else()


# -------------------------------------------------------------------- age


def test_age_factor_grows_with_each_recalculation_up_to_max_age(make):
    # PriorityMaxAge=100 minutes = 6000 s; weight 1000
    h = make("PriorityWeightAge=1000\nPriorityMaxAge=100")
    jid = h.submit(hold=True)["job_id"]  # held: not eligible, age stays 0
    other = h.submit(nodes_min=2, ntasks=4)["job_id"]
    assert h.job(other)["priority"] == 1  # age 0 at submit: raw 0 -> 1
    h.pass_time(3000)
    h.ctl.priorities.recalc(h.clock())
    # 3000 s of 6000: factor 0.5, weighted 500
    assert h.job(other)["priority"] == 500
    row = factors(h, other)["factors"]
    assert (row["norm"]["age"], row["weighted"]["age"], row["direct"]) == (0.5, 500.0, False)
    assert h.job(jid)["priority"] == 0  # a held job stays 0
    h.pass_time(6000)  # 9000 s waited, capped at PriorityMaxAge
    h.ctl.priorities.recalc(h.clock())
    assert h.job(other)["priority"] == 1000


def test_maybe_recalc_waits_for_priority_calc_period(make):
    h = make("PriorityWeightAge=1000\nPriorityMaxAge=100\nPriorityCalcPeriod=2")
    svc = h.ctl.priorities
    assert svc.period == 120.0  # 2 minutes
    assert svc.maybe_recalc(h.clock()) is True  # never ran: runs at once
    assert svc.maybe_recalc(h.clock() + 119) is False
    assert svc.maybe_recalc(h.clock() + 120) is True


def test_the_age_shortcut_equals_the_pure_formula():
    # the service keeps a shape evaluated with age 0 (multifactor.AgeOnly) and stores its
    # breakdown at each age as JSON; value and text must be exactly what multifactor()
    # and encode() give with the age in
    params = PriorityParams(age=1000, fairshare=10000, jobsize=1000, partition=1000, qos=7,
                            tres={"cpu": 333.3}, max_age=6000)  # fmt: skip
    cluster = ClusterFacts(nodes=3, cpus=17, max_qos_priority=9)
    part = PartitionFacts(name="p", tres_total={"cpu": 17})
    common = {"cluster": cluster, "partition": part, "fairshare": 0.37, "qos_priority": 4}
    job = JobFacts(min_nodes=1, cpus=3, tres={"cpu": 3}, nice=11, submit_time=0.0)
    shape = AgeOnly(multifactor(job, params, now=0.0, **common), params.age)
    for waited in (0, 1, 77, 2999, 6000, 10**6):
        aged = JobFacts(**{**job.__dict__, "accrue_time": 0.0})
        want = multifactor(aged, params, now=float(waited), **common)
        age = min(1.0, waited / 6000)
        got = (shape.value(age), compact_json(shape.as_dict(age)))
        assert got == (want.value, encode(want)), waited
        assert json.loads(got[1]) == want.as_dict()


# ------------------------------------------------------------------ usage


def _usage(h, account: str, user: str) -> float:  # type: ignore[no-untyped-def]
    with h.ctl.db.read() as s:
        row = s.get(AssocRow, (account, user))
        return row.raw_usage if row is not None else 0.0


def test_usage_is_charged_to_the_jobs_association_then_decays(make):
    # half-life 60 minutes: D = 1 - 0.693/3600 per second
    h = make("PriorityWeightFairshare=10000\nPriorityDecayHalfLife=60")
    d = decay_factor(3600.0)
    h.as_user(BOB)
    h.submit(hold=True)  # bob gets an association, and no usage
    h.as_user(ALICE)
    jid = h.submit(ntasks=2)["job_id"]  # 2 CPUs, billed by CPU (no TRESBillingWeights)
    h.tick()  # the first recalculation, then the start
    assert h.job(jid)["state"] == "RUNNING"
    account = h.job(jid)["account"]
    h.pass_time(600)
    h.ctl.priorities.recalc(h.clock())
    first = 600 * d**600 * 2  # 600 s x D^600 x 2 CPUs ~ 1069.1
    assert _usage(h, account, "alice") == pytest.approx(first)
    assert _usage(h, account, "bob") == 0.0
    fs = h.ctl.priorities.fairshare()
    assert fs.factor(account, "bob") > fs.factor(account, "alice")  # bob used less
    h.pass_time(300)
    done = JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=0)
    assert h.ctl.jobs.complete("n1", done) is True  # ends 900 s after its start
    h.pass_time(300)
    h.ctl.priorities.recalc(h.clock())
    # the old usage decays 600 s; the last 300 s of the run are charged once, up to its end
    second = first * d**600 + 300 * d**300 * 2
    assert _usage(h, account, "alice") == pytest.approx(second)
    h.pass_time(3600)
    h.ctl.priorities.recalc(h.clock())  # nothing runs: one half-life of decay, ~0.5
    assert _usage(h, account, "alice") == pytest.approx(second * d**3600)
    assert 0.49 < d**3600 < 0.51
    [launch] = h.agents.take("launch", 1)  # the job's batch script, nothing more
    assert launch.spec.job_id == jid
    h.agents.assert_nothing_else()


# --------------------------------------------------------- scontrol update


def test_admin_priority_replaces_the_formula_and_nice_moves_the_owners_job(make):
    h = make(SIZE_AND_PART)
    jid = h.submit()["job_id"]  # 1 node, 1 CPU
    # job size (1/2 + 1/4) / 2 = 0.375 -> 375; partition 1/1 -> 1000
    assert h.job(jid)["priority"] == 1375
    assert update(h, jid, nice=100) == 0  # the owner may lower it
    assert h.job(jid)["priority"] == 1275
    assert update(h, jid, nice=-5) == errors.ESLURM_ACCESS_DENIED  # only an operator
    assert update(h, jid, priority=9999) == errors.ESLURM_ACCESS_DENIED
    assert update(h, jid, priority=10) == errors.ESLURM_PRIO_RESET_FAIL
    assert h.job(jid)["priority"] == 1275  # refusals change nothing
    h.as_user(ROOT)
    assert update(h, jid, nice=-5) == 0
    assert h.job(jid)["priority"] == 1380
    assert update(h, jid, priority=5000) == 0
    job = h.job(jid)
    assert (job["priority"], job["nice"]) == (5000, 0)  # Priority= resets nice, as Slurm
    row = factors(h, jid)
    assert (row["priority"], row["factors"]["direct"], row["factors"]["weighted"]["jobsize"]) == (
        5000,
        True,
        0.0,
    )
    h.pass_time(600)
    h.ctl.priorities.recalc(h.clock())
    assert update(h, jid, nice=50) == 0  # ignored while an operator's value holds
    assert h.job(jid)["priority"] == 5000


def test_priority_0_holds_and_a_release_brings_the_formula_back(make):
    h = make(SIZE_AND_PART)
    jid = h.submit()["job_id"]
    h.as_user(ROOT)
    assert update(h, jid, priority=7000) == 0
    assert update(h, jid, priority=0) == 0  # an operator's Priority=0: an admin hold
    job = h.job(jid)
    assert (job["priority"], job["reason"]) == (0, "JobHeldAdmin")
    assert update(h, jid, priority=5) == errors.ESLURM_JOB_HELD  # only a release
    h.as_user(ALICE)
    r = h.client.post("/v1/jobs/release", json={"job_ids": [jid]})
    assert r.json()["results"][0]["errno"] == errors.ESLURM_ACCESS_DENIED
    h.as_user(ROOT)
    assert h.client.post("/v1/jobs/release", json={"job_ids": [jid]}).status_code == 200
    assert h.job(jid)["priority"] == 1375  # the release ends the operator's 7000 too


def test_owner_priority_0_is_a_user_hold(make):
    h = make(SIZE_AND_PART)
    jid = h.submit()["job_id"]
    assert update(h, jid, priority=0) == 0
    job = h.job(jid)
    assert (job["priority"], job["reason"]) == (0, "JobHeldUser")
    assert h.client.get("/v1/priorities", params={"ids": jid}).json()["jobs"] == []


# ------------------------------------------------------------------ sprio


def test_priorities_route_lists_pending_eligible_jobs_with_weights(make):
    h = make(SIZE_AND_PART + "PriorityWeightTRES=CPU=1000,GRES/gpu=2000")
    a = h.submit(ntasks=2)["job_id"]
    h.submit(hold=True)  # held: not listed
    h.as_user(BOB)
    b = h.submit(gpus_per_node=1)["job_id"]  # 1 of the partition's 4 GPUs
    body = h.client.get("/v1/priorities").json()
    assert body["priority_type"] == "priority/multifactor"
    assert body["weights"] == {"age": 0, "assoc": 0, "fairshare": 0, "jobsize": 1000,
                               "partition": 1000, "qos": 0,
                               "tres": "CPU=1000,GRES/gpu=2000"}  # fmt: skip
    assert [(j["job_id"], j["user"]) for j in body["jobs"]] == [(a, "alice"), (b, "bob")]
    # job a: 2 of 4 CPUs -> cpu factor 0.5 x 1000; size (1/2 + 2/4)/2 = 0.5 -> 500
    wa = body["jobs"][0]["factors"]["weighted"]
    assert (wa["jobsize"], wa["tres"]) == (500.0, {"cpu": 500.0, "gres/gpu": 0.0})
    # job b: 1 of 4 GPUs -> 0.25 x 2000 = 500; 1 CPU -> 250; size 0.375 -> 375
    wb = body["jobs"][1]["factors"]["weighted"]
    assert wb["tres"] == {"cpu": 250.0, "gres/gpu": 500.0}
    assert body["jobs"][1]["priority"] == 375 + 1000 + 250 + 500
    only = h.client.get("/v1/priorities", params={"users": "bob", "ids": f"{a},{b}"}).json()
    assert [j["job_id"] for j in only["jobs"]] == [b]


def test_private_data_hides_other_users_jobs_from_sprio(make):
    h = make("PrivateData=jobs")
    h.submit()
    h.as_user(BOB)
    mine = h.submit()["job_id"]
    assert [j["job_id"] for j in h.client.get("/v1/priorities").json()["jobs"]] == [mine]
    h.as_user(ROOT)
    assert len(h.client.get("/v1/priorities").json()["jobs"]) == 2


def test_recalculation_writes_only_the_rows_that_changed(make):
    h = make("PriorityWeightAge=1000\nPriorityMaxAge=100")
    svc = h.ctl.priorities
    ids = [h.submit()["job_id"] for _ in range(20)]
    h.ctl.priorities.recalc(h.clock())  # same second as the submissions: all still 1
    pending, changed = svc._reprioritise(svc._current(), h.clock())
    assert (pending, changed) == (20, 0)
    h.pass_time(60)
    pending, changed = svc._reprioritise(svc._current(), h.clock())
    assert (pending, changed) == (20, 20)  # 60/6000 x 1000 = 10 each
    assert {h.job(j)["priority"] for j in ids} == {10}


def test_priority_basic_keeps_fifo_values_and_nice_moves_them_by_the_difference(make):
    h = make("PriorityType=priority/basic\nPriorityWeightAge=1000")
    jid = h.submit()["job_id"]
    fifo = h.job(jid)["priority"]
    assert fifo == 0xFFFF0000 - 1 - jid  # one below the job before it
    h.pass_time(600)
    h.ctl.priorities.recalc(h.clock())  # basic: nothing is recomputed
    assert h.job(jid)["priority"] == fifo
    assert update(h, jid, nice=100) == 0
    assert h.job(jid)["priority"] == fifo - 100
    assert h.client.get("/v1/priorities").json()["priority_type"] == "priority/basic"


def test_a_submission_gets_its_priority_computed_once(make, monkeypatch):
    # multifactor: the service's value at age 0 is the job's priority; the FIFO formula
    # (initial_priority) is not worked out first only to be thrown away.  Basic: it is.
    import controller.jobs.validate as validate

    calls: list[int] = []
    fifo = validate.initial_priority

    def counted(req, policy, *, sequence=0, factors=None):  # type: ignore[no-untyped-def]
        calls.append(sequence)
        return fifo(req, policy, sequence=sequence, factors=factors)

    monkeypatch.setattr(validate, "initial_priority", counted)
    h = make("PriorityWeightJobSize=1000")
    jid = h.submit(ntasks=2)["job_id"]
    assert h.job(jid)["priority"] == 500  # (1/2 + 2/4) / 2 x 1000
    assert calls == []
    basic = make("PriorityType=priority/basic")
    jid = basic.submit()["job_id"]
    assert basic.job(jid)["priority"] == 0xFFFF0000 - 1 - jid
    assert calls == [jid]
