"""The scheduling-pass benchmark builds its scenario, runs and prints its figures.

Never its speed (machines are noisy): a tiny scenario is checked for what the
benchmark claims about it (sizes, capacity never exceeded, the same scenario
from the same seed), and ``python -m bench.run --quick --only schedpass``
prints each figure with its target and reference and a summary row.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench.schedpass import CPUS, GPUS, MEM, a_policy, build_scenario, full_pass

ROOT = Path(__file__).resolve().parents[2]


def test_tiny_scenario_is_the_described_cluster_and_deterministic():
    sc = build_scenario(pending=40, nodes=10, running=20)
    snap = sc.snapshot
    assert [n.name for n in snap.nodes][:2] == ["g0001", "g0002"]
    # 10 nodes: "short" holds the first quarter, 10 // 4 = 2
    assert [(p.name, len(p.nodes)) for p in snap.partitions] == [("main", 10), ("short", 2)]
    assert len(snap.pending) == 40 and 0 < len(snap.running) <= 20
    # the node views hold exactly what the running jobs hold, within capacity
    for node in snap.nodes:
        allocs = [a for j in snap.running for a in j.allocs if a.node == node.name]
        assert node.alloc_cpus == sum(a.cpus for a in allocs) <= CPUS
        assert node.alloc_mem == sum(a.mem for a in allocs) <= MEM
        held = [g for a in allocs for g in a.gpus]
        assert len(held) == len(set(held)) and node.alloc_gpus == frozenset(held)
        assert all(0 <= g < GPUS for g in held)
    again = build_scenario(pending=40, nodes=10, running=20)
    assert again.snapshot == snap


def test_full_pass_gives_priorities_and_a_plan():
    sc = build_scenario(pending=40, nodes=10, running=20)
    plan, prio_ms, pass_ms = full_pass(sc, a_policy(500))
    assert prio_ms > 0 and pass_ms > 0
    # every pending job is either started or has a reason
    ids = {j.job_id for j in sc.snapshot.pending}
    assert set(plan.started_ids) | set(plan.reasons) == ids


def test_quick_schedpass_prints_every_figure():
    r = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--no-slurm", "--only", "schedpass"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    # quick: a twentieth of the scenario, so no target
    labels = [
        "full pass, 500 pending on 50 nodes, bf_max_job_test=25",
        "full pass, 500 pending on 50 nodes, every job",
        "full pass, 50 pending on 50 nodes, bf_max_job_test=25",
    ]
    for label in labels:
        line = re.compile(
            rf"^{re.escape(label)}: median [\d.,]+ ms \(best [\d.,]+ ms; priorities [\d.,]+ ms "
            r"\+ pass [\d.,]+ ms; [\d,]+ started, [\d,]+ estimates\) \| target - \| reference: ",
            re.M,
        )
        assert line.search(out), f"no figure line for {label!r} in:\n{out}"
    assert "real Slurm 22.05's backfill cycle took 325 ms" in out
    rows = out[out.index("== summary") :].splitlines()[3:]
    assert [row.split("  ")[0] for row in rows] == labels
    assert "325 ms (backfill cycle)" in rows[0]
