"""What usage sampling costs: the agent's CPU per round, the controller's per heartbeat.

Agent: one sampling round (``agent.sampling.UsageSampler.sample``) over 32
running jobs on a node with 8 GPUs.  The jobs' cgroups are 32 fake cgroup
v2 directories (``cpu.stat``, ``memory.current``, ``memory.peak``), the GPUs
the test stand-in for pynvml (``tests/agent/fake_nvml``, ``FAKE_NVML_GPUS=8``)
driven by a fake GPU state file, each job holding one GPU (``i % 8``).  A
round reads every cgroup, asks NVML once per GPU (utilization, memory, power)
and saves each run's summary in its spool directory; then the heartbeat's
encoding of the 32 summaries is timed apart.  CPU time is the process's
(``time.process_time``), as a share of one core at the default
``JobAcctGatherFrequency=30`` (target: under 1 %).  The fake pynvml re-reads
its state file at every call, which a real driver does not: the GPU part is
an upper bound.

Steps: the same round over 32 jobs that have only a step here (an
``salloc``, a multi-node job's other node): each step's task is a real
``sleep`` leading its own session, as ``agent.tasks`` starts them, without
a cgroup, so the round walks ``/proc`` once (shared by all 32), reads
each task's session and saves each job's summary in the spool
(``agent.usage_spool``).  That cost grows with the processes on the machine
(printed with the figure).

Controller: 100 nodes x 32 running jobs in a real SQLite store; each node's
heartbeat carries 32 summaries (one GPU each) and is recorded as the route
does (``controller.accounting.usage.store_usage``: one read of the jobs, one
upsert; the accepted summaries then feed the job pages' per-GPU utilization
rings, ``controller.accounting.usage_history``).  Three rounds, each with
more samples, so every row is replaced.
Also timed: the same through the HTTP route (pydantic validation included).

Run: ``.venv/bin/python -m bench.agent_sampling`` (prints figures; no asserts).
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
JOBS, GPUS, NODES, FREQ = 32, 8, 100, 30.0


def _fake_pynvml():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "pynvml", ROOT / "tests/agent/fake_nvml/pynvml.py"
    )
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def agent_round(tmp: Path, rounds: int = 300) -> tuple[float, float]:
    """(CPU ms per sampling round, CPU ms per heartbeat's usage encoding)."""
    from agent.gres.sampling import NvmlGpus
    from agent.sampling import UsageSampler
    from slurmlite.protocol import NodeHeartbeat, to_dict

    os.environ["FAKE_NVML_GPUS"] = str(GPUS)
    tmp.mkdir(parents=True, exist_ok=True)
    state = tmp / "gpus.json"
    state.write_text(json.dumps({str(i): {"util": 10 * i, "mem_used_mib": 1000 + i,
                                          "power_mw": 200000} for i in range(GPUS)}))  # fmt: skip
    os.environ["SLURMLITE_FAKE_GPU_STATE"] = str(state)
    sampler = UsageSampler(NvmlGpus(lib=_fake_pynvml()), FREQ)
    for i in range(JOBS):
        cg = tmp / "cg" / f"job_{i}_0"
        cg.mkdir(parents=True)
        (cg / "cpu.stat").write_text(f"usage_usec {1000000 * i}\nuser_usec 0\nsystem_usec 0\n")
        (cg / "memory.current").write_text(f"{(i + 1) << 20}\n")
        (cg / "memory.peak").write_text(f"{(i + 2) << 20}\n")
        job_dir = tmp / f"job{i}"
        job_dir.mkdir()
        proc = SimpleNamespace(pid=0, cgroup=SimpleNamespace(path=cg, version=2), job_dir=job_dir)
        sampler.track(i, 0, proc, [i % GPUS])  # type: ignore[arg-type]
    sampler.sample()  # warm: imports, first files
    t0 = time.process_time()
    for _ in range(rounds):
        sampler.sample()
    per_round = (time.process_time() - t0) / rounds * 1000
    t0 = time.process_time()
    for _ in range(rounds):
        json.dumps(
            to_dict(NodeHeartbeat(running_jobs=list(range(JOBS)), usage=sampler.summaries()))
        )
    per_beat = (time.process_time() - t0) / rounds * 1000
    return per_round, per_beat


def step_round(tmp: Path, rounds: int = 100) -> tuple[float, int]:
    """(CPU ms per round over JOBS step-only jobs, processes on the machine)."""
    import subprocess

    from agent.sampling import UsageSampler

    class Gpus:
        def sample(self, indices: list[int]) -> dict:  # type: ignore[type-arg]
            return {}

    sampler = UsageSampler(Gpus(), FREQ, spool=tmp / "usage")  # type: ignore[arg-type]
    tasks = [subprocess.Popen(["sleep", "300"], start_new_session=True) for _ in range(JOBS)]
    try:
        for i, t in enumerate(tasks):
            task = SimpleNamespace(pid=t.pid, status=None, cpu_seconds=None)
            launch = SimpleNamespace(job_id=i, restarts=0, gpus=[i % GPUS])
            sampler.track_step(SimpleNamespace(cgroup=None, tasks=[task], launch=launch))  # type: ignore[arg-type]
        sampler.sample()
        t0 = time.process_time()
        for _ in range(rounds):
            sampler.sample()
        per_round = (time.process_time() - t0) / rounds * 1000
    finally:
        for t in tasks:
            t.kill()
            t.wait()
    return per_round, sum(1 for n in os.listdir("/proc") if n.isdigit())


def _controller(tmp: Path):  # type: ignore[no-untyped-def]
    from controller.context import Controller
    from controller.store.db import Database
    from slurmlite.config import parse_config
    from tests.recording_agents import RecordingAgentClient
    from tests.report_jobs import a_job, put_jobs

    conf = (
        f"ClusterName=bench\nSlurmctldHost=localhost(127.0.0.1)\nStateSaveLocation={tmp}/state\n"
        f"GresTypes=gpu\nNodeName=n[001-{NODES:03d}] CPUs=64 RealMemory=512000 Gres=gpu:{GPUS}\n"
        "PartitionName=debug Nodes=ALL Default=YES\n"
    )
    cfg = parse_config(conf, path=str(tmp / "slurm.conf"))
    ctl = Controller(cfg, b"k" * 64, db=Database(f"sqlite:///{tmp}/state/s.db"),
                     agents=RecordingAgentClient())  # fmt: skip
    now = time.time()
    jobs = [a_job(n * JOBS + j + 1, "alice", start=now, end=None, state="RUNNING",
                  nodes=f"n{n + 1:03d}") for n in range(NODES) for j in range(JOBS)]  # fmt: skip
    put_jobs(ctl.db, jobs)
    return ctl


def _summaries(node: int, samples: int) -> list:  # type: ignore[type-arg]
    from slurmlite.usage import GpuUsage, UsageSummary

    out = []
    for j in range(JOBS):
        gpu = GpuUsage(index=j % GPUS, samples=samples, util_sum=50.0 * samples, util_max=90.0,
                       mem_sum_mib=1000.0 * samples, mem_max_mib=1200.0, mem_total_mib=81920.0)  # fmt: skip
        out.append(UsageSummary(node * JOBS + j + 1, 0, samples=samples, first_sample=1.0,
                                last_sample=1.0 + samples, cpu_seconds=10.0 * samples,
                                max_rss_bytes=1 << 30, rss_sum_bytes=float(samples << 29),
                                gpus=[gpu]))  # fmt: skip
    return out


def controller_ingest(tmp: Path) -> tuple[list[float], list[float]]:
    """ms per heartbeat: store_usage alone, then through the signed HTTP route."""
    from fastapi.testclient import TestClient

    from controller.accounting.usage import store_usage
    from controller.api.app import create_app
    from slurmlite.credential import node_key, sign_request
    from slurmlite.protocol import NodeRegister, to_dict

    ctl = _controller(tmp)
    direct: list[float] = []
    for samples in (1, 2, 3):
        for n in range(NODES):
            batch = _summaries(n, samples)
            t0 = time.perf_counter()
            store_usage(ctl.db, f"n{n + 1:03d}", batch, ctl.usage_history)  # as the route
            direct.append((time.perf_counter() - t0) * 1000)
    client = TestClient(create_app(ctl, run_loop=False))
    routed: list[float] = []
    for samples in (4, 5):
        for n in range(NODES):
            name = f"n{n + 1:03d}"
            if samples == 4:
                ctl.nodes.register(NodeRegister(name, "127.0.0.1", 6818, name, 64, 512000,
                                                ["gpu"] * GPUS, None))  # fmt: skip
            body = json.dumps(
                {"running_jobs": [], "usage": [to_dict(s) for s in _summaries(n, samples)]}
            ).encode()
            path = f"/v1/nodes/{name}/heartbeat"
            headers = sign_request(node_key(b"k" * 64, name), name, "POST", path, body, time.time())
            headers["content-type"] = "application/json"
            t0 = time.perf_counter()
            r = client.post(path, content=body, headers=headers)
            routed.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200, r.text
    ctl.db.close()
    return direct, routed


def main() -> None:
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="slurmlite-bench-sampling-") as d:
        per_round, per_beat = agent_round(Path(d) / "agent")
    share = (per_round + per_beat) / (FREQ * 1000) * 100
    print(f"agent, one sampling round, {JOBS} jobs, {GPUS} GPUs (fake pynvml, fake cgroups): "
          f"{per_round:.2f} ms CPU; heartbeat usage encoding {per_beat:.2f} ms CPU")  # fmt: skip
    print(f"  -> {share:.3f} % of one core at JobAcctGatherFrequency={FREQ:.0f} (target < 1 %)")
    with tempfile.TemporaryDirectory(prefix="slurmlite-bench-steps-") as d:
        per_step_round, processes = step_round(Path(d))
    print(f"agent, one sampling round, {JOBS} step-only jobs (real tasks, no cgroup, "
          f"{processes} processes on the machine): {per_step_round:.2f} ms CPU "
          f"-> {per_step_round / (FREQ * 1000) * 100:.3f} % of one core")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="slurmlite-bench-ingest-") as d:
        tmp = Path(d)
        (tmp / "state").mkdir()
        direct, routed = controller_ingest(tmp)
    for label, values in (("store_usage", direct), ("HTTP route", routed)):
        print(f"controller, heartbeat with {JOBS} summaries ({NODES} nodes, SQLite), {label}: "
              f"median {statistics.median(values):.2f} ms, p90 "
              f"{sorted(values)[int(len(values) * 0.9)]:.2f} ms, {len(values)} heartbeats")  # fmt: skip
    print(
        f"  -> {NODES} nodes every 30 s: {statistics.median(routed) * NODES / 30 / 10:.2f} % "
        "of one controller core (route)"
    )


if __name__ == "__main__":
    main()
