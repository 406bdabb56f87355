"""``bench/wakeup.py`` in quick mode: the real loop serves every submission, and the
figure line says how long the events waited (no timing is asserted: shared machines)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_wakeup_prints_the_event_to_pass_figure():
    r = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--no-slurm", "--only", "wakeup"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    line = re.search(
        r"^event to pass, 100 pending, loop idle: median [\d.,]+ ms "
        r"\(max [\d.,]+ ms over (\d+) events.*\| target - \| Slurm: ",
        r.stdout,
        re.M,
    )
    assert line, r.stdout
    assert int(line[1]) > 0  # the loop served events that found it idle
