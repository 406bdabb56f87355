"""A live cluster scraped as Prometheus would: over TCP, ``/metrics/...`` and the probes.

Nodes g1 and g2 have 2 fake GPUs each; GPU 0 reads busy (90 %), GPU 1 idle
(``slurmlite.fakegpu``), and the agents sample every second.  A job holding
both GPUs of a node shows up in the per-GPU series, where "held but idle"
is one comparison (``slurmlite_gpu_utilization_percent < 5``); cancelling it
moves the counters.
"""

from __future__ import annotations

import httpx
import pytest

from slurmlite.config import load_config
from slurmlite.openmetrics import CONTENT_TYPE
from tests.e2e.conftest import fake_gpu_state, local_cluster, wait_for

parser = pytest.importorskip("prometheus_client.openmetrics.parser")


def samples(client: httpx.Client, path: str) -> dict[tuple[str, tuple], float]:
    got = client.get(path)
    assert got.status_code == 200, got.text
    assert got.headers["content-type"] == CONTENT_TYPE
    out = {}
    for family in parser.text_string_to_metric_families(got.text):
        for s in family.samples:
            out[s.name, tuple(sorted(s.labels.items()))] = s.value
    return out


def test_prometheus_sees_jobs_gpus_and_counters(tmp_path, monkeypatch):
    fake_gpu_state(tmp_path, monkeypatch, {"0": {"util": 90, "mem_used_mib": 2048}})
    with local_cluster(
        "slurmlite-metrics-",
        nodelist="g[1-2]",
        cpus_per_node=2,
        gpus_per_node=2,
        mem_per_node=2000,
        cluster_name="lab",
        extra_conf=("JobAcctGatherFrequency=1", "MetricsType=metrics/openmetrics"),
    ) as c:
        port = load_config(str(c.conf)).slurmctld_port
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as web:
            assert web.get("/livez").status_code == 204
            wait_for(lambda: web.get("/readyz").status_code == 204, 20, "/readyz 204")
            job = c.submit("--gpus=2 -N1 -c1 --mem=100 --wrap 'sleep 60'")
            user = c.run("id -un").stdout.strip()

            def gpu_series() -> dict | None:
                got = samples(web, "/metrics/nodes")
                util = {
                    dict(labels)["gpu"]: value
                    for (name, labels), value in got.items()
                    if name == "slurmlite_gpu_utilization_percent"
                    and dict(labels)["job"] == str(job)
                }
                return util if len(util) == 2 else None

            util = wait_for(gpu_series, 30, "the job's two GPUs in /metrics/nodes")
            assert util["0"] == pytest.approx(90, abs=1) and util["1"] == 0  # 1 held but idle
            nodes = samples(web, "/metrics/nodes")
            one = next(k for k in nodes if k[0] == "slurmlite_gpu_samples_total")
            assert dict(one[1])["user"] == user and nodes[one] >= 1
            assert sum(v for (n, _), v in nodes.items() if n == "slurm_node_gpus_alloc") == 2
            jobs = samples(web, "/metrics/jobs")
            assert jobs["slurm_jobs_running", ()] == 1
            assert jobs["slurm_jobs_gpus_alloc", ()] == 2
            assert jobs["slurmlite_jobs_submitted_total", ()] == 1
            assert c.run(f"scancel {job}").returncode == 0
            cancelled = ("slurmlite_jobs_ended_total", (("state", "CANCELLED"),))
            wait_for(lambda: samples(web, "/metrics/jobs")[cancelled] == 1, 30, "the end counted")
            sched = samples(web, "/metrics/scheduler")
            assert sched["slurmlite_sched_passes_total", ()] >= 1
            assert sched["slurm_sdiag_jobs_canceled", ()] == 1
