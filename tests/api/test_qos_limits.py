"""QOS limits through the controller: refusals at submit, time limits, reasons in the queue.

QOS rows are written straight into the store (as ``sacctmgr`` would leave
them); every test runs on SQLite and PostgreSQL (the ``harness`` fixture).
"""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import delete

from controller.accounting import qos_limits
from controller.store.models import QosRow
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.protocol import JobSubmit
from slurmlite.scheduler.snapshot import Policy
from tests.api.conftest import ALICE, BOB

POLICY_TEXT = (
    "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
)


def set_qos(h, name: str = "normal", **limits) -> None:  # type: ignore[no-untyped-def]
    """Create or change QOS ``name`` as ``sacctmgr add/modify qos`` would."""
    with h.ctl.db.write() as s:
        row = s.get(QosRow, name)
        if row is None:
            row = QosRow(name=name)
            s.add(row)
        for key, value in limits.items():
            setattr(row, key, value)


def refused(response) -> bool:  # type: ignore[no-untyped-def]
    body = response.json()
    return body.get("errno") == errors.ESLURM_ACCOUNTING_POLICY and body["error"] == POLICY_TEXT


def test_max_submit_jobs_per_user_refuses_the_submission_over_the_limit(harness):
    h = harness
    set_qos(h, max_submit_pu=2)
    first, second = h.submit()["job_id"], h.submit()["job_id"]
    assert refused(h.post_job())  # alice has 2 pending: 2 + 1 = 3 > 2
    h.as_user(BOB)
    assert "job_id" in h.submit()  # bob has none: 0 + 1 <= 2
    h.as_user(ALICE)
    h.client.post("/v1/jobs/cancel", json={"job_ids": [first]})
    assert "job_id" in h.submit()  # one of hers ended: 1 + 1 <= 2
    assert second  # still pending, still counted
    assert refused(h.post_job())


def test_jobs_of_one_batch_count_before_they_are_stored(harness):
    # the submit queue validates a whole batch before inserting it: 3 in one batch,
    # limit 2 -> the third is refused although none is in the store yet
    h = harness
    set_qos(h, max_submit_pu=2)
    base = JobSubmit(
        script="#!/bin/sh\ntrue\n", name="b", work_dir="/tmp", submit_dir="/tmp", submit_host="vm"
    )
    out = h.ctl.jobs.submit_many([(ALICE, replace(base)) for _ in range(3)] + [(BOB, base)])
    assert out[0] == (1, None) and out[1] == (2, None) and out[3] == (3, None)
    assert isinstance(out[2], SlurmError) and out[2].code == errors.ESLURM_ACCOUNTING_POLICY
    # the next batch sees the two stored jobs
    [again] = h.ctl.jobs.submit_many([(ALICE, base)])
    assert isinstance(again, SlurmError)


def test_a_job_over_max_wall_pends_unless_the_qos_denies_on_limit(harness):
    h = harness
    set_qos(h, max_wall=60)
    jid = h.submit(time_limit=61)["job_id"]  # accepted: Slurm only denies with DenyOnLimit
    assert h.job(jid)["time_limit"] == 61
    set_qos(h, flags="DenyOnLimit")
    assert refused(h.post_job(time_limit=61))
    assert "job_id" in h.submit(time_limit=60)


def test_deny_on_limit_refuses_a_job_bigger_than_max_tres_per_job_or_per_user(harness):
    h = harness
    set_qos(h, max_tres_pj="gres/gpu=1", max_tres_pu="cpu=1", flags="DenyOnLimit")
    assert refused(h.post_job(gpus_per_node=2))  # 2 GPUs > gres/gpu=1 per job
    assert refused(h.post_job(ntasks=2))  # 2 CPUs alone > cpu=1 per user
    assert "job_id" in h.submit(gpus_per_node=1)


def test_a_job_without_time_gets_the_qos_max_wall(harness):
    # partition debug has no MaxTime and no DefaultTime; MaxWall=30 -> the job gets 30 min
    h = harness
    set_qos(h, max_wall=30)
    jid = h.submit()["job_id"]
    assert h.job(jid)["time_limit"] == 30


