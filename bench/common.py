"""What every benchmark shares: figures, statistics, a throwaway cluster, bulk submission.

A :class:`Figure` is one measured number with everything the report prints
beside it: how it was measured, the target of issue 3 and what real Slurm
22.05 measured on this kind of machine.  ``met`` compares value and target
in the figure's direction (times: lower is better; rates: higher)::

    Figure("sbatch", "sbatch --wrap true", 41.0, "ms", target=50, ...).met  -> True

When real Slurm was measured in the same run, ``slurm`` holds its value and
``ratio`` is slurmlite / Slurm: 41 ms against Slurm's 8.2 ms is 5.0, which
for a time means slurmlite is 5x slower, for a rate 5x faster.

:class:`BenchCluster` is ``slurmlite cluster up --dir <tmpdir>`` through
``cli.localcluster`` with node names of its own (``bnode[1-2]``), so a
benchmark never meets a test cluster; leaving the ``with`` block always runs
``down()`` and removes the directory, even after an error or Ctrl-C.  The
commands it runs cache their compiled modules (``PYTHONPYCACHEPREFIX`` in
the temp dir, ``PYTHONDONTWRITEBYTECODE`` dropped) as an installed package's
would, so a figure never includes compiling the sources.

:func:`submit_many` is the burst used to fill queues and to measure the
API: ``threads`` threads, each with its own keep-alive ``ControllerClient``
over the Unix socket, share ``count`` submissions (one commit each).
"""

from __future__ import annotations

import math
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from cli.client import ControllerClient
from cli.localcluster import ClusterSpec, down, up
from slurmlite.protocol import JobSubmit
from slurmlite.sbatch_request import build_submit

NODELIST = "bnode[1-2]"
BIN = Path(sys.executable).parent


@dataclass
class Figure:
    """One benchmark result, as printed and tabulated."""

    key: str  # short name for the summary table
    label: str  # what was measured, e.g. "squeue, empty queue"
    value: float
    unit: str  # "ms", "jobs/s", ...
    how: str  # one sentence: how it was measured
    reference: str  # real Slurm 22.05 on this kind of machine
    target: float | None = None  # None: no target for this workload (quick mode)
    higher_is_better: bool = False
    detail: str = ""  # p90, counts, ...
    stat: str = ""  # "median" for repeated timings
    slurm: float | None = None  # the same figure measured on real Slurm in this run
    slurm_detail: str = ""  # its p90, counts, ...

    def describe(self) -> str:
        """Two lines: the figure beside its target and Slurm's, then how it was measured."""
        stat = f"{self.stat} " if self.stat else ""
        detail = f" ({self.detail})" if self.detail else ""
        same_run = ""
        if self.slurm is not None:
            extra = f" ({self.slurm_detail})" if self.slurm_detail else ""
            same_run = (
                f"Slurm (same run): {stat}{fmt(self.slurm)} {self.unit}{extra}; "
                f"{self.ratio_text} | "
            )
        return (
            f"{self.label}: {stat}{self.value_text}{detail} | target {self.target_text} | "
            f"{same_run}{self.reference}\n  how: {self.how}"
        )

    @property
    def ratio(self) -> float | None:
        """slurmlite / Slurm, both measured in this run (None when Slurm was not)."""
        return self.value / self.slurm if self.slurm else None

    @property
    def ratio_text(self) -> str:
        """``slurmlite/Slurm 9.6 (slurmlite 9.6x slower)``; for rates, above 1 is faster."""
        r = self.ratio
        if r is None:
            return ""
        ahead = r >= 1 if self.higher_is_better else r <= 1
        times = r if r >= 1 else 1 / r
        return f"slurmlite/Slurm {r:.3g} (slurmlite {times:.3g}x {'faster' if ahead else 'slower'})"

    @property
    def slurm_text(self) -> str:
        """The summary table's Slurm cell when Slurm was measured: ``measured 4.1 ms (9.6)``."""
        return f"measured {fmt(self.slurm or 0)} {self.unit} ({self.ratio:.3g})"

    @property
    def met(self) -> str:
        if self.target is None:
            return "n/a"
        ok = self.value >= self.target if self.higher_is_better else self.value <= self.target
        return "yes" if ok else "no"

    @property
    def target_text(self) -> str:
        if self.target is None:
            return "-"
        return f"{'>=' if self.higher_is_better else '<='} {fmt(self.target)} {self.unit}"

    @property
    def value_text(self) -> str:
        return f"{fmt(self.value)} {self.unit}"


