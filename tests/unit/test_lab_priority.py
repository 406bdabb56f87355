"""The slurm.conf that ``slurmlite cluster up`` writes (cli/localcluster.py render_conf):
a small lab's multifactor weights by default, every weight 0 with ``--fifo``; both read
back through slurm.conf's own parser, as the controller reads them (no daemons here:
tests/e2e/test_lab_defaults.py starts real clusters)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.localcluster import ClusterSpec, render_conf
from slurmlite.config import parse_config


def written(tmp_path: Path, fifo: bool) -> Path:
    spec = ClusterSpec(directory=tmp_path, nodelist="n[1-2]", fifo=fifo)
    names = ["n1", "n2"]
    text = render_conf(
        spec, names, dict.fromkeys(names, "127.0.0.1"), {"n1": 7001, "n2": 7002}, 7000
    )
    conf = tmp_path / "slurm.conf"
    conf.write_text(text)
    return conf


def weights(conf: Path) -> dict[str, object]:
    cfg = parse_config(conf.read_text(), str(conf))
    return {"type": cfg.priority_type, **cfg.priority_weights}


def test_cluster_up_writes_a_labs_weights_fair_share_first(tmp_path: Path) -> None:
    w = weights(written(tmp_path, fifo=False))
    assert w["type"] == "priority/multifactor"
    assert (w["fairshare"], w["age"], w["jobsize"]) == (10000, 1000, 100)
    assert w["fairshare"] > w["age"] > w["jobsize"] > 0


@pytest.mark.parametrize("key", ["PriorityMaxAge=7-0", "PriorityDecayHalfLife=7-0"])
def test_usage_and_waiting_count_over_a_week(tmp_path: Path, key: str) -> None:
    assert key in written(tmp_path, fifo=False).read_text().splitlines()


def test_fifo_writes_every_weight_zero(tmp_path: Path) -> None:
    w = weights(written(tmp_path, fifo=True))
    assert w.pop("type") == "priority/multifactor"
    assert set(w.values()) == {0}, w
