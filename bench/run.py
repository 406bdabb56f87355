"""``python -m bench.run [--quick] [--only NAME[,NAME]] [--no-slurm | --slurm]``: benchmarks, a table.

Benchmarks, cheapest first (``--only`` takes these names)::

    startup     sbatch / squeue (empty) / sacct -j: whole-process times
    latency     sbatch -> the job's first line, idle cluster
    steps       srun -N2 -n4 true inside an allocation; interactive srun -N1 true
    api         submissions per second, 16 keep-alive connections
    throughput  1,000 true jobs end to end on 2 x 64 CPUs
    queue       squeue with 1,000 and 10,000 pending jobs (fills the queue: the slow one)
    schedpass   one full scheduling pass (priorities, main pass, backfill) over 1,000 nodes,
                2,000 running and 1,000 / 10,000 / 100,000 pending jobs, no daemons
    wakeup      submission -> scheduling pass start, the real loop of an in-process controller
    growth      controller start, squeue, sacct -j, today's sacct on a store with 20,000
                finished jobs (``python -m bench.store_growth`` for 1,000,000 and PostgreSQL)
    array_drain a 10,000-task array of true (300 with --quick), also with slurmctld SIGKILLed
                halfway: submit ms, tasks/s, controller RSS, every index ran once
    dep_chain   an afterok chain of 1,000 true jobs (20 with --quick): ms per link
    workload    slurmlite run of a 2-node workload with a 50 MB snapshot (5 MB with --quick),
                new and unchanged: command to every node running

Each prints its figures, with how they were measured and what real Slurm
22.05 measured on this kind of machine (the issue's reference); the summary
table at the end has one row per figure: figure, slurmlite, Slurm 22.05,
target, met?.  When real Slurm is installed (``bench.realslurm``: Debian's
``slurmctld``, ``slurmd``, ``slurm-client`` and ``munge``), each benchmark
also measures the same thing on a throwaway single-host Slurm started for it,
and the Slurm cell becomes ``measured X (ratio)``, the ratio being
slurmlite / Slurm; where that cannot run, the reference stays.
``--no-slurm`` skips real Slurm.  ``--quick`` uses small counts and few
repetitions (for the smoke test) and skips real Slurm unless ``--slurm`` is
given; its figures show that the benchmarks work, not how fast slurmlite is.  The exit status is 0 when every benchmark ran, whether or not
the targets were met, and 1 when one failed (its error is printed and the
others still run).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable

from bench import realslurm
from bench.array_drain import array_drain
from bench.commands import queue, startup
from bench.common import Figure
from bench.dep_chain import dep_chain
from bench.latency import latency
from bench.schedpass import schedpass
from bench.steps import steps
from bench.store_growth import growth
from bench.throughput import api, end_to_end
from bench.wakeup import wakeup
from bench.workload_start import workload_start

Benchmark = Callable[[bool, Callable[[str], None]], list[Figure]]

BENCHMARKS: dict[str, Benchmark] = {
    "startup": startup,
    "latency": latency,
    "steps": steps,
    "api": api,
    "throughput": end_to_end,
    "queue": queue,
    "schedpass": schedpass,
    "wakeup": wakeup,
    "growth": growth,
    "dep_chain": dep_chain,
    "array_drain": array_drain,
    "workload": lambda quick, log: workload_start(5 if quick else 50, 1 if quick else 3, log),
}

# figure key -> the Slurm 22.05 column of the summary table
REFERENCE = {
    "squeue-empty": "4 ms",
    "sbatch": "4 ms",
    "sacct": "92 ms",
    "latency": "1,800 ms",
    "step-launch": "none quoted",
    "srun-interactive": "none quoted",
    "api": "~290/s (sequential sbatch)",
    "throughput": "1.7 / 4.7 / ~23 jobs/s",
    "squeue-1000": "10 ms",
    "squeue-10000": "-",
    "schedpass-500": "325 ms (backfill cycle)",
    "schedpass-all": "-",
    "schedpass-1k": "-",
    "schedpass-100k": "-",
    "wakeup-100": "3 s (batch_sched_delay)",
    "wakeup-1000": "3 s (batch_sched_delay)",
    "growth-start": "-",
    "growth-sacct-j": "-",
    "growth-sacct-user": "-",
    "growth-squeue": "-",
    "dep-chain": "-",
    "run-new-snapshot": "- (Slurm moves no code)",
    "run-same-snapshot": "- (Slurm moves no code)",
}


def log(line: str) -> None:
    print(line, flush=True)


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description="slurmlite benchmarks")
    p.add_argument(
        "--quick", action="store_true", help="small counts, few repetitions (smoke test)"
    )
    p.add_argument(
        "--only",
        metavar="NAME[,NAME]",
        default="",
        help=f"run only these benchmarks: {', '.join(BENCHMARKS)}",
    )
    slurm = p.add_mutually_exclusive_group()
    slurm.add_argument(
        "--no-slurm", action="store_true", help="do not measure real Slurm even if installed"
    )
    slurm.add_argument("--slurm", action="store_true", help="measure real Slurm even with --quick")
    args = p.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        p.error(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    args.names = names
    return args


def real_slurm_note(wanted: bool) -> str:
    programs = realslurm.find()
    if isinstance(programs, dict) and wanted:
        return (
            f"real Slurm found ({programs['slurmctld']}): each benchmark also runs on a throwaway "
            "single-host Slurm started for it (same run) and prints the ratio slurmlite/Slurm; "
            "where it cannot, the Slurm 22.05 column is what issue 3 quotes for real Slurm 22.05"
        )
    if isinstance(programs, dict):
        return (
            f"real Slurm found ({programs['slurmctld']}) but not measured (--no-slurm, or --quick "
            "without --slurm): the Slurm 22.05 column is what issue 3 quotes for real Slurm 22.05 "
            "measured on this kind of machine, not a measurement of this run"
        )
    return (
        f"real Slurm {programs}: the Slurm 22.05 column is what issue 3 quotes for "
        "real Slurm 22.05 measured on this kind of machine, not a measurement of this run"
    )


def table(figures: list[Figure]) -> list[str]:
    measured = any(f.slurm is not None for f in figures)
    slurm = "Slurm 22.05 same run (slurmlite/Slurm) or reference" if measured else ""
    head = ("figure", "slurmlite", slurm or "Slurm 22.05 reference", "target", "met?")
    rows = [
        (
            f.label,
            f.value_text,
            f.slurm_text if f.slurm is not None else REFERENCE.get(f.key, "-"),
            f.target_text,
            f.met,
        )
        for f in figures
    ]
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.rjust(w) if i in (1, 3) else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return [line(head), rule, *(line(r) for r in rows)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    mode = "quick (small counts: not comparable with the targets)" if args.quick else "full"
    log(f"slurmlite benchmarks, {mode}: {', '.join(args.names)}")
    log(
        f"machine: {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, store SQLite"
    )
    realslurm.WANTED = not args.no_slurm and (args.slurm or not args.quick)
    log(real_slurm_note(realslurm.WANTED))
    figures: list[Figure] = []
    failed: list[str] = []
    started = time.perf_counter()
    for name in args.names:
        log(f"\n== {name} ==")
        t0 = time.perf_counter()
        try:
            figures += BENCHMARKS[name](args.quick, log)
        except Exception as e:  # report, go on with the other benchmarks
            failed.append(name)
            log(f"{name}: FAILED: {e}")
            traceback.print_exc()
        log(f"  ({name} took {time.perf_counter() - t0:.1f} s)")
    log(f"\n== summary ({time.perf_counter() - started:.0f} s in all) ==")
    for row in table(figures):
        log(row)
    if failed:
        log(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