def test_a_qos_change_is_seen_by_the_next_submission(harness):
    h = harness
    set_qos(h, max_submit_pu=1)
    h.submit()
    assert refused(h.post_job())
    set_qos(h, max_submit_pu=None)  # sacctmgr modify qos normal set MaxSubmitJobsPerUser=-1
    assert "job_id" in h.submit()


def test_accounting_storage_enforce_without_limits_turns_them_off(harness):
    h = harness
    set_qos(h, max_submit_pu=1)
    cfg = h.ctl.validator.cfg
    cfg.accounting_storage_enforce = ["associations"]
    h.ctl.validator.policy = Policy.from_config(cfg)
    assert not qos_limits.enforce_limits(cfg)
    assert "job_id" in h.submit() and "job_id" in h.submit()
    cfg.accounting_storage_enforce = ["associations", "limits"]
    h.ctl.validator.policy = Policy.from_config(cfg)
    assert refused(h.post_job())


def test_load_qos_reads_the_table_and_its_tres_limits(harness):
    h = harness
    set_qos(h, max_tres_pu="cpu=8,gres/gpu=4", max_jobs_pu=3, flags="DenyOnLimit")
    with h.ctl.db.read() as s:
        table = qos_limits.load_qos(s)
    normal = table["normal"]
    assert normal.max_tres_pu == {"cpu": 8, "gres/gpu": 4} and normal.max_jobs_pu == 3
    assert normal.has_flag("denyonlimit")
    # a bulk delete through a session (sacctmgr delete qos) is seen at once too
    set_qos(h, "gone")
    with h.ctl.db.read() as s:
        assert "gone" in qos_limits.load_qos(s)
    with h.ctl.db.write() as s:
        s.execute(delete(QosRow).where(QosRow.name == "gone"))
    with h.ctl.db.read() as s:
        assert "gone" not in qos_limits.load_qos(s)


def test_a_user_over_max_jobs_per_user_waits_with_slurms_reason(harness):
    # MaxJobsPerUser=1: alice's first job starts, her second waits with
    # QOSMaxJobsPerUserLimit and does not block bob's job behind it
    h = harness
    set_qos(h, max_jobs_pu=1)
    a1, a2 = (
        h.submit(ntasks=1, mem_per_cpu=100)["job_id"],
        h.submit(ntasks=1, mem_per_cpu=100)["job_id"],
    )
    h.as_user(BOB)
    b1 = h.submit(ntasks=1, mem_per_cpu=100)["job_id"]
    h.tick()
    assert h.job(a1)["state"] == "RUNNING"
    assert (h.job(a2)["state"], h.job(a2)["reason"]) == ("PENDING", "QOSMaxJobsPerUserLimit")
    assert h.job(b1)["state"] == "RUNNING"
    h.agents.take("launch", 2)
    h.agents.assert_nothing_else()


def test_a_partition_qos_counts_every_job_of_the_partition_at_submit(harness):
    # slurm.conf: PartitionName=long ... QOS=longq; longq has MaxSubmitJobsPerUser=1.
    # alice's jobs in long (QOS normal) count in longq: the second is refused; debug is free.
    h = harness
    set_qos(h, "longq", max_submit_pu=1)
    h.ctl.validator.cfg.partition("long").qos = "longq"
    assert "job_id" in h.submit(partition="long", time_limit=10)
    assert refused(h.post_job(partition="long", time_limit=10))
    assert "job_id" in h.submit(partition="debug")


def test_a_partition_qos_limit_holds_jobs_back_in_the_pass(harness):
    # long's QOS longq: MaxJobsPerUser=1.  alice's two jobs in long (QOS normal): the
    # first runs, the second waits with longq's reason; her job in debug is not limited.
    h = harness
    set_qos(h, "longq", max_jobs_pu=1)
    h.ctl.cfg.partition("long").qos = "longq"
    l1, l2 = (h.submit(partition="long", ntasks=1, mem_per_cpu=100)["job_id"] for _ in range(2))
    d1 = h.submit(partition="debug", ntasks=1, mem_per_cpu=100)["job_id"]
    h.tick()
    assert h.job(l1)["state"] == "RUNNING"
    assert (h.job(l2)["state"], h.job(l2)["reason"]) == ("PENDING", "QOSMaxJobsPerUserLimit")
    assert h.job(d1)["state"] == "RUNNING"
    h.agents.take("launch", 2)
    h.agents.assert_nothing_else()
