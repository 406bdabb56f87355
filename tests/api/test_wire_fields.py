"""Answers carry every field of their wire dataclass.

The commands read answers as attribute views (``cli.client.Record``) without
building the dataclasses of ``slurmlite.protocol`` (start-up time), so a
field the controller leaves out would be an AttributeError in squeue or sacct
rather than a default value.  These tests pin the answers to the dataclasses.
"""

from __future__ import annotations

import dataclasses

from slurmlite.protocol import JobInfo, NodeInfo, PartitionInfo, StepInfo
from tests.api.conftest import register


def _names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_job_listing_and_accounting_carry_every_jobinfo_and_stepinfo_field(harness):
    h = harness
    register(h.ctl, "n1")
    jid = h.submit(name="fields")["job_id"]
    h.tick()
    h.ctl.jobs.complete("n1", _completion(jid))
    for path in ("/v1/jobs?all_states=true&steps=true", "/v1/accounting"):
        [job] = [j for j in h.client.get(path).json()["jobs"] if j["job_id"] == jid]
        assert set(job) == _names(JobInfo), path
        assert job["steps"], path  # the batch step was recorded
        assert set(job["steps"][0]) == _names(StepInfo), path
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_node_and_partition_answers_carry_every_field(harness):
    h = harness
    register(h.ctl, "n1")
    nodes = h.client.get("/v1/nodes").json()["nodes"]
    assert nodes and all(set(n) == _names(NodeInfo) for n in nodes)
    parts = h.client.get("/v1/partitions").json()["partitions"]
    assert parts and all(set(p) == _names(PartitionInfo) for p in parts)


def _completion(job_id: int):  # type: ignore[no-untyped-def]
    from slurmlite.protocol import JobCompletion

    return JobCompletion(node="n1", job_id=job_id, restarts=0, step_id="batch", exit_code=0)
