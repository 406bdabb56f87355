"""A throwaway single-host real Slurm on loopback, measured beside slurmlite in the same run.

When the distribution's Slurm is installed (Debian 12: ``apt-get install
slurmctld slurmd slurm-client``, with ``munge``), :func:`session` starts in a
fresh temp dir a private ``munged -F`` (a 1 KiB key made with ``dd``, its own
socket), then ``slurmctld -D`` and one ``slurmd -D -N localhost`` on a
``slurm.conf`` filled in from ``bench/slurm.conf.in`` (free loopback ports,
state, spool, pids and logs in the temp dir, no cgroups, no accounting,
``sched/backfill`` with default parameters, one CPU per job).  Its
``AuthInfo=socket=...`` points the daemons and every command at the private
munged; every command runs with ``SLURM_CONF`` set to that file.  Debian
builds Slurm without ``--enable-multiple-slurmd`` (a second slurmd on the
host kills the first), so the 2 x 64-CPU cluster of the throughput
benchmark becomes one node with 128 CPUs.

It waits, with a deadline, until ``sinfo`` shows the node idle.  Leaving the
``with`` block, even by an error or Ctrl-C, cancels the jobs, stops each
daemon it started by PID (TERM, then KILL), kills any process whose
environment names this very ``slurm.conf`` (a stray ``slurmstepd`` or job),
and removes the dir.  When Slurm is absent, not wanted (``--no-slurm``;
``--quick`` without ``--slurm``) or fails to start, :func:`session` says why
and yields ``None``, and the benchmark prints the issue's reference instead.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from string import Template

from bench.common import wait_for

WANTED = True  # bench.run sets this: False with --no-slurm, and with --quick unless --slurm
DAEMONS = ("slurmctld", "slurmd", "munged")
COMMANDS = ("sbatch", "squeue", "sinfo", "scancel")
SEARCH = ("/usr/sbin", "/usr/local/sbin", "/sbin")


def find() -> dict[str, str] | str:
    """Absolute paths of the real Slurm programs, or why they cannot be used.

    slurmlite's console scripts in the venv share the names (``sbatch``,
    ``slurmctld`` ...), so only compiled programs (ELF files) count.
    """
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d] + list(SEARCH)
    found: dict[str, str] = {}
    for name in (*DAEMONS, *COMMANDS):
        for f in (Path(d) / name for d in dirs):
            if os.access(f, os.X_OK) and _head(f) == b"\x7fELF":
                found[name] = str(f)
                break
    missing = [name for name in (*DAEMONS, *COMMANDS) if name not in found]
    return f"not installed here ({', '.join(missing)} not found)" if missing else found


def _head(path: Path) -> bytes:
    with suppress(OSError), path.open("rb") as f:
        return f.read(4)
    return b""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


CONF = Path(__file__).with_name("slurm.conf.in")  # string.Template: $d, $cpus, ...


@dataclass
class RealSlurm:
    """A running throwaway Slurm: its programs, directory, ``slurm.conf`` and job dir."""

    programs: dict[str, str]
    directory: Path
    version: str = ""
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.directory / "slurm.conf"

    @property
    def work(self) -> Path:
        return self.directory / "work"

    @property
    def env(self) -> dict[str, str]:
        home = os.environ.get("HOME", "/root")
        return {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C", "SLURM_CONF": str(self.conf)}

    def command(self, name: str) -> str:
        return self.programs[name]

    def run(self, *argv: str, timeout: float = 60) -> str:
        """Run a Slurm command; its stdout, or RuntimeError with its stderr."""
        r = subprocess.run(
            [self.command(argv[0]), *argv[1:]],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {r.returncode}: {r.stderr.strip()}")
        return r.stdout

    def active(self) -> int:
        """How many jobs are pending, running or completing (squeue's default states)."""
        return len(self.run("squeue", "-h", "-o", "%i").split())

    def states(self) -> dict[int, str]:
        """Job id -> state of every job slurmctld still remembers (MinJobAge is 1 h here)."""
        out = self.run("squeue", "-h", "-t", "all", "-o", "%i %T")
        return {int(i): state for i, state in (line.split() for line in out.splitlines())}

    def _daemon(self, name: str, *args: str) -> None:
        with open(self.directory / "log" / f"{name}.out", "wb") as out:
            self.procs.append(
                subprocess.Popen(
                    [self.command(name), *args],
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # Ctrl-C reaches the bench, which stops them itself
                )
            )

    def start(self, cpus: int, max_jobs: int, scheduler_parameters: str, timeout: float) -> None:
        d = self.directory
        for sub, mode in (("munge", 0o700), ("run", 0o755), ("state", 0o700), ("log", 0o755)):
            (d / sub).mkdir(mode=mode)
        for sub in ("spool", "work"):
            (d / sub).mkdir(mode=0o777)  # jobs write their output in work/
        key = d / "munge" / "munge.key"
        subprocess.run(
            ["dd", "if=/dev/urandom", f"of={key}", "bs=1024", "count=1", "status=none"],
            check=True,
            timeout=10,
        )
        key.chmod(0o400)
        v = subprocess.run([self.command("slurmctld"), "-V"], capture_output=True, timeout=10)
        self.version = v.stdout.decode().strip() or "Slurm (unknown version)"
        self._daemon(
            "munged",
            "-F",
            f"--key-file={key}",
            f"--socket={d}/run/munge.socket",
            *(f"--{what}-file={d}/munge/munged.{what}" for what in ("pid", "log", "seed")),
        )
        self._wait(lambda: (d / "run" / "munge.socket").exists(), 10, "munged's socket")
        conf = Template(CONF.read_text()).substitute(
            d=d, ctld_port=free_port(), slurmd_port=free_port(), cpus=cpus, max_jobs=max_jobs
        )
        if scheduler_parameters:
            conf += f"SchedulerParameters={scheduler_parameters}\n"
        self.conf.write_text(conf)
        self._daemon("slurmctld", "-D", "-i", "-f", str(self.conf))
        self._daemon("slurmd", "-D", "-N", "localhost", "-f", str(self.conf))
        self._wait(self._idle, timeout, "the node to be idle in sinfo")

    def _idle(self) -> bool:
        try:
            return self.run("sinfo", "-h", "-N", "-o", "%t", timeout=10).split() == ["idle"]
        except (RuntimeError, subprocess.TimeoutExpired):
            return False

    def _wait(self, check: Callable[[], bool], timeout: float, what: str) -> None:
        def ready() -> bool:
            dead = [p for p in self.procs if p.poll() is not None]
            if dead:
                name = Path(str(dead[0].args[0])).name
                raise RuntimeError(f"{name} exited ({dead[0].returncode}): {self.log_tail(name)}")
            return check()

        try:
            wait_for(ready, timeout, what, every=0.1)
        except TimeoutError as e:
            raise RuntimeError(f"{e}; slurmctld: {self.log_tail('slurmctld')}") from None

    def log_tail(self, name: str) -> str:
        """The last lines a daemon wrote, for error messages."""
        text = ""
        for f in (self.directory / "log" / f"{name}.out", self.directory / "log" / f"{name}.log"):
            with suppress(OSError):
                text += f.read_text(errors="replace")
        return " | ".join(text.strip().splitlines()[-3:]) or "(no log)"

    def stop(self) -> None:
        """Stop the daemons by PID, kill the stepds and jobs they left, remove the dir.

        No ``scancel`` first: with 10,000 jobs queued it takes most of a minute,
        while the jobs' processes are found and killed by the conf they name.
        """
        for p in reversed(self.procs):  # slurmd, slurmctld, munged
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
        for pid in self.leftovers():
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.directory, ignore_errors=True)

    def leftovers(self) -> list[int]:
        """Processes whose environment holds ``SLURM_CONF=<this conf>``: stepds and jobs."""
        mark = f"SLURM_CONF={self.conf}".encode()
        pids = []
        for entry in Path("/proc").iterdir():
            with suppress(OSError, ValueError):  # gone meanwhile; /proc/self, /proc/sys ...
                if mark in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
        return pids


