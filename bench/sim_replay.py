"""``python -m bench.sim_replay [--traces DIR] [--quick] [--no-slurm] [--memory]``.

Replay speed of ``slurmlite simulate`` on every shipped trace, side by side
with the minimal counter-based replay of ``bench/sim_baseline.py`` in the
same run, and peak memory as the trace grows.

For each trace (NASA with exact estimates, the Lublin traces exact, LANL with
user estimates) and policy:

* ``slurmlite s`` — the production replay (``slurmlite.scheduler.replay``:
  the real ``schedule_pass`` on a simulated clock), reading the file as it
  goes, from opening it to the last job;
* ``baseline s`` — ``sim_baseline``: parse (the whole file) + replay, and
  the ratio slurmlite / baseline (the issue's target: 3x or less for fcfs and
  easy); the same mean wait from both is checked (they follow the same rules);
* ``jobs/s`` — trace jobs replayed per second by slurmlite;
* ``slurm`` — multifactor + fair-share + backfill every 30 s (no baseline).

``--memory`` replays the first 15,000 / 30,000 / 60,000 / all 122,060 jobs of
LANL (easy) in a fresh process each and prints its peak RSS: flat means the
replay keeps what is waiting and running, not the trace.

``--quick`` uses only the Lublin traces' first 2,000 jobs (the smoke test).
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import sim_baseline
from slurmlite.scheduler.replay import Replay
from slurmlite.scheduler.replay_metrics import Metrics
from slurmlite.scheduler.replay_setup import setup_for
from slurmlite.scheduler.swf import TraceStream, read_trace

TRACES = [
    ("NASA-iPSC-1993-3.1-cln.swf.gz", "exact"),
    ("lublin_256.swf.gz", "exact"),
    ("lublin_256_new2.swf.gz", "exact"),
    ("LANL-CM5-1994-4.1-cln.swf.gz", "user"),
]
DEFAULT_DIR = Path(__file__).resolve().parents[1] / "traces"


def production(path: Path, mode: str, policy: str) -> tuple[float, dict]:
    began = time.perf_counter()
    stream = TraceStream(path, mode)
    metrics = Metrics(stream.procs)
    Replay(stream.procs, setup_for(policy, stream.procs), metrics).run(stream.jobs())
    return time.perf_counter() - began, metrics.summary()


def baseline(path: Path, mode: str, policy: str) -> tuple[float, float, float]:
    began = time.perf_counter()
    trace = read_trace(path, mode)
    parsed = time.perf_counter()
    starts = sim_baseline.replay(trace, policy)
    done = time.perf_counter()
    wait = sim_baseline.metrics(trace, starts)["mean_wait"]
    return parsed - began, done - parsed, wait


def prefix(path: Path, jobs: int, into: Path) -> Path:
    """The first ``jobs`` jobs of ``path`` (its header kept) as a plain SWF file."""
    out = into / f"{path.name.split('.')[0]}-{jobs}.swf"
    n = 0
    with gzip.open(path, "rt") as src, out.open("w") as dst:
        for line in src:
            if not line.startswith(";"):
                n += 1
                if n > jobs:
                    break
            dst.write(line)
    return out


def peak_rss(path: Path, mode: str, policy: str) -> tuple[float, float]:
    """(seconds, peak RSS MiB) of one replay in a fresh interpreter."""
    code = (
        "import resource, sys, time; from bench.sim_replay import production; "
        f"t = production(__import__('pathlib').Path({str(path)!r}), {mode!r}, {policy!r})[0]; "
        "print(t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                         text=True, check=True).stdout.split()  # fmt: skip
    return float(out[0]), float(out[1])


def speed_table(folder: Path, quick: bool, slurm: bool) -> None:
    print(f"{'trace':<32}{'policy':<7}{'jobs':>8}{'slurmlite s':>13}{'jobs/s':>9}"
          f"{'baseline s':>12}{'(parse+run)':>14}{'ratio':>7}  same result")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for name, mode in TRACES:
            path = folder / name
            if quick:
                if not name.startswith("lublin"):
                    continue
                path = prefix(path, 2000, Path(tmp))
            for policy in ("fcfs", "easy", "slurm") if slurm else ("fcfs", "easy"):
                seconds, got = production(path, mode, policy)
                rate = got["jobs"] / seconds
                row = f"{name[:31]:<32}{policy:<7}{got['jobs']:>8}{seconds:>13.2f}{rate:>9,.0f}"
                if policy == "slurm":
                    print(row)
                    continue
                parse, run, wait = baseline(path, mode, policy)
                same = "yes" if f"{wait:.4f}" == f"{got['mean_wait']:.4f}" else "NO"
                print(f"{row}{parse + run:>12.2f}{f'({parse:.2f}+{run:.2f})':>14}"
                      f"{seconds / (parse + run):>6.1f}x  {same}")  # fmt: skip
                sys.stdout.flush()


def memory_table(folder: Path) -> None:
    path = folder / "LANL-CM5-1994-4.1-cln.swf.gz"
    print("\npeak memory as the trace grows (LANL, easy, a fresh process each)")
    print(f"{'jobs':>8}{'seconds':>10}{'peak RSS MiB':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for jobs in (15_000, 30_000, 60_000, None):
            target = path if jobs is None else prefix(path, jobs, Path(tmp))
            seconds, rss = peak_rss(target, "user", "easy")
            print(f"{jobs or 122_060:>8,}{seconds:>10.2f}{rss:>14.1f}")
            sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.sim_replay", description=__doc__)
    parser.add_argument("--traces", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-slurm", action="store_true")
    parser.add_argument("--memory", action="store_true")
    args = parser.parse_args(argv)
    if not args.traces.is_dir():
        sys.exit(f"bench.sim_replay: no traces in {args.traces} (give --traces DIR)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; "
          f"own RSS now {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")  # fmt: skip
    speed_table(args.traces, args.quick, not args.no_slurm)
    if args.memory and not args.quick:
        memory_table(args.traces)


if __name__ == "__main__":
    main()
