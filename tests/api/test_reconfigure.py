"""scontrol reconfigure: reread slurm.conf without dropping jobs."""

from __future__ import annotations

from pathlib import Path

from slurmlite import errors
from tests.api.conftest import CONF, ROOT


def test_reconfigure_applies_new_partitions_and_defaults_and_keeps_jobs(harness, tmp_path):
    h = harness
    conf = Path(h.ctl.cfg.path)
    text = CONF.format(dir=conf.parent)
    conf.write_text(text)
    running = h.submit()["job_id"]
    h.tick()
    conf.write_text(
        text.replace("DefMemPerCPU=1000", "DefMemPerCPU=500")
        + "PartitionName=gpu Nodes=n2 MaxTime=30 State=UP\n"
    )
    h.as_user(ROOT)
    r = h.client.post("/v1/reconfigure")
    assert r.status_code == 200 and r.json()["warnings"] == []
    parts = [p["name"] for p in h.client.get("/v1/partitions").json()["partitions"]]
    assert parts == ["debug", "long", "gpu"]
    assert h.job(running)["state"] == "RUNNING"
    jid = h.submit(partition="gpu")["job_id"]
    assert h.job(jid)["mem_per_cpu"] == 500 and h.job(jid)["time_limit"] == 30
    h.tick()
    assert h.job(jid)["nodes"] == ["n2"]
    h.agents.take("launch", 2)
    h.agents.assert_nothing_else()


def test_reconfigure_is_for_admins_and_a_broken_file_changes_nothing(harness):
    h = harness
    conf = Path(h.ctl.cfg.path)
    r = h.client.post("/v1/reconfigure")
    assert r.status_code == 403 and r.json()["errno"] == errors.ESLURM_ACCESS_DENIED
    h.as_user(ROOT)
    conf.write_text(CONF.format(dir=conf.parent) + "NodeName=n9 CPUs=abc\n")
    r = h.client.post("/v1/reconfigure")
    assert r.status_code == 400 and "slurm.conf:" in r.json()["detail"]
    assert [p["name"] for p in h.client.get("/v1/partitions").json()["partitions"]] == [
        "debug",
        "long",
    ]


def test_restart_only_keys_are_kept_with_a_warning(harness):
    h = harness
    conf = Path(h.ctl.cfg.path)
    conf.write_text(
        CONF.format(dir=conf.parent).replace(
            "ClusterName=anchor", "ClusterName=anchor\nSlurmctldPort=7000"
        )
    )
    h.as_user(ROOT)
    old = h.ctl.cfg.slurmctld_port
    warnings = h.client.post("/v1/reconfigure").json()["warnings"]
    assert warnings == ["SlurmctldPort changed: restart slurmctld to apply it"]
    assert h.ctl.cfg.slurmctld_port == old
