"""Idle GPUs in the controller (controller.sched.idlegpus): flag, clear, requeue, cancel.

The harness cluster with ``SlurmliteIdleGpuPolicy`` on: globally threshold
5 %, window 10 minutes, grace 2 minutes, requeue; the ``long`` partition
cancels instead; ``free`` is exempt.  The test writes the agents' usage
rows itself through the real store (``job_usage``, cumulative per run and
node, one sample a second) and moves the fake clock; the loop's tick runs
the check (once per SlurmliteHeartbeatInterval = 1 s).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from sqlalchemy import select

from controller.store.models_notify import OutboxRow
from controller.store.models_usage import JobUsageRow
from slurmlite.timefmt import fmt_timestamp
from slurmlite.usage import GpuUsage
from tests.api import conftest
from tests.api.conftest import BOB, ROOT, harness_on

POLICY = """
SlurmliteIdleGpuPolicy=threshold=5,window=10:00,grace=2:00,action=requeue
PartitionName=long Nodes=n[1-2] MaxTime=60 State=UP SlurmliteIdleGpuPolicy=action=cancel
PartitionName=free Nodes=n[1-2] State=UP SlurmliteIdleGpuPolicy=off
"""


@pytest.fixture
def h(tmp_path, store_url, monkeypatch):  # type: ignore[no-untyped-def]
    conf = conftest.CONF.replace("PartitionName=long Nodes=n[1-2] MaxTime=60 State=UP\n", "")
    monkeypatch.setattr(conftest, "CONF", conf + POLICY)
    yield from harness_on(tmp_path, store_url)


class Usage:
    """The agent's cumulative GPU counters of one run on its node, written as it would."""

    def __init__(self, h, job_id: int, restarts: int = 0) -> None:  # type: ignore[no-untyped-def]
        self.h, self.job_id, self.restarts = h, job_id, restarts
        self.node = h.job(job_id)["batch_host"]
        self.gpu = GpuUsage(index=h.job(job_id)["alloc"][0]["gpus"][0])
        self.write()

    def write(self) -> None:
        row = JobUsageRow(
            job_id=self.job_id,
            restart=self.restarts,
            node=self.node,
            samples=self.gpu.samples,
            gpus=json.dumps([asdict(self.gpu)]),
        )
        with self.h.ctl.db.write() as s:
            s.merge(row)

    def run(self, secs: int, util: float) -> None:
        """``secs`` seconds at ``util`` % (one sample a second), then the check."""
        self.gpu.samples += secs
        self.gpu.util_sum += secs * util
        self.write()
        self.h.pass_time(secs)
        self.h.tick()


def start(h, **fields) -> tuple[int, Usage]:  # type: ignore[no-untyped-def]
    jid = h.submit(gpus_per_node=1, **fields)["job_id"]
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    usage = Usage(h, jid)
    h.pass_time(1)
    h.tick()  # the first read: the baseline
    return jid, usage


def explain(h, jid: int) -> str:  # type: ignore[no-untyped-def]
    r = h.client.get(f"/v1/jobs/{jid}/explain")
    assert r.status_code == 200
    return r.json()["message"]


def test_idle_for_the_window_flags_then_requeues_after_the_grace(h):
    jid, usage = start(h)
    usage.run(599, 1.0)
    assert h.job(jid)["reason"] == "None"  # 599 s < 10 minutes
    usage.run(1, 1.0)
    job = h.job(jid)
    assert (job["state"], job["reason"]) == ("RUNNING", "GpusIdle")  # squeue %r, scontrol
    text = explain(h, jid)
    assert "GPUs idle since" in text and "(under 5 % for 10:00)" in text
    assert "will be requeued at" in text
    h.agents.take("launch", 1)
    [note] = h.agents.take("note", 1)  # the warning line for the job's stderr
    assert (note.node, note.spec.job_id, note.spec.restarts) == (usage.node, jid, 0)
    h.agents.assert_nothing_else()
    usage.run(119, 0.0)
    assert h.job(jid)["state"] == "RUNNING"  # the grace: 2 minutes from the flag
    usage.run(1, 0.0)
    job = h.job(jid)
    assert (job["state"], job["restarts"], job["restart_causes"]) == ("PENDING", 1, "idle_gpus")
    [kill] = h.agents.take("signal", 1)
    assert kill.spec.signal is None and kill.node == usage.node  # terminate
    assert "DUE TO IDLE GPUS ***" in kill.spec.message
    h.agents.assert_nothing_else()


