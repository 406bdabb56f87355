"""Agent fencing (agent.cutoff): cut off from the controller, the agent kills its runs.

The rules on a fake clock, the probe against real sockets on loopback, and a
real agent state killing a real run and reporting it ``fenced``.  The
several-hosts test (tests/e2e/test_hosts.py) cuts a real link.
"""

from __future__ import annotations

import asyncio
import errno
import socket
from pathlib import Path
from typing import Any

import pytest

from agent import cutoff
from agent.cutoff import ContactWatch, reachable, watch_forever
from slurmlite.clock import FakeClock
from tests.agent.jobs import a_spec, is_live, out_of
from tests.agent.test_supervision import FakeController, agent_state, until


def test_fence_after_leaves_a_margin_before_slurmdtimeout() -> None:
    clock = FakeClock(0)
    assert ContactWatch(6, 1, clock).fence_after == 5  # one heartbeat early
    assert ContactWatch(300, 30, clock).fence_after == 270
    assert ContactWatch(2, 5, clock).fence_after == 1  # never more than half the timeout
    assert ContactWatch(10, 0.2, clock).fence_after == 9  # at least a second early


def test_silence_counts_from_the_send_time_of_the_last_answered_request() -> None:
    clock = FakeClock(100)
    watch = ContactWatch(6, 1, clock)
    clock.advance(4.9)
    assert not watch.due()
    clock.advance(0.1)  # 5 s after the agent started: nothing heard since
    assert watch.due()
    watch.heard(sent_at=103.0)  # a request sent at 103 was answered (slowly) at 105
    assert watch.silence() == 2 and not watch.due()
    watch.heard(sent_at=101.0)  # an older request answered later changes nothing
    assert watch.silence() == 2
    clock.advance(3)
    assert watch.due()


def test_fencing_is_once_per_silence_and_rearmed_by_contact() -> None:
    clock = FakeClock(0)
    watch = ContactWatch(6, 1, clock)
    clock.advance(5)
    assert watch.due()
    watch.fenced = True
    clock.advance(60)
    assert not watch.due()  # the same outage: the runs are already gone
    watch.heard()
    assert not watch.fenced
    clock.advance(5)
    assert watch.due()  # a new outage


def test_slurmdtimeout_zero_never_fences() -> None:
    clock = FakeClock(0)
    watch = ContactWatch(0, 1, clock)
    clock.advance(10_000)
    assert not watch.enabled and not watch.due()


# ------------------------------------------------------------ the probe


def test_a_listening_port_and_a_closed_port_both_answer() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        assert asyncio.run(reachable("127.0.0.1", port))  # accepted: stalled or fine
    finally:
        server.close()
    # nothing listens now: the host refuses, so it is there (the controller is down)
    assert asyncio.run(reachable("127.0.0.1", port))


@pytest.mark.parametrize(
    "failure", [TimeoutError(), OSError(errno.EHOSTUNREACH, "No route to host")]
)
def test_no_answer_at_all_means_cut_off(
    monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    async def silent(host: str, port: int) -> Any:
        raise failure

    monkeypatch.setattr(cutoff.asyncio, "open_connection", silent)
    assert not asyncio.run(reachable("10.0.0.1", 6817))


def test_a_connect_that_hangs_counts_as_no_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    async def hangs(host: str, port: int) -> Any:
        await asyncio.sleep(60)

    monkeypatch.setattr(cutoff.asyncio, "open_connection", hangs)
    assert not asyncio.run(reachable("10.0.0.1", 6817, timeout=0.05))


def test_the_watch_fences_once_when_the_host_is_silent_never_when_it_answers() -> None:
    async def scenario(answers: bool) -> list[float]:
        clock = FakeClock(0)
        watch = ContactWatch(6, 1, clock)
        fenced: list[float] = []
        probes: list[str] = []

        async def probe(host: str, port: int) -> bool:
            probes.append(f"{host}:{port}")
            return answers

        async def fence(silence: float) -> None:
            fenced.append(silence)

        task = asyncio.create_task(watch_forever(watch, "ctl", 6817, fence, probe, every=0.001))
        await asyncio.sleep(0.02)
        assert probes == [] and fenced == []  # not silent long enough: no probe yet
        clock.advance(5.5)
        await until(lambda: len(probes) >= 1)
        await asyncio.sleep(0.05)  # many more checks of the same silence
        task.cancel()
        assert set(probes) == {"ctl:6817"}
        return fenced, len(probes)

    fenced, probes = asyncio.run(scenario(answers=False))
    assert (fenced, probes) == ([5.5], 1)  # once, however long it lasts; no more probes
    fenced, probes = asyncio.run(scenario(answers=True))
    assert fenced == [] and probes > 1  # stalled or down: ridden out, and asked again


# ------------------------------------------------------------ the agent


def test_fencing_kills_the_run_and_reports_its_end_marked_fenced(area: Path) -> None:
    spool = area / "spool"
    ready = area / "work" / "ready"

    async def scenario() -> None:
        state = agent_state(spool)
        controller = FakeController()
        state.post = controller.post  # type: ignore[method-assign]
        try:
            spec = a_spec(area, 80, f"touch {ready}\nsleep 1000\n")
            assert await state.launch(spec) == "started"
            await until(ready.exists)
            pid = state.jobs[(80, 0)].proc.pid
            await state.fence(5.2)
            await until(lambda: not is_live(pid))
            reporter = asyncio.create_task(state.report_forever())
            await until(lambda: state.held_jobs() == [])
            reporter.cancel()
            [done] = controller.received
            assert (done["job_id"], done["fenced"]) == (80, True)
        finally:
            await state.shutdown()

    asyncio.run(asyncio.wait_for(scenario(), timeout=30))
    text = out_of(area, 80)
    assert " CANCELLED AT " in text
    assert text.rstrip().endswith("DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***")


def test_an_answered_request_or_a_signed_order_is_contact(area: Path) -> None:
    async def scenario() -> None:
        timer = FakeClock(0)
        state = agent_state(area / "spool", timer=timer)
        try:
            assert state.contact.fence_after == 299  # SlurmdTimeout's default 300 s
            timer.advance(299)
            assert state.contact.due()
            state.http = _Answering()  # type: ignore[assignment]
            await state.post("/v1/nodes/n1/heartbeat", {})
            assert state.contact.silence() == 0 and not state.contact.due()
        finally:
            await state.shutdown()

    asyncio.run(scenario())


class _Answering:
    """An HTTP client whose every POST gets 200."""

    async def post(self, url: str, **_: Any) -> Any:
        return type("Answer", (), {"status_code": 200})()

    async def aclose(self) -> None:
        pass
