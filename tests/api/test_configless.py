"""``GET /v1/config/files``: what a configless agent (``slurmd --conf-server``) caches.

The harness's slurm.conf path is given a real file here, with an Include
and a store URL carrying a password, as a lab's might.
"""

from __future__ import annotations

import pytest

from slurmlite.config import parse_config
from tests.api.conftest import ALICE, harness_on


@pytest.fixture
def h(tmp_path):
    yield from harness_on(tmp_path, f"sqlite:///{tmp_path}/s.db")  # no store is read here


def test_the_config_is_served_whole_without_the_store_url(h, tmp_path):
    (tmp_path / "nodes.conf").write_text("NodeName=n[1-2] CPUs=2 RealMemory=4000  # two\n")
    (tmp_path / "slurm.conf").write_text(
        "ClusterName=anchor\n"
        "SlurmliteStoreURL=postgresql://sl:secret@db/sl KillWait=2\n"
        "Include nodes.conf\n"
        "PartitionName=debug Nodes=ALL Default=YES\n"
    )
    (tmp_path / "gres.conf").write_text("AutoDetect=off\n")
    h.as_user(ALICE)  # any authenticated user may read it, as slurm.conf on a Slurm host
    r = h.client.get("/v1/config/files")
    assert r.status_code == 200, r.text
    files = r.json()["files"]
    assert files == {
        "slurm.conf": "ClusterName=anchor\nKillWait=2\nNodeName=n[1-2] CPUs=2 RealMemory=4000\n"
        "PartitionName=debug Nodes=ALL Default=YES\n",
        "gres.conf": "AutoDetect=off\n",
    }
    assert "secret" not in r.text
    cfg = parse_config(files["slurm.conf"], "/var/spool/slurmd/conf-cache/slurm.conf")
    assert [n.name for n in cfg.nodes] == ["n1", "n2"] and cfg.kill_wait == 2


def test_an_unreadable_config_is_a_slurm_error_not_a_crash(h):
    # the harness's slurm.conf path names no file: edited away since the start
    r = h.client.get("/v1/config/files")
    assert r.status_code == 400, r.text
    answer = r.json()
    assert answer["error"] == "Invalid configuration file"
    assert "cannot read" in answer["detail"]