def fmt(value: float) -> str:
    """Short and readable: 4.25, 50, 89.3, 112.4, 1,234; ``n/a`` for NaN (nothing measured)."""
    if value != value:
        return "n/a"
    if value >= 1000 or value == int(value):
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def median(values: list[float]) -> float:
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def p90(values: list[float]) -> float:
    """Nearest-rank 90th percentile: of 20 sorted values, the 18th."""
    s = sorted(values)
    return s[max(0, math.ceil(0.9 * len(s)) - 1)]


def wait_for(check: Callable[[], bool], timeout: float, what: str, every: float = 0.05) -> None:
    """Poll ``check`` until it holds; raise with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


@dataclass
class BenchCluster:
    """A running throwaway cluster: its directory, config and a scratch dir for jobs."""

    directory: Path
    conf: Path
    work: Path
    env: dict[str, str] = field(default_factory=dict)

    def command(self, name: str) -> str:
        """The console script a user would run: ``<venv>/bin/<name>``."""
        return str(BIN / name)

    def client(self) -> ControllerClient:
        return ControllerClient.from_env("bench", str(self.conf))

    def request(self, *sbatch_args: str) -> JobSubmit:
        """The request ``sbatch ARGS`` would send, built by sbatch's own code."""
        cmd = build_submit(
            list(sbatch_args), self.env, str(self.work), lambda: b"", socket.gethostname(), "bench"
        )
        assert cmd.submit is not None
        return cmd.submit


@contextmanager
def bench_cluster(
    cpus_per_node: int = 4,
    log: Callable[[str], None] = print,
    store_url: str | None = None,
    nodelist: str = NODELIST,
    extra_conf: tuple[str, ...] = (),
    gpus_per_node: int = 0,
) -> Iterator[BenchCluster]:
    """Start a cluster (2 nodes unless ``nodelist`` says) in a fresh temp dir; always stop
    it and remove the dir."""
    base = Path(tempfile.mkdtemp(prefix="slurmlite-bench-"))
    os.chmod(base, 0o755)
    spec = ClusterSpec(
        directory=base / "cluster",
        nodelist=nodelist,
        cpus_per_node=cpus_per_node,
        cluster_name="bench",
        store_url=store_url,
        extra_conf=extra_conf,
        gpus_per_node=gpus_per_node,
    )
    work = base / "work"
    work.mkdir(mode=0o777)
    try:
        started = time.perf_counter()
        up(spec, timeout=60)
        log(
            f"  (cluster up in {spec.directory}: {nodelist}, {cpus_per_node} CPUs per node, "
            f"{time.perf_counter() - started:.1f} s)"
        )
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("SLURM_", "SBATCH_", "SQUEUE_", "SACCT_"))
        }
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        env["SLURM_CONF"] = str(spec.conf)
        # as after a pip install: compiled modules cached (here, outside the source tree)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
        yield BenchCluster(spec.directory, spec.conf, work, env)
    finally:
        started = time.perf_counter()
        down(spec.directory)
        log(f"  (cluster down in {time.perf_counter() - started:.1f} s)")
        shutil.rmtree(base, ignore_errors=True)


def submit_many(
    cluster: BenchCluster, req: JobSubmit, count: int, threads: int = 16
) -> tuple[list[int], float]:
    """Submit ``count`` copies of ``req`` over ``threads`` connections; (ids, seconds).

    Thread ``i`` sends ``count // threads`` requests, plus one if ``i`` is below
    the remainder (1,000 over 16: 8 threads send 63 and 8 send 62).  The
    clock runs from just before the threads start until the last answer.
    """
    threads = max(1, min(threads, count))
    share = [count // threads + (1 if i < count % threads else 0) for i in range(threads)]
    ids: list[list[int]] = [[] for _ in range(threads)]
    errors: list[BaseException] = []
    clients = [cluster.client() for _ in range(threads)]
    go = threading.Event()

    def work(i: int) -> None:
        go.wait()
        try:
            for _ in range(share[i]):
                ids[i].append(clients[i].submit(req).job_id)
        except BaseException as e:  # reported after join, in the main thread
            errors.append(e)

    pool = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    started = time.perf_counter()
    go.set()
    for t in pool:
        t.join()
    elapsed = time.perf_counter() - started
    for c in clients:
        c.close()
    if errors:
        raise RuntimeError(f"{len(errors)} submission thread(s) failed: {errors[0]!r}")
    return sorted(i for part in ids for i in part), elapsed
