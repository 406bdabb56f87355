"""The recording agent client: the controller's orders kept for the test to check.

``controller.nodes.agent_client.AgentClient`` is the seam between the
controller and its node agents (DESIGN.md §4 rule 9).  This fake stands in
for ``HttpAgentClient``: every launch or signal order it is given is
appended to ``sent`` as an ``Order(kind, node, spec)`` and nothing is sent
anywhere; ``fail_nodes`` names nodes whose agent "cannot be reached" (the
call raises ``AgentError`` and records nothing); ``mute_nodes`` names nodes
whose agent gets the orders (recorded) and dies before answering.

A test takes the orders it expects and then says nothing else was sent::

    h.tick()                                   # the pass starts job 1 on n1
    [launch] = h.agents.take("launch", 1)      # exactly one launch order ...
    assert (launch.node, launch.spec.job_id) == ("n1", 1)
    h.agents.assert_nothing_else()             # ... and no other order at all

``take(kind, n)`` removes the orders of that kind from ``sent`` and fails
unless there were exactly ``n``; kinds are ``"launch"``, ``"signal"`` (a
terminate order is a signal whose ``spec.signal`` is ``None``), ``"note"``
(a line for a running job's stderr, ``spec.line``) and ``"tail"`` (the end
of a job's output files, answered from ``files[(node, path)]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from controller.nodes.agent_client import AgentAddress, AgentError
from slurmlite.protocol import LaunchSpec, NoteSpec, SignalSpec, TailSpec


class Order(NamedTuple):
    """One order as the controller gave it: ``launch``/``signal``, the node, the spec."""

    kind: str
    node: str
    spec: Any


@dataclass
class RecordingAgentClient:
    """Records every order; ``fail_nodes`` simulates unreachable agents."""

    sent: list[Order] = field(default_factory=list)
    fail_nodes: set[str] = field(default_factory=set)
    # nodes whose agent gets the orders but dies before answering (recorded, then raises)
    mute_nodes: set[str] = field(default_factory=set)
    # what each node's files hold, for tail requests (path -> text; a path not here: no file)
    files: dict[tuple[str, str], str] = field(default_factory=dict)

    async def launch(self, to: AgentAddress, spec: LaunchSpec) -> None:
        self._reach(to)
        self.sent.append(Order("launch", to.node, spec))

    async def launch_many(
        self, to: AgentAddress, specs: list[LaunchSpec]
    ) -> list[AgentError | None]:
        self._reach(to)
        self.sent.extend(Order("launch", to.node, spec) for spec in specs)
        if to.node in self.mute_nodes:
            raise AgentError(f"node {to.node} did not answer", unanswered=True)
        return [None] * len(specs)

    async def signal(self, to: AgentAddress, spec: SignalSpec) -> None:
        self._reach(to)
        self.sent.append(Order("signal", to.node, spec))

    async def note(self, to: AgentAddress, spec: NoteSpec) -> None:
        self._reach(to)
        self.sent.append(Order("note", to.node, spec))

    async def tail(self, to: AgentAddress, spec: TailSpec) -> list[dict[str, Any]]:
        self._reach(to)
        self.sent.append(Order("tail", to.node, spec))
        found = [(p, self.files.get((to.node, p))) for p in spec.paths]
        return [{"path": p, "found": t is not None, "data": t or ""} for p, t in found]

    async def close(self) -> None:
        return None

    def _reach(self, to: AgentAddress) -> None:
        if to.node in self.fail_nodes:
            raise AgentError(f"node {to.node} unreachable")

    # ------------------------------------------------------------ checks

    def take(self, kind: str, n: int) -> list[Order]:
        """The orders of ``kind`` sent so far, in order; asserts there are exactly ``n``.

        The orders taken are removed, so ``assert_nothing_else`` sees only the rest.
        """
        taken = [o for o in self.sent if o.kind == kind]
        assert len(taken) == n, f"expected {n} {kind} order(s), the controller sent {taken}"
        self.sent[:] = [o for o in self.sent if o.kind != kind]
        return taken

    def assert_nothing_else(self) -> None:
        """No order is left that the test did not take."""
        assert self.sent == [], f"orders sent but not expected: {self.sent}"