def burst(
    slurm: RealSlurm, argv: list[str], count: int, threads: int = 16
) -> tuple[list[int], float]:
    """``count`` runs of ``sbatch ARGV`` from ``threads`` threads at once; (job ids, seconds).

    Real Slurm has no submission API here: a burst is ``sbatch`` processes.
    """

    def one(_: int) -> int:
        return int(slurm.run("sbatch", "--parsable", *argv).strip().split(";")[0])

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        ids = list(pool.map(one, range(count)))
    return ids, time.perf_counter() - started


@contextmanager
def session(
    log: Callable[[str], None],
    cpus: int = 4,
    max_jobs: int = 10000,
    scheduler_parameters: str = "",
    timeout: float = 60,
) -> Iterator[RealSlurm | None]:
    """A running real Slurm for the ``with`` block, or ``None`` (and why, logged).

    An ``Exception`` raised in the block is logged and swallowed: a failed
    measurement of real Slurm leaves the issue's reference in its place and
    never fails the benchmark; Ctrl-C still stops everything and propagates.
    """
    programs = find() if WANTED else "not wanted (--no-slurm, or --quick without --slurm)"
    if isinstance(programs, str):
        if WANTED:
            log(f"  (real Slurm: {programs}; printing the issue's reference instead)")
        yield None
        return
    slurm = RealSlurm(programs, Path(tempfile.mkdtemp(prefix="slurm-bench-")))
    slurm.directory.chmod(0o755)  # munged wants its socket's directories searchable by all
    started = time.perf_counter()
    error: Exception | None = None
    try:
        slurm.start(cpus, max_jobs, scheduler_parameters, timeout)
    except Exception as e:
        error = e
    except BaseException:
        slurm.stop()
        raise
    if error is not None:
        slurm.stop()
        log(f"  (real Slurm did not start: {error}; printing the issue's reference instead)")
        yield None
        return
    log(
        f"  (real {slurm.version} up in {slurm.directory}: one node, {cpus} CPUs, "
        f"{time.perf_counter() - started:.1f} s)"
    )
    try:
        yield slurm
    except Exception as e:
        log(f"  (real Slurm measurement failed: {e}; printing the issue's reference instead)")
    finally:
        started = time.perf_counter()
        slurm.stop()
        log(f"  (real Slurm down in {time.perf_counter() - started:.1f} s)")
