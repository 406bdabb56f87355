"""agent.completions: batched reports, and acknowledged files reused instead of deleted."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from slurmlite.protocol import JobCompletion
from tests.agent.test_supervision import FakeController, agent_state, until


class CountingController(FakeController):
    """Also counts requests."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    async def post(self, path: str, payload: dict[str, Any]) -> Any:
        self.requests += 1
        return await super().post(path, payload)


def done(job_id: int, status: int = 0) -> JobCompletion:
    return JobCompletion("n1", job_id, 0, "batch", status, 1.0, 2.0)


def test_what_is_owed_goes_in_one_request_and_its_files_are_reused(area: Path) -> None:
    spool = area / "spool"
    completions = spool / "completions"

    async def scenario() -> None:
        state = agent_state(spool)
        controller = CountingController()
        state.post = controller.post  # type: ignore[method-assign]
        for job_id in (1, 2, 3):
            state._queue(done(job_id, job_id << 8))
        assert sorted(p.name for p in completions.glob("*.json")) == [
            "1.0.json",
            "2.0.json",
            "3.0.json",
        ]
        reporter = asyncio.create_task(state.report_forever())
        try:
            await until(lambda: state.held_jobs() == [])
            assert controller.requests == 1  # three completions, one request
            assert [m["exit_code"] for m in controller.received] == [1 << 8, 2 << 8, 3 << 8]
            spares = sorted(completions.glob(".spare-*"))
            assert len(spares) == 3 and list(completions.glob("*.json")) == []
            inodes = {p.stat().st_ino for p in spares}
            state._queue(done(4))  # written over a spare: no new file
            assert (completions / "4.0.json").stat().st_ino in inodes
            await until(lambda: state.held_jobs() == [])
            assert controller.requests == 2 and controller.received[-1]["job_id"] == 4
        finally:
            reporter.cancel()
            await state.shutdown()

    asyncio.run(asyncio.wait_for(scenario(), timeout=30))
    assert len(list(completions.glob(".spare-*"))) == 3
    agent_state(spool)  # the next agent starts without an earlier one's spares
    assert list(completions.glob(".spare-*")) == []