def test_the_job_log_line_is_sent_once_per_flag_and_never_for_an_allocation(h, caplog):
    jid, usage = start(h)
    alloc, alloc_usage = start(h, script="", name="bash", allocation=True)
    h.agents.take("launch", 1)  # the batch job's; the allocation's srun starts its steps
    alloc_usage.gpu.samples += 600  # as idle, written before the check
    alloc_usage.write()
    usage.run(600, 0.0)  # flagged at 600 s: requeue at 600 + 120 (the fake clock's)
    assert (h.job(jid)["reason"], h.job(alloc)["reason"]) == ("GpusIdle", "GpusIdle")
    [note] = h.agents.take("note", 1)  # the batch job's, on its batch host; none for alloc
    requeue_at = fmt_timestamp(h.clock() + 120)  # flagged now, grace 2 minutes
    assert note.spec.line == (
        f"slurmstepd-{usage.node}: warning: job {jid}: its GPUs have been under 5 % for 10:00; "
        f"it will be requeued at {requeue_at} unless they get busy (SlurmliteIdleGpuPolicy)"
    )
    alloc_usage.gpu.samples += 60  # the allocation gets busy: it stays out of the way
    alloc_usage.gpu.util_sum += 60 * 50.0
    alloc_usage.write()
    usage.run(60, 0.0)  # still flagged: nothing new to say
    h.agents.assert_nothing_else()
    usage.run(60, 20.0)  # busy: cleared (the grace had not run out: 600 + 60 < 720)
    usage.run(600, 0.0)  # idle for a new window: a new flag, a new line
    [again] = h.agents.take("note", 1)
    assert again.spec.job_id == jid and again.spec.line != note.spec.line  # a later deadline
    h.agents.fail_nodes.add(usage.node)  # its agent cannot be reached: logged, nothing raised
    usage.run(60, 20.0)
    usage.run(600, 0.0)
    assert h.job(jid)["reason"] == "GpusIdle"  # the check went on
    assert "event=note_failed" in caplog.text and f"job={jid}" in caplog.text
    h.agents.assert_nothing_else()


def test_a_busy_interval_clears_the_flag(h):
    jid, usage = start(h)
    usage.run(600, 0.0)
    assert h.job(jid)["reason"] == "GpusIdle"
    usage.run(60, 20.0)  # the minute after the flag averages 20 %
    assert h.job(jid)["reason"] == "None"
    assert "GPUs idle" not in explain(h, jid)
    usage.run(300, 0.0)  # idle again, but the window starts over
    usage.run(300, 0.0)
    assert h.job(jid)["state"] == "RUNNING"  # flagged again at 600 s, not requeued yet


def test_the_partition_policy_cancels_and_an_exempt_partition_is_never_judged(h):
    jid, usage = start(h, partition="long")
    free, free_usage = start(h, partition="free")
    for _ in range(3):
        usage.run(300, 0.0)
        free_usage.gpu.samples += 300  # the same idle GPU, in the exempt partition
        free_usage.write()
    job = h.job(jid)
    # flagged at 600 s, grace 120 s: cancelled at the 900 s check
    assert (job["state"], job["reason"]) == ("CANCELLED", "GpusIdle")
    assert "COMPLETING" in job["flags"]  # its node still has to stop it
    assert (h.job(free)["state"], h.job(free)["reason"]) == ("RUNNING", "None")


def test_an_allocation_is_judged_by_its_gpus_and_cancelled_as_it_cannot_be_requeued(h):
    jid, usage = start(h, script="", name="bash", allocation=True)
    usage.run(600, 0.0)
    assert h.job(jid)["reason"] == "GpusIdle"
    usage.run(120, 0.0)
    assert (h.job(jid)["state"], h.job(jid)["reason"]) == ("CANCELLED", "GpusIdle")


def test_explain_of_a_flagged_job_is_only_for_who_may_see_it(h):
    jid, usage = start(h)
    usage.run(600, 0.0)
    h.as_user(BOB)
    assert "GPUs idle since" in explain(h, jid)  # no PrivateData: anyone sees the job
    h.ctl.cfg.private_data = ["jobs"]
    r = h.client.get(f"/v1/jobs/{jid}/explain")
    assert r.status_code == 404 and "Invalid job id" in r.text


def test_a_flag_is_forgotten_by_a_new_controller_watch(h):
    jid, usage = start(h)
    usage.run(600, 0.0)
    assert h.job(jid)["reason"] == "GpusIdle"
    h.ctl.loop.idle_gpus.watch.runs.clear()  # what a controller restart leaves
    usage.run(1, 0.0)  # the new watch's baseline: the stored flag is dropped
    assert h.job(jid)["reason"] == "None"


