"""``/metrics`` (MetricsType=metrics/openmetrics) and the probes, on the harness cluster.

n1 and n2 have 2 CPUs and 2 GPUs each (tests/api/conftest.py).  Every
answer is parsed with prometheus_client's OpenMetrics parser, which refuses
anything off the format (a missing ``# EOF``, a counter without ``_total``).
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from controller.api.app import create_app
from controller.api.deps import get_user
from controller.context import Controller
from controller.store.db import Database
from controller.store.models import JobRow
from slurmlite import jwt
from slurmlite.clock import FakeClock
from slurmlite.config import parse_config
from slurmlite.openmetrics import CONTENT_TYPE
from slurmlite.protocol import CancelRequest, JobCompletion
from tests.api.conftest import ALICE, CONF, KEY, Harness, register
from tests.recording_agents import RecordingAgentClient

parser = pytest.importorskip("prometheus_client.openmetrics.parser")

METRICS = "MetricsType=metrics/openmetrics\n"
JWT_KEY = b"j" * 32
JWT = "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={dir}/jwt.key\n"
NOW = 1_800_000_000.0
OTHER = next(p for p in pwd.getpwall() if p.pw_uid not in (0, os.geteuid()))  # not an operator


def build(tmp_path, store_url: str, extra: str) -> Harness:  # type: ignore[no-untyped-def]
    key = tmp_path / "jwt.key"
    if not key.exists():
        key.write_bytes(JWT_KEY)
        key.chmod(0o600)
    cfg = parse_config((CONF + extra).format(dir=tmp_path), path=str(tmp_path / "slurm.conf"))
    clock = FakeClock(NOW)
    agents = RecordingAgentClient()
    ctl = Controller(cfg, KEY, db=Database(store_url), agents=agents, clock=clock)
    app = create_app(ctl, run_loop=False)
    # a scraper on the controller's host (loopback): anonymous scrapes of open metrics
    client = TestClient(app, client=("127.0.0.1", 50000))
    h = Harness(ctl=ctl, clock=clock, agents=agents, client=client)
    app.dependency_overrides[get_user] = lambda: h.who[0]  # the job routes; /metrics has its own
    register(ctl, "n1")
    register(ctl, "n2")
    return h


@pytest.fixture
def metered(tmp_path, store_url) -> Iterator[Harness]:
    h = build(tmp_path, store_url, METRICS)
    yield h
    h.ctl.db.close()


def scrape(h: Harness, path: str, **headers: str) -> dict[tuple[str, tuple], float]:
    """``{(sample name, sorted labels): value}`` of an answer that must parse."""
    got = h.client.get(path, headers=headers)
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == CONTENT_TYPE
    assert got.text.endswith("# EOF\n")
    out = {}
    for family in parser.text_string_to_metric_families(got.text):
        for s in family.samples:
            out[s.name, tuple(sorted(s.labels.items()))] = s.value
    return out


def token(name: str) -> str:
    return jwt.make_token(JWT_KEY, name, 600, NOW)


def end(h: Harness, jid: int) -> None:
    msg = JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=0)
    h.ctl.jobs.complete(h.job(jid)["batch_host"], msg)


def test_metrics_are_off_unless_configured(harness):
    got = harness.client.get("/metrics/jobs")
    assert got.status_code == 404
    assert "MetricsType=metrics/openmetrics" in got.text


def test_index_lists_the_endpoints_as_slurm(metered):
    got = metered.client.get("/metrics")
    assert got.status_code == 200
    assert got.text.splitlines() == [
        "slurmctld index of metrics endpoints:",
        "  '/metrics/jobs': get job metrics",
        "  '/metrics/nodes': get node metrics",
        "  '/metrics/partitions': get partition metrics",
        "  '/metrics/jobs-users-accts': get user and account jobs metrics",
        "  '/metrics/scheduler': get scheduler metrics",
    ]


def test_job_gauges_and_counters_follow_submissions_and_ends(metered):
    h = metered
    h.submit(gpus_per_node=1)
    h.tick()
    h.submit(hold=True)
    done = h.submit()["job_id"]
    h.tick()
    end(h, done)
    m = scrape(h, "/metrics/jobs")
    # running + done started; held waits: 3 jobs, 1 running, 1 pending (held), 1 completed
    assert m["slurm_jobs", ()] == 3
    assert m["slurm_jobs_running", ()] == 1
    assert m["slurm_jobs_pending", ()] == 1
    assert m["slurm_jobs_hold", ()] == 1
    assert m["slurm_jobs_completed", ()] == 1
    assert m["slurm_jobs_gpus_alloc", ()] == 1  # the running job's one GPU
    assert m["slurmlite_jobs_submitted_total", ()] == 3
    assert m["slurmlite_jobs_started_total", ()] == 2
    assert m["slurmlite_jobs_ended_total", (("state", "COMPLETED"),)] == 1
    assert m["slurmlite_queue_wait_seconds_count", ()] == 2
    assert m["slurmlite_submit_latency_seconds_count", ()] == 3
    users = scrape(h, "/metrics/jobs-users-accts")
    assert users["slurm_user_jobs_running", (("username", "alice"),)] == 1
    assert users["slurm_account_jobs", (("account", "default"),)] == 3


def test_counters_survive_a_controller_restart(tmp_path, store_url):
    h = build(tmp_path, store_url, METRICS)
    jid = h.submit()["job_id"]
    h.tick()
    end(h, jid)
    h.tick()
    before = scrape(h, "/metrics/jobs")
    passes = h.ctl.metrics.passes()
    h.ctl.metrics.save()  # what the controller does every 15 s and at stop
    h.ctl.db.close()
    again = build(tmp_path, store_url, METRICS)  # a new controller on the same store
    try:
        after = scrape(again, "/metrics/jobs")
        for name in ("slurmlite_jobs_submitted_total", "slurmlite_jobs_started_total"):
            assert after[name, ()] == before[name, ()] == 1
        ended = ("slurmlite_jobs_ended_total", (("state", "COMPLETED"),))
        assert after[ended] == before[ended] == 1
        sched = scrape(again, "/metrics/scheduler")
        assert sched["slurmlite_sched_passes_total", ()] == passes == 2
    finally:
        again.ctl.db.close()


def test_node_partition_and_gpu_gauges(metered):
    h = metered
    h.submit(gpus_per_node=2, nodelist="n1")
    h.tick()
    nodes = scrape(h, "/metrics/nodes")
    assert nodes["slurm_nodes", ()] == 2
    assert nodes["slurm_node_gpus", (("node", "n1"),)] == 2
    assert nodes["slurm_node_gpus_alloc", (("node", "n1"),)] == 2
    assert nodes["slurm_node_gpus_alloc", (("node", "n2"),)] == 0
    assert nodes["slurm_nodes_mixed", ()] + nodes["slurm_nodes_alloc", ()] == 1
    parts = scrape(h, "/metrics/partitions")
    debug = (("partition", "debug"),)
    assert parts["slurm_partitions", ()] == 2
    assert parts["slurm_partition_gpus", debug] == 4
    assert parts["slurm_partition_jobs_gpus_alloc", debug] == 2
    assert parts["slurm_partition_nodes", debug] == 2
    sched = scrape(h, "/metrics/scheduler")
    assert sched["slurm_schedule_cycle_cnt", ()] == 1
    assert sched["slurmlite_sched_pass_seconds_count", ()] == 1


def test_private_data_restricts_metrics_to_operators(tmp_path, store_url):
    h = build(tmp_path, store_url, METRICS + JWT + "PrivateData=jobs\n")
    try:
        assert h.client.get("/metrics/jobs").status_code == 401  # no credentials
        other = {"Authorization": f"Bearer {token(OTHER.pw_name)}"}
        got = h.client.get("/metrics/jobs", headers=other)
        assert got.status_code == 403
        assert got.text == (
            "slurmctld HTTP server request for 'GET /metrics/jobs':\n"
            "Failed: Operation not permitted\n"
        )
        scrape(h, "/metrics/jobs", Authorization=f"Bearer {token('root')}")
        scrape(h, "/metrics/nodes", **{"X-SLURM-USER-TOKEN": token("root")})
    finally:
        h.ctl.db.close()


def test_metrics_auth_users_admits_the_listed(tmp_path, store_url):
    extra = METRICS + JWT + f"MetricsAuthUsers={OTHER.pw_name}\n"
    h = build(tmp_path, store_url, extra)
    try:
        scrape(h, "/metrics/jobs", Authorization=f"Bearer {token(OTHER.pw_name)}")
        bad = h.client.get("/metrics/jobs", headers={"Authorization": "Bearer forged.token.x"})
        assert bad.status_code == 401
    finally:
        h.ctl.db.close()


def test_ignore_private_data_opens_metrics_again(tmp_path, store_url):
    extra = METRICS + "PrivateData=jobs\nMetricsParameters=ignore_private_data\n"
    h = build(tmp_path, store_url, extra)
    try:
        scrape(h, "/metrics/jobs")
    finally:
        h.ctl.db.close()


def test_probes_answer_as_slurmctld(metered):
    h = metered
    assert h.client.get("/livez").status_code == 204
    assert h.client.get("/healthz").status_code == 204
    # run_loop=False: the scheduling loop is not running, so not ready
    assert h.client.get("/readyz").status_code == 500
    assert h.client.get("/readyz?verbose").status_code == 401  # operators only


def test_a_rolled_back_change_counts_nothing(metered):
    h = metered
    jid = h.submit()["job_id"]
    with pytest.raises(RuntimeError):
        with h.ctl.db.write() as s:  # a start whose transaction fails after its flush
            row = s.get(JobRow, jid)
            row.state, row.start_time = "RUNNING", NOW
            s.flush()
            raise RuntimeError("the commit never happens")
    m = scrape(h, "/metrics/jobs")
    assert m["slurmlite_jobs_started_total", ()] == 0
    assert m["slurm_jobs_pending", ()] == 1
    h.tick()  # the real start counts once
    assert scrape(h, "/metrics/jobs")["slurmlite_jobs_started_total", ()] == 1


def test_readyz_verbose_names_each_check_for_operators(tmp_path, store_url):
    h = build(tmp_path, store_url, METRICS + JWT)
    try:
        root = {"Authorization": f"Bearer {token('root')}"}
        got = h.client.get("/readyz?verbose", headers=root)
        assert got.status_code == 500  # run_loop=False: no scheduling loop
        assert got.text == "store: ok: reachable\nscheduler: FAILED: loop not running\n"
        other = {"Authorization": f"Bearer {token(OTHER.pw_name)}"}
        assert h.client.get("/readyz?verbose", headers=other).status_code == 403
    finally:
        h.ctl.db.close()


def test_a_cancelled_held_job_is_no_longer_held(metered):
    h = metered
    kept, dropped = h.submit(hold=True)["job_id"], h.submit(hold=True)["job_id"]
    h.ctl.jobs.cancel(ALICE, CancelRequest(job_ids=[dropped]))  # it keeps reason JobHeldUser
    m = scrape(h, "/metrics/jobs")
    assert (m["slurm_jobs_hold", ()], m["slurm_jobs_cancelled", ()]) == (1, 1)
    assert h.job(kept)["state"] == "PENDING"


def test_open_metrics_want_a_user_from_another_host_unless_open(tmp_path, store_url):
    h = build(tmp_path, store_url, METRICS + JWT)
    remote = TestClient(h.client.app, client=("10.1.2.3", 50000))
    got = remote.get("/metrics/jobs")
    assert got.status_code == 401  # the per-GPU series name users and jobs
    assert "Authentication failure" in got.text
    got = remote.get("/metrics/jobs", headers={"Authorization": f"Bearer {token(OTHER.pw_name)}"})
    assert got.status_code == 200  # any authenticated user, while access is not restricted
    h.ctl.cfg.metrics_parameters = ["open"]
    assert remote.get("/metrics/jobs").status_code == 200  # the admin opened them to all
    h.ctl.db.close()
