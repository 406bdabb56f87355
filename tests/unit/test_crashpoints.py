"""Crash points (slurmlite.crashpoints): NAME and NAME:N, and every point named once in code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from slurmlite.crashpoints import CRASH_STATUS, POINTS

ROOT = Path(__file__).resolve().parents[2]
CALL = re.compile(r'crash_point\("([^"]+)"\)')

PROGRAM = """
from slurmlite.crashpoints import crash_point
for i in range(1, 4):
    print("before", i, flush=True)
    crash_point("ctld.submit.after_commit")
print("survived", flush=True)
"""


def run(value: str | None) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT)}
    if value is not None:
        env["SLURMLITE_CRASH_AT"] = value
    return subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=30
    )


def test_a_point_named_in_the_environment_kills_the_process_there() -> None:
    first = run("ctld.submit.after_commit")
    assert (first.returncode, first.stdout) == (CRASH_STATUS, "before 1\n")
    assert "event=crash_point name=ctld.submit.after_commit" in first.stderr
    third = run("ctld.submit.after_commit:3")  # the third time it is reached
    assert (third.returncode, third.stdout) == (CRASH_STATUS, "before 1\nbefore 2\nbefore 3\n")


def test_unset_or_another_point_changes_nothing() -> None:
    for value in (None, "", "ctld.plan.after_commit"):
        r = run(value)
        assert (r.returncode, r.stdout.splitlines()[-1]) == (0, "survived")


def test_every_point_is_placed_exactly_once_and_every_placed_one_is_listed() -> None:
    placed: list[str] = []
    for package in ("controller", "agent", "slurmlite", "cli"):
        for path in (ROOT / package).rglob("*.py"):
            placed += CALL.findall(path.read_text())
    assert sorted(placed) == sorted(POINTS)
