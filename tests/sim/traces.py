"""The SWF traces shipped in the repository (``traces/``) and tiny ones.

``trace_path`` names a shipped trace (a missing one is a failure, not a skip:
every clone has them). ``swf_text`` builds a trace from short rows for the hand-worked schedules.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden_path import CHECKOUT

TRACES = CHECKOUT / "traces"


def trace_path(name: str) -> Path:
    """A shipped trace; fails the test when it is missing."""
    path = TRACES / name
    if not path.exists():
        pytest.fail(f"trace {name} missing from {TRACES}")
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
