"""The controller's agent client cuts a pass's launches for one node into requests the
agent accepts (it refuses bodies over 64 MiB), and tells an agent it could not reach
from one that got the order but never answered."""

from __future__ import annotations

from pathlib import Path

from controller.nodes.agent_client import LAUNCH_BATCH_BYTES, AgentError, _by_size
from tests.agent.jobs import a_spec


def test_large_launch_batches_are_split_and_small_ones_kept_whole(tmp_path: Path) -> None:
    small = [a_spec(tmp_path, i, "true") for i in range(100)]
    assert _by_size(small, LAUNCH_BATCH_BYTES) == [small]  # ~100 x 1 KiB: one request
    big = [a_spec(tmp_path, 100 + i, "x" * (12 << 20)) for i in range(5)]
    chunks = _by_size(big, LAUNCH_BATCH_BYTES)
    # 12 MiB each under a 32 MiB budget: two per request -> 2 + 2 + 1, order kept
    assert [len(c) for c in chunks] == [2, 2, 1]
    assert [s for c in chunks for s in c] == big
    huge = a_spec(tmp_path, 200, "y" * (40 << 20))  # over the budget alone: still sent, alone
    assert _by_size([small[0], huge, small[1]], LAUNCH_BATCH_BYTES) == [
        [small[0]],
        [huge],
        [small[1]],
    ]


def _launch_against(handler: str, tmp_path: Path) -> list[AgentError | None]:
    """``launch_many`` to an "agent" on loopback that ``handler`` says how to treat."""
    import asyncio
    import socket

    from controller.nodes.agent_client import AgentAddress, HttpAgentClient, Signer

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    if handler == "closed":
        server.close()  # nothing listens: refused before a byte left

    async def run() -> list[AgentError | None]:
        loop = asyncio.get_running_loop()
        accepted: list[socket.socket] = []

        async def serve() -> None:  # read the request, then hang up without a word
            conn, _ = await loop.sock_accept(server)
            accepted.append(conn)
            await loop.sock_recv(conn, 65536)
            conn.close()

        if handler == "hangs_up":
            server.setblocking(False)
            task = asyncio.ensure_future(serve())
        client = HttpAgentClient(Signer(b"k" * 64), timeout=5)
        try:
            return await client.launch_many(
                AgentAddress("n1", "127.0.0.1", port), [a_spec(tmp_path, 1, "true")]
            )
        finally:
            await client.close()
            if handler == "hangs_up":
                await task

    try:
        return asyncio.run(run())
    finally:
        server.close()


def test_an_agent_not_reached_is_told_apart_from_one_that_never_answered(tmp_path: Path) -> None:
    [refused] = _launch_against("closed", tmp_path)
    assert refused is not None and not refused.unanswered and not refused.refused
    assert "unreachable" in str(refused)  # nothing was sent: nothing can have run
    [silent] = _launch_against("hangs_up", tmp_path)
    assert silent is not None and silent.unanswered  # the order went out: it may run
