"""workload_start: from ``slurmlite run`` to the command running on every node.

``python -m bench.workload_start [--mb 50] [--rounds 3]`` starts a 2-node
local cluster (one fake GPU each) and runs a 2-node workload whose code
folder holds a ``--mb`` MB file of random bytes (nothing to compress).  Its
command writes the time on each node; the figure is the time from just
before ``slurmlite run`` starts to the later of the two (the median of
``--rounds``):

* with a snapshot the controller has not seen (a byte of the file changed
  each round): pack, hash, upload in parts, submit, schedule, and on each
  node fetch, check and unpack the 50 MB;
* with the unchanged snapshot: the upload is skipped (the nodes still fetch);
* the baseline, in the same run: the same 2-node command as a plain
  ``sbatch --wrap 'srun ...'`` with no code to move.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import BIN, BenchCluster, Figure, bench_cluster, wait_for

YAML = """\
experiment_name: start-bench
compute: {{accelerator_type: GPU_1x, num_accelerators: 2}}
code_source: {{type: snapshot, snapshot: {{root_path: ./code}}}}
command: date +%s.%N > {marks}/$RUN_ID.$NODE_RANK
max_retries: 0
"""


def _started(marks: Path, prefix: str) -> float:
    """The later node's start time, once both nodes wrote it."""
    files = [marks / f"{prefix}.{rank}" for rank in (0, 1)]
    wait_for(lambda: all(f.is_file() and f.read_text().strip() for f in files), 120, "both nodes")
    return max(float(f.read_text()) for f in files)


def _run(cl: BenchCluster, proj: Path, marks: Path) -> float:
    t0 = time.time()
    r = subprocess.run(
        [str(BIN / "slurmlite"), "run", "-f", "train.yaml"],
        cwd=proj, env=cl.env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return _started(marks, r.stdout.strip()) - t0


def _sbatch(cl: BenchCluster, marks: Path, n: int) -> float:
    t0 = time.time()
    inner = f"date +%s.%N > {marks}/sb{n}.$SLURM_NODEID"
    subprocess.run(
        [str(BIN / "sbatch"), "-N2", "--ntasks-per-node=1", "--output=/dev/null",
         "--wrap", f"srun bash -c '{inner}'"],
        cwd=cl.work, env=cl.env, capture_output=True, check=True,
    )  # fmt: skip
    return _started(marks, f"sb{n}") - t0


def workload_start(mb: int, rounds: int, log: Callable[[str], None]) -> list[Figure]:
    with bench_cluster(cpus_per_node=2, gpus_per_node=1, log=log) as cl:
        proj = cl.work / "proj"
        (proj / "code").mkdir(parents=True)
        marks = cl.work / "marks"
        marks.mkdir(mode=0o777)
        (proj / "train.yaml").write_text(YAML.format(marks=marks))
        blob = bytearray(os.urandom(mb << 20))
        fresh, same, plain = [], [], []
        for n in range(rounds):
            blob[0] = n  # a snapshot the controller has not seen
            (proj / "code" / "blob.bin").write_bytes(blob)
            fresh.append(_run(cl, proj, marks))
            same.append(_run(cl, proj, marks))
            plain.append(_sbatch(cl, marks, n))
    base = f"baseline: sbatch --wrap 'srun ...' on 2 nodes, no code to move: {statistics.median(plain) * 1000:.0f} ms"
    return [
        Figure(
            key="run-new-snapshot",
            label=f"slurmlite run, 2 nodes, new {mb} MB snapshot: command to every node running",
            value=statistics.median(fresh) * 1000,
            unit="ms",
            how=f"pack, upload in parts, submit, fetch and unpack on both nodes; {rounds} rounds",
            reference=base,
            target=1000,
            stat="median",
        ),
        Figure(
            key="run-same-snapshot",
            label=f"slurmlite run, 2 nodes, unchanged {mb} MB snapshot (upload skipped)",
            value=statistics.median(same) * 1000,
            unit="ms",
            how=f"the same, the controller already holding the snapshot; {rounds} rounds",
            reference=base,
            target=1000,
            stat="median",
        ),
    ]


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.workload_start")
    p.add_argument("--mb", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    for f in workload_start(args.mb, args.rounds, print):
        print(f.describe())


if __name__ == "__main__":
    main()
