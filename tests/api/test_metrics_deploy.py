"""deploy/: the Prometheus scrape config and the Grafana dashboard use only real names.

Every ``metrics_path`` of ``deploy/prometheus/prometheus.yml`` must answer
on a controller with ``MetricsType=metrics/openmetrics``, and every metric a
dashboard panel queries must be one those answers expose (a family's
samples: a gauge's own name, a counter's ``_total``, a histogram's
``_bucket``/``_count``/``_sum``).  A renamed metric fails here before a
lab's dashboard goes blank.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from tests.api.test_metrics import METRICS, build

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NAME = re.compile(r"\b(slurm(?:lite)?_[a-z0-9_]+)\b")
SUFFIXES = {"gauge": ("",), "counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}


def exposed(text: str) -> set[str]:
    """The sample names an answer's families give (``# TYPE name kind`` lines)."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            names.update(name + suffix for suffix in SUFFIXES[kind])
    return names


def test_every_queried_metric_is_exposed(tmp_path):
    conf = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    paths = [job["metrics_path"] for job in conf["scrape_configs"]]
    assert sorted(paths) == sorted(
        f"/metrics/{p}" for p in ("jobs", "nodes", "partitions", "scheduler", "jobs-users-accts")
    )
    h = build(tmp_path, f"sqlite:///{tmp_path}/state/slurmlite.db", METRICS)
    try:
        h.submit(gpus_per_node=1)  # a user and an account to report on
        h.tick()
        names: set[str] = set()
        for path in paths:
            got = h.client.get(path)
            assert got.status_code == 200, path
            names |= exposed(got.text)
    finally:
        h.ctl.db.close()
    dashboard = json.loads((DEPLOY / "grafana" / "slurmlite-dashboard.json").read_text())
    queried = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in NAME.findall(target["expr"])
    }
    assert len(queried) > 15  # the dashboard really queries things
    assert queried - names == set()