def test_a_job_that_asked_for_mail_is_told_when_it_is_flagged(h):
    jid, usage = start(h, name="train", mail_type="END", mail_user="ops@example.org")
    quiet, quiet_usage = start(h)  # no --mail-type: no notification
    quiet_usage.gpu.samples += 600  # as idle, written before the check
    quiet_usage.write()
    usage.run(600, 0.0)
    with h.ctl.db.read() as s:
        rows = [(r.job_id, r.event, r.recipient, r.subject) for r in s.scalars(select(OutboxRow))]
    [(job, event, to, subject)] = rows
    assert (job, event, to) == (jid, "GPUS_IDLE", "ops@example.org")
    assert subject.startswith(f"Slurm Job_id={jid} Name=train GPUs idle since ")
    assert h.job(quiet)["reason"] == "GpusIdle"


def test_turning_the_policy_off_by_reconfigure_takes_the_flags_back(h):
    jid, usage = start(h)
    usage.run(600, 0.0)
    assert h.job(jid)["reason"] == "GpusIdle"
    conf = Path(h.ctl.cfg.path)
    lines = conftest.CONF.format(dir=conf.parent).splitlines()  # without the policy
    kept = [ln.split(" SlurmliteIdle")[0] for ln in lines if not ln.startswith("SlurmliteIdle")]
    conf.write_text("\n".join(kept) + "\n")
    h.as_user(ROOT)
    assert h.client.post("/v1/reconfigure").status_code == 200
    usage.run(600, 0.0)  # idle past the grace: nothing happens any more
    assert (h.job(jid)["state"], h.job(jid)["reason"]) == ("RUNNING", "None")
    assert "GPUs idle" not in explain(h, jid)


def test_a_qos_policy_is_laid_over_the_partitions_and_only_an_operator_sets_it(h):
    def set_qos(name: str, policy: str) -> int:
        body = {"names": [name], "changes": {"idle_gpu_policy": policy}}
        return h.client.post("/v1/qos/modify", json=body).status_code

    assert set_qos("normal", "action=cancel") == 403  # alice is no operator
    h.as_user(ROOT)
    assert h.client.post("/v1/qos/add", json={"names": ["exempt"]}).status_code == 200
    assert set_qos("normal", "window=5:00,action=cancel") == 200
    assert set_qos("exempt", "off") == 200
    body = {"names": ["alice"], "accounts": ["default"], "changes": {"qos": ["normal", "exempt"]}}
    assert h.client.post("/v1/users/add", json=body).status_code == 200
    r = h.client.post(
        "/v1/qos/modify", json={"names": ["normal"], "changes": {"idle_gpu_policy": "window=soon"}}
    )
    assert r.status_code == 400 and "Invalid IdleGpuPolicy" in r.text  # never a 500
    qos = {q["name"]: q["idle_gpu_policy"] for q in h.client.get("/v1/assocs").json()["qos"]}
    assert qos == {"exempt": "off", "normal": "window=5:00,action=cancel"}
    h.as_user(conftest.ALICE)
    jid, usage = start(h)  # QOS normal: window 5 minutes, cancel; the grace is global (2 min)
    spared, spared_usage = start(h, qos="exempt")
    for _ in range(7):
        spared_usage.gpu.samples += 60  # idle too
        spared_usage.write()
        usage.run(60, 0.0)
    # flagged at 300 s, cancelled at the 420 s check
    assert (h.job(jid)["state"], h.job(jid)["reason"]) == ("CANCELLED", "GpusIdle")
    assert (h.job(spared)["state"], h.job(spared)["reason"]) == ("RUNNING", "None")
    h.as_user(ROOT)
    assert set_qos("normal", "-1") == 200  # taken away: the job follows slurm.conf again
    qos = {q["name"]: q["idle_gpu_policy"] for q in h.client.get("/v1/assocs").json()["qos"]}
    assert qos["normal"] == ""


def test_an_allocation_without_a_running_step_has_idle_gpus(h):
    # salloc --gpus-per-node=1, then a shell that never runs srun: no agent samples
    # anything, and nothing can be using its GPU -- each check counts as idle
    jid = h.submit(gpus_per_node=1, script="", name="bash", allocation=True)["job_id"]
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    h.pass_time(1)
    h.tick()  # the baseline
    for _ in range(10):  # 10 checks a minute apart: 600 s idle
        h.pass_time(60)
        h.tick()
    assert h.job(jid)["reason"] == "GpusIdle"
    h.pass_time(120)
    h.tick()  # the grace: an allocation cannot be requeued, so it is cancelled
    assert (h.job(jid)["state"], h.job(jid)["reason"]) == ("CANCELLED", "GpusIdle")


def test_an_allocation_without_gpus_is_never_judged(h):
    jid = h.submit(script="", name="bash", allocation=True)["job_id"]
    h.tick()
    for _ in range(15):
        h.pass_time(60)
        h.tick()
    assert (h.job(jid)["state"], h.job(jid)["reason"]) == ("RUNNING", "None")
