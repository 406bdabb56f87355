"""What the agent reports about its machine: the values Slurm's slurmd reports."""

from __future__ import annotations

import asyncio
import platform
from pathlib import Path

import pytest

from agent import daemon, machine
from agent.daemon import AgentState
from slurmlite.config import parse_config
from slurmlite.protocol import NodeHeartbeat, NodeRegister, from_dict, to_dict

MEMINFO = """\
MemTotal:       32768000 kB
MemFree:        24058000 kB
MemAvailable:   30000000 kB
Buffers:          102400 kB
"""


def test_load_is_the_five_minute_average_as_slurmd_reports_it():
    # fields: 1-, 5- and 15-minute averages, runnable/total tasks, last pid
    assert machine.parse_loadavg("0.42 1.68 1.20 2/311 4242\n") == 1.68
    assert machine.parse_loadavg("") is None
    assert machine.parse_loadavg("0.42 busy 1.20\n") is None


def test_free_memory_is_memfree_not_memavailable_in_whole_mib():
    # 24058000 kB // 1024 = 23494 MiB (23494 x 1024 = 24057856; 144 kB dropped)
    assert machine.meminfo_mib(MEMINFO, "MemFree") == 23494
    # MemAvailable (29296 MiB) counts page cache the kernel could reclaim: not Slurm's figure
    assert machine.meminfo_mib(MEMINFO, "MemAvailable") == 29296
    assert machine.meminfo_mib(MEMINFO, "MemTotal") == 32000  # 32768000 // 1024
    assert machine.meminfo_mib(MEMINFO, "SwapFree") is None


def test_readers_say_not_known_rather_than_fail(tmp_path: Path):
    (tmp_path / "loadavg").write_text("0.10 0.25 0.30 1/90 77\n")
    (tmp_path / "meminfo").write_text(MEMINFO)
    (tmp_path / "stat").write_text("cpu  1 2 3\nbtime 1764467531\n")
    assert machine.cpu_load(str(tmp_path / "loadavg")) == 0.25
    assert machine.free_mem_mib(str(tmp_path / "meminfo")) == 23494
    assert machine.mem_total_mib(str(tmp_path / "meminfo")) == 32000
    assert machine.boot_time(str(tmp_path / "stat")) == 1764467531.0
    missing = str(tmp_path / "absent")
    assert machine.cpu_load(missing) is None
    assert machine.free_mem_mib(missing) is None
    assert machine.boot_time(missing) is None
    assert machine.mem_total_mib(missing) == 1  # a registration still goes out


def test_os_is_uname_system_release_and_version():
    u = platform.uname()
    name = machine.os_name()
    # e.g. "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"
    assert name == f"{u.system} {u.release} {u.version}"
    assert name.split(" ", 2)[:2] == [u.system, u.release]


@pytest.mark.skipif(not Path("/proc/loadavg").exists(), reason="needs Linux /proc")
def test_this_machine_reports_a_load_and_free_memory_within_its_total():
    load, free = machine.cpu_load(), machine.free_mem_mib()
    assert load is not None and load >= 0
    assert free is not None and 0 < free <= machine.mem_total_mib()


def test_registration_and_heartbeat_carry_the_facts(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(machine, "cpu_load", lambda: 1.68)
    monkeypatch.setattr(machine, "free_mem_mib", lambda: 23494)
    monkeypatch.setattr(machine, "os_name", lambda: "Linux 6.1.0 #1 SMP PREEMPT_DYNAMIC x")

    async def messages() -> tuple[NodeRegister, NodeHeartbeat]:
        cfg = parse_config("SlurmctldHost=localhost(127.0.0.1)\n")
        state = AgentState(
            cfg=cfg,
            name="n1",
            cluster_key=b"k" * 64,
            spool=tmp_path / "spool",
            gpus=[],
            gpu_source="none",
            node_conf=None,
        )
        try:
            return state.register_message(), state.heartbeat_message()
        finally:
            await state.shutdown()

    reg, beat = asyncio.run(messages())
    assert (reg.cpu_load, reg.free_mem, reg.os) == (
        1.68,
        23494,
        "Linux 6.1.0 #1 SMP PREEMPT_DYNAMIC x",
    )
    assert reg.version == daemon.VERSION
    assert beat == NodeHeartbeat(running_jobs=[], cpu_load=1.68, free_mem=23494)
    # what goes on the wire (and is signed) reads back the same
    assert from_dict(NodeHeartbeat, to_dict(beat)) == beat
    assert to_dict(beat) == {
        "running_jobs": [],
        "cpu_load": 1.68,
        "free_mem": 23494,
        "usage": [],
        "outside_gpus": None,  # no look at the GPUs yet (agent.gpu_outside)
    }
