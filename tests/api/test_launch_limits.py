"""A job the controller accepts is one its agents launch, and a refused launch ends it whole.

Both daemons check numbers against one table (``slurmlite.wire_limits``); a
field whose range was narrower on the agent's side than what the controller
let through made an accepted job unlaunchable: ``--time=99999999`` (minutes)
became a ``time_limit_s`` of 5,999,999,940, past a 32-bit count, and the
agent answered 422.  The walk below takes every bounded integer of a
submission, finds the largest value submit accepts (the top of its range, or
by bisection below it), runs the job and hands its batch launch, and a step's
launch, to the agent's own body models.
"""

from __future__ import annotations

import dataclasses
import typing

import pytest

from agent.app import LaunchBody
from agent.steproutes import StepBody
from controller.nodes.agent_client import AgentAddress, AgentError
from slurmlite.protocol import JobSubmit, LaunchSpec
from slurmlite.wire_limits import bounds
from tests.recording_agents import Order, RecordingAgentClient


def _bounded_fields() -> list[str]:
    hints = typing.get_type_hints(JobSubmit)
    return [
        f.name
        for f in dataclasses.fields(JobSubmit)
        if hints[f.name] is int or int in typing.get_args(hints[f.name])
    ]


BOUNDED = _bounded_fields()
# the requests that, at their largest, are more than any cluster has: accepted, pending
WAITS = {"nodes_min"}


def _accepted(h, name: str, value: int) -> bool:  # type: ignore[no-untyped-def]
    return h.post_job(hold=True, **{name: value}).status_code == 200


def largest_accepted(h, name: str) -> int | None:  # type: ignore[no-untyped-def]
    """The largest value of ``name`` that submit accepts (held probes), None if none is."""
    lo, hi = bounds(name)
    if _accepted(h, name, hi):
        return hi
    if not _accepted(h, name, lo):
        return None
    while hi - lo > 1:  # lo accepted, hi refused
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _accepted(h, name, mid) else (lo, mid)
    return lo


def test_the_walk_covers_the_fields_that_reach_a_launch():
    assert {"time_limit", "mem_per_node", "mem_per_cpu", "gpus_per_node", "nice"} <= set(BOUNDED)


@pytest.mark.parametrize("name", BOUNDED)
def test_the_largest_value_submit_accepts_makes_a_launch_the_agent_accepts(harness, name):
    h = harness
    top = largest_accepted(h, name)
    assert top is not None, f"submit accepts no value of {name}"
    r = h.post_job(**{name: top})
    assert r.status_code == 200, r.text
    jid = r.json()["job_id"]
    h.tick()
    job = h.job(jid)
    if job["state"] == "PENDING":  # more than the cluster has: it waits, as in Slurm, and
        assert name in WAITS and job["reason"] != "None", (name, top, job["reason"])
        return  # ... never launches: there is no launch to check
    assert job["state"] == "RUNNING", (name, top, job["reason"])
    [launch] = h.agents.take("launch", 1)
    body = dataclasses.asdict(launch.spec)
    LaunchBody.model_validate(body)  # raises (a 422 on the wire) if the agent would refuse it
    step = h.client.post(f"/v1/jobs/{jid}/steps", json={"argv": ["/bin/true"], "work_dir": "/"})
    assert step.status_code == 200, step.text
    for order in step.json()["launches"]:
        StepBody.model_validate(order)


def test_a_time_limit_of_99999999_minutes_reaches_the_agent_intact(harness):
    h = harness
    jid = h.submit(time_limit=99_999_999)["job_id"]
    h.tick()
    [launch] = h.agents.take("launch", 1)
    assert launch.spec.time_limit_s == 99_999_999 * 60
    assert LaunchBody.model_validate(dataclasses.asdict(launch.spec)).time_limit_s == 5_999_999_940
    assert h.job(jid)["state"] == "RUNNING"


class RefusingAgents(RecordingAgentClient):
    """Records launches and refuses every one, as an agent answering 422 or 403 does."""

    async def launch_many(
        self, to: AgentAddress, specs: list[LaunchSpec]
    ) -> list[AgentError | None]:
        self.sent.extend(Order("launch", to.node, spec) for spec in specs)
        return [AgentError("422: time_limit_s out of range", refused=True) for _ in specs]


def test_a_refused_launch_ends_the_batch_step_with_the_job(harness):
    h = harness
    agents = h.ctl.agents = h.ctl.loop.agents = RefusingAgents()
    jid = h.submit()["job_id"]
    h.tick()
    agents.take("launch", 1)
    job = h.job(jid)
    assert (job["state"], job["reason"], job["exit_code"]) == ("FAILED", "JobLaunchFailure", 53)
    [step] = job["steps"]
    # as the agent's own report of a launch failure ends it (controller.steps.ends.step_state)
    assert (step["step_id"], step["state"], step["exit_code"]) == ("batch", "CANCELLED", 53)
    assert step["end_time"] == job["end_time"] == h.clock()
