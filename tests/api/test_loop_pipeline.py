"""The scheduler loop as a pipeline: passes do not wait for agents to answer launches,
pending jobs are not rebuilt every pass, a leftover batch step is replaced."""

from __future__ import annotations

import asyncio

from sqlalchemy import update

from controller.nodes.agent_client import AgentAddress, AgentError
from controller.sched import gather
from controller.store.models import JobRow, StepRow
from slurmlite.protocol import LaunchSpec
from tests.recording_agents import Order, RecordingAgentClient


class SlowAgents(RecordingAgentClient):
    """Records launches at once but answers them only when ``answer`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.answer = asyncio.Event()

    async def launch_many(
        self, to: AgentAddress, specs: list[LaunchSpec]
    ) -> list[AgentError | None]:
        self.sent.extend(Order("launch", to.node, spec) for spec in specs)
        await self.answer.wait()
        return [None] * len(specs)


def launched(agents: RecordingAgentClient) -> list[int]:
    return sorted(spec.job_id for kind, _node, spec in agents.sent if kind == "launch")


async def until(condition, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def test_a_pass_does_not_wait_for_the_agents_to_answer_the_last_ones_launches(harness):
    h = harness
    agents = h.ctl.agents = SlowAgents()
    first = h.submit()["job_id"]

    async def scenario() -> None:
        running = asyncio.create_task(h.ctl.loop.run())
        await until(lambda: launched(agents) == [first])  # sent, not answered
        second = (await asyncio.to_thread(h.submit))["job_id"]
        h.ctl.loop.wake()
        # the next pass started the second job while the first launch is still unanswered
        await until(lambda: launched(agents) == [first, second])
        h.ctl.loop.stop()
        await asyncio.sleep(0.2)
        assert not running.done()  # stopping waits for the orders on their way ...
        agents.answer.set()
        await asyncio.wait_for(running, timeout=10)  # ... and ends once they arrived

    asyncio.run(scenario())
    assert h.job(first)["state"] == "RUNNING"


def test_unchanged_pending_jobs_are_not_rebuilt_and_changed_ones_are(harness):
    h = harness
    a, b = h.submit()["job_id"], h.submit()["job_id"]  # pending: no pass has run
    cache = gather.PendingCache()

    def take():  # type: ignore[no-untyped-def]
        return gather.take(h.ctl.db, h.ctl.cfg, h.ctl.nodes, h.clock(), cache)

    first, _ = take()
    again, current = take()
    assert [j.job_id for j in again.pending] == [a, b]
    assert all(x is y for x, y in zip(first.pending, again.pending, strict=True))
    assert current[a] == (h.job(a)["reason"], None)  # (reason, description) as stored
    with h.ctl.db.write() as s:  # a new priority for b (any column of its request counts)
        s.execute(update(JobRow).where(JobRow.id == b).values(priority=12345))
    changed, _ = take()
    assert changed.pending[0] is first.pending[0]
    assert changed.pending[1] is not first.pending[1] and changed.pending[1].priority == 12345


def test_held_jobs_are_left_out_of_the_pass_and_keep_their_reason(harness):
    h = harness
    held = h.submit(hold=True)["job_id"]
    free = h.submit()["job_id"]
    snap, current = gather.take(h.ctl.db, h.ctl.cfg, h.ctl.nodes, h.clock())
    assert [j.job_id for j in snap.pending] == [free] and held not in current
    h.tick()
    assert h.job(held)["state"] == "PENDING" and h.job(held)["reason"] == "JobHeldUser"
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_batch_step_left_from_an_earlier_run_is_replaced_by_the_new_runs(harness):
    h = harness
    jid = h.submit()["job_id"]
    with h.ctl.db.write() as s:  # as a requeued run could leave it
        s.add(
            StepRow(
                job_id=jid,
                step_id="batch",
                name="old",
                state="FAILED",
                exit_code=9,
                start_time=1.0,
                end_time=2.0,
                nodes="n2",
                cpus=2,
                mem=5,
            )
        )
    h.tick()
    job = h.job(jid)
    [step] = job["steps"]
    assert (job["state"], step["state"], step["exit_code"], step["end_time"]) == (
        "RUNNING",
        "RUNNING",
        None,
        None,
    )
    assert (step["start_time"], step["nodes"]) == (h.clock(), job["nodes"])
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()
