"""The agent decides on the clocks it is given, never on its own reading of ``time``.

``AgentState.clock`` (Unix seconds) and ``AgentState.timer`` (monotonic
seconds) are ``slurmlite.clock.FakeClock`` objects here, moved by hand: an
order's expiry, a request's clock skew, how long a replayed nonce is
remembered and the kill sequence's grace are each shown at the second they
change, without a single sleep.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.completions import RETRY_MAX_S, retry_delay
from agent.daemon import AgentState
from agent.killing import JobSignals
from agent.orders import PRUNE_EVERY_S, OrderRefused
from slurmlite.clock import FakeClock
from slurmlite.credential import MAX_SKEW, CredentialError
from slurmlite.protocol import SignalSpec
from tests.agent.signing import request_headers, signed
from tests.agent.test_supervision import agent_state

T0 = 1_000_000.0  # the fake clock's start, Unix seconds


def terminate_order(job_id: int) -> SignalSpec:
    return SignalSpec(credential="", job_id=job_id, restarts=0, signal=None)


@pytest.fixture
def clocked(area: Path) -> Iterator[tuple[AgentState, FakeClock]]:
    """Agent n1 whose clock stands at ``T0`` until the test moves it."""
    clock = FakeClock(T0)
    state = agent_state(area / "spool", clock=clock, timer=FakeClock(0.0))
    try:
        yield state, clock
    finally:
        asyncio.run(state.shutdown())


def test_an_order_expires_on_the_agents_clock(clocked: tuple[AgentState, FakeClock]) -> None:
    state, clock = clocked
    first = signed(terminate_order(5), now=clock(), ttl=60)  # valid until T0 + 60
    late = signed(terminate_order(5), now=clock(), ttl=60)
    clock.advance(60)  # T0 + 60: the last second it is good
    assert state.verify_order("signal", first)["job"] == 5
    clock.advance(1)  # T0 + 61: one second too late
    with pytest.raises(OrderRefused, match="credential expired"):
        state.verify_order("signal", late)


def test_a_request_is_refused_once_its_stamp_is_further_than_max_skew_from_the_agents_clock(
    clocked: tuple[AgentState, FakeClock],
) -> None:
    state, clock = clocked
    path, body = "/v1/signal", b"{}"
    on_time = request_headers(path, body, now=clock())
    stale = request_headers(path, body, now=clock())
    clock.advance(MAX_SKEW)  # exactly MAX_SKEW apart: still accepted
    state.check_request(on_time, "POST", path, body)
    clock.advance(1)  # MAX_SKEW + 1 s
    with pytest.raises(CredentialError, match="clock skew of 301 s"):
        state.check_request(stale, "POST", path, body)


def test_a_seen_nonce_is_forgotten_once_the_agents_clock_passes_its_expiry(
    clocked: tuple[AgentState, FakeClock],
) -> None:
    state, clock = clocked
    nonce = state.verify_order("signal", signed(terminate_order(6), now=clock(), ttl=60))["nonce"]
    assert nonce in state.gate.seen
    # past its expiry (T0 + 60) and the prune interval: the next order prunes it
    clock.advance(60 + PRUNE_EVERY_S + 1)
    state.verify_order("signal", signed(terminate_order(7), now=clock(), ttl=60))
    assert nonce not in state.gate.seen and len(state.gate.seen) == 1


class Stubborn(JobSignals):
    """A run whose processes ignore SIGTERM; ``obeys_kill``: whether SIGKILL ends them."""

    def __init__(self, timer: FakeClock, obeys_kill: bool = True) -> None:
        self.job_id = 9
        self.std_err = None
        self.timer = timer
        self.sent: list[int] = []
        self.kills = 0
        self.obeys_kill = obeys_kill
        self._group_gone = False

    def signal(self, sig: int, batch_only: bool = False) -> bool:
        self.sent.append(sig)
        return True

    def group_alive(self) -> bool:
        return not self._group_gone

    def _kill_all(self) -> None:
        self.kills += 1
        self._group_gone = self.obeys_kill


def test_the_kill_sequence_waits_kill_wait_on_the_runs_timer_then_kills() -> None:
    timer = FakeClock(0.0)
    run = Stubborn(timer)
    steps = run._terminate_steps(kill_wait=30, message=None, unkillable_wait=5)
    assert next(steps) == run._POLL_S and run.sent == [signal.SIGCONT, signal.SIGTERM]
    for _ in range(1000):  # however many polls: the timer stands still, the grace lasts
        assert next(steps) == run._POLL_S
    assert run.kills == 0
    timer.advance(29)
    assert next(steps) == run._POLL_S and run.kills == 0  # 1 s of KillWait left
    timer.advance(1)  # KillWait=30 is over
    assert next(steps) is None and run.kills == 1 and not run.group_alive()


def test_sigkill_is_repeated_for_unkillable_wait_then_given_up() -> None:
    timer = FakeClock(0.0)
    run = Stubborn(timer, obeys_kill=False)
    steps = run._terminate_steps(kill_wait=0, message=None, unkillable_wait=5)
    assert next(steps) == run._POLL_S and run.kills == 1  # KillWait=0: SIGKILL at once
    assert next(steps) == run._POLL_S and run.kills == 2  # and again each poll
    timer.advance(5)  # unkillable_wait is over: logged, no more rounds
    assert next(steps) is None and run.kills == 3 and run.group_alive()


def test_failed_reports_and_registrations_back_off_by_doubling_up_to_a_cap() -> None:
    delays, delay = [], None
    for _ in range(7):
        delay = retry_delay(delay)
        delays.append(delay)
    # 0.2 s, doubled each failure, at most RETRY_MAX_S (5 s)
    assert delays == [0.2, 0.4, 0.8, 1.6, 3.2, RETRY_MAX_S, RETRY_MAX_S]
