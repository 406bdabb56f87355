"""Node registration checks and admin node updates through the API."""

from __future__ import annotations

from tests.api.conftest import ROOT, register


def nodes(h) -> dict[str, dict]:
    return {n["name"]: n for n in h.client.get("/v1/nodes").json()["nodes"]}


def test_node_reporting_less_than_configured_is_drained_with_slurms_reason(harness):
    h = harness
    register(h.ctl, "n2", gpus=0)
    n2 = nodes(h)["n2"]
    assert "DRAIN" in n2["flags"] and "INVALID_REG" in n2["flags"]
    assert n2["reason"] == "gres/gpu count reported lower than configured (0 < 2)"
    register(h.ctl, "n2", cpus=1)
    assert nodes(h)["n2"]["reason"] == "Low socket*core*thread count"
    # a good registration clears a registration problem by itself
    register(h.ctl, "n2")
    assert nodes(h)["n2"]["flags"] == [] and nodes(h)["n2"]["state"] == "IDLE"


def test_jobs_avoid_a_drained_node(harness):
    h = harness
    h.as_user(ROOT)
    r = h.client.post(
        "/v1/nodes/update", json={"names": ["n1"], "state": "DRAIN", "reason": "bad fan"}
    )
    assert r.status_code == 200
    jid = h.submit()["job_id"]
    h.tick()
    assert h.job(jid)["nodes"] == ["n2"]
    n1 = nodes(h)["n1"]
    assert (n1["flags"], n1["reason"], n1["reason_user"]) == (["DRAIN"], "bad fan", "root")
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_drain_needs_a_reason_and_resume_clears_it(harness):
    h = harness
    h.as_user(ROOT)
    r = h.client.post("/v1/nodes/update", json={"names": ["n[1-2]"], "state": "DRAIN"})
    assert r.status_code == 400 and "reason" in r.json()["detail"]
    h.client.post(
        "/v1/nodes/update", json={"names": ["n[1-2]"], "state": "DRAIN", "reason": "maint"}
    )
    assert all("DRAIN" in n["flags"] for n in nodes(h).values())
    h.client.post("/v1/nodes/update", json={"names": ["n1"], "state": "RESUME"})
    assert nodes(h)["n1"]["flags"] == [] and nodes(h)["n1"]["reason"] is None
    r = h.client.post("/v1/nodes/update", json={"names": ["zz9"], "state": "RESUME"})
    assert r.status_code in (400, 404) and r.json()["error"] == "Invalid node name specified"


def test_a_node_write_that_finishes_during_a_read_is_not_hidden_by_the_cache(harness, monkeypatch):
    """The controller caches node rows until a node write; a read running in another
    thread while a write commits must not cache what it saw before that commit
    (else a node that just registered would be shown UNKNOWN until the next write)."""
    from contextlib import contextmanager

    from slurmlite.protocol import NodeUpdate

    nodes = harness.ctl.nodes
    nodes.rows()  # warm, then drop the cache as a write would
    nodes._rows = None
    real_read = nodes.db.read
    wrote = []

    @contextmanager
    def read_then_a_write_commits():
        with real_read() as s:
            yield s  # rows() selects here: it sees n1 not drained
        if not wrote:  # ... and before rows() stores that list, a drain commits
            wrote.append(True)
            nodes.update(NodeUpdate(names=["n1"], state="DRAIN", reason="disk"), uid=0)

    monkeypatch.setattr(nodes.db, "read", read_then_a_write_commits)
    nodes.rows()
    monkeypatch.setattr(nodes.db, "read", real_read)
    assert wrote
    [n1] = [r for r in nodes.rows() if r.name == "n1"]
    assert n1.drain  # the drain shows at once, not after some later write
