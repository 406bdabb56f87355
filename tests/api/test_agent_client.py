"""The controller's agent client cuts a pass's launches for one node into requests the
agent accepts (it refuses bodies over 64 MiB)."""

from __future__ import annotations

from pathlib import Path

from controller.nodes.agent_client import LAUNCH_BATCH_BYTES, _by_size
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
