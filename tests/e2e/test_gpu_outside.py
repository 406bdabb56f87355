"""GPUs used outside the scheduler, on a real local cluster (agent.gpu_outside).

One node with one fake GPU; the fake-GPU state file (``slurmlite.fakegpu``)
lists a ``sleep`` the test started outside any job as a compute process on
it, as NVML would list someone's ``python`` started over ssh.  The agents
look every half second; the settle time is 3 s.  What a user sees is
checked through the commands: ``sinfo -R``, ``scontrol show node``,
``squeue``, ``slurmlite explain``.
"""

from __future__ import annotations

import getpass
import json
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.e2e.conftest import Cluster, fake_gpu_state, local_cluster, wait_for


@contextmanager
def one_gpu_node(tmp_path: Path, monkeypatch, policy: str) -> Iterator[tuple[Cluster, Path]]:  # type: ignore[no-untyped-def]
    state = fake_gpu_state(tmp_path, monkeypatch, {})
    with local_cluster(
        "slurmlite-outside-",
        nodelist="g1",
        cpus_per_node=2,
        gpus_per_node=1,
        mem_per_node=2000,
        extra_conf=(f"SlurmliteGpuOutsideUse={policy}",),
    ) as c:
        yield c, state


@contextmanager
def stray_sleep() -> Iterator[subprocess.Popen]:
    proc = subprocess.Popen(["sleep", "300"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def on_gpu0(state: Path, pid: int | None) -> None:
    procs = [{"pid": pid, "mem_used_mib": 1024}] if pid else []
    state.write_text(json.dumps({"0": {"util": 50, "processes": procs}}))


def squeue(c: Cluster, job: int) -> str:
    return c.run(f"squeue -h -j {job} -o '%T %r'").stdout.strip()


def test_outside_use_blocks_the_gpu_until_it_settled(tmp_path, monkeypatch):
    with one_gpu_node(tmp_path, monkeypatch, "settle=3,interval=0.5") as (c, state):
        with stray_sleep() as stray:
            on_gpu0(state, stray.pid)
            why = f"gpu 0 in use outside slurmlite: pid {stray.pid} ({getpass.getuser()}: sleep)"
            reasons = lambda: c.run("sinfo -R -h -o '%E|%u|%N'").stdout.strip()  # noqa: E731
            wait_for(lambda: reasons() == f"{why}|root|g1", 15, "sinfo -R to show it")
            node = c.run("scontrol show node g1").stdout
            assert "   GresUsed=gpu:(null):1(IDX:0)\n" in node, node
            assert f"   Reason={why} [root@" in node, node
            assert "State=IDLE" not in node and "State=MIXED " in node, node  # no GPU left
            job = c.submit("--gpus=1 -o /dev/null --wrap 'sleep 1'")
            wait_for(lambda: squeue(c, job) == "PENDING Resources", 10, "Resources")
            explained = c.run(f"slurmlite explain {job}").stdout
            assert "in use outside slurmlite" in explained, explained
            cpu_job = c.submit("-o /dev/null --wrap 'sleep 1'")  # CPUs are still for jobs
            assert c.wait_done(cpu_job) == "COMPLETED"
            assert squeue(c, job) == "PENDING Resources"
        freed = time.monotonic()
        on_gpu0(state, None)  # alice's process ended
        wait_for(lambda: squeue(c, job).startswith("RUNNING") or not squeue(c, job), 15, "start")
        assert time.monotonic() - freed >= 2.5  # settle=3 s from the first report without it
        assert c.wait_done(job) == "COMPLETED"
        wait_for(lambda: not c.run("sinfo -R -h").stdout.strip(), 10, "the reason to go")
        assert "GresUsed" not in c.run("scontrol show node g1").stdout


def test_ignore_turns_detection_off(tmp_path, monkeypatch):
    with one_gpu_node(tmp_path, monkeypatch, "ignore") as (c, state):
        with stray_sleep() as stray:
            on_gpu0(state, stray.pid)
            job = c.submit("--gpus=1 -o /dev/null --wrap 'sleep 1'")
            assert c.wait_done(job) == "COMPLETED"
            assert c.run("sinfo -R -h").stdout.strip() == ""
