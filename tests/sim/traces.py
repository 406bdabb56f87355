"""The shipped SWF traces (``../shared/traces``, beside the checkout) and tiny ones.

Like the golden captures (``tests/golden_path.py``), the traces live beside the
clone: a bare clone skips the tests that need them, and
``SLURMLITE_REQUIRE_GOLDEN=1`` (set by ``.ci/run``) turns the skip into a failure.
``swf_text`` builds a trace from short rows for the hand-worked schedules.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden_path import CHECKOUT, golden_required

TRACES = CHECKOUT.parent / "shared" / "traces"


def trace_path(name: str) -> Path:
    """A shipped trace; skips (or fails under SLURMLITE_REQUIRE_GOLDEN=1) when absent."""
    path = TRACES / name
    if not path.exists():
        why = f"trace {name} not available (looked in {TRACES})"
        if golden_required():
            pytest.fail(why)
        pytest.skip(why)
    return path


def swf_text(procs: int, rows: list[tuple[int, int, int, int, int]], users: bool = False) -> str:
    """An SWF file: ``rows`` are (job, submit, run, procs, requested time), users 1.

    With ``users`` each row is (job, submit, run, procs, requested, user, group)."""
    lines = [f"; MaxProcs: {procs}"]
    for row in rows:
        job, submit, run, n, req = row[:5]
        user, group = (row[5], row[6]) if users else (1, 1)  # type: ignore[misc]
        lines.append(
            f"{job} {submit} -1 {run} {n} -1 -1 {n} {req} -1 1 {user} {group} -1 1 -1 -1 -1"
        )
    return "\n".join(lines) + "\n"
