"""API tests: the controller app built by its factory, a temporary SQLite store,
a fake clock, a recording agent client, and the user dependency overridden."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import pytest
from fastapi.testclient import TestClient

from controller.agents import RecordingAgentClient
from controller.api.deps import get_user
from controller.app import create_app
from controller.auth import Caller
from controller.context import Controller
from slurmlite.clock import FakeClock
from slurmlite.config import parse_config
from slurmlite.protocol import NodeRegister

KEY = b"t" * 64
ALICE = Caller(uid=1001, gid=1001, user="alice")
BOB = Caller(uid=1002, gid=1002, user="bob")
ROOT = Caller(uid=0, gid=0, user="root", admin=True)

CONF = """
ClusterName=anchor
SlurmctldHost=localhost(127.0.0.1)
StateSaveLocation={dir}/state
SlurmdTimeout=10
KillWait=2
MinJobAge=300
DefMemPerCPU=1000
GresTypes=gpu
SlurmliteHeartbeatInterval=1
SchedulerParameters=requeue_delay=5
NodeName=n[1-2] NodeAddr=127.0.0.1 CPUs=2 RealMemory=4000 Gres=gpu:2
PartitionName=debug Nodes=n[1-2] Default=YES MaxTime=UNLIMITED State=UP
PartitionName=long Nodes=n[1-2] MaxTime=60 State=UP
"""


@dataclass
class Harness:
    ctl: Controller
    clock: FakeClock
    agents: RecordingAgentClient
    client: TestClient
    who: list[Caller] = field(default_factory=lambda: [ALICE])

    def as_user(self, caller: Caller) -> None:
        self.who[0] = caller

    def tick(self) -> None:
        asyncio.run(self.ctl.loop.tick())

    def pass_time(self, seconds: float) -> None:
        """Advance the clock while the nodes keep sending heartbeats."""
        self.clock.advance(seconds)
        for n in ("n1", "n2"):
            self.ctl.nodes.heartbeat(n)

    def submit(self, **fields) -> dict:
        body = {
            "script": "#!/bin/sh\ntrue\n",
            "name": "job",
            "work_dir": "/tmp",
            "submit_dir": "/tmp",
            "submit_host": "vm",
            **fields,
        }
        return self.client.post("/v1/jobs", json=body).json()

    def job(self, job_id: int) -> dict:
        jobs = self.client.get(
            "/v1/jobs", params={"ids": job_id, "all_states": True, "steps": True}
        ).json()["jobs"]
        assert len(jobs) == 1
        return jobs[0]


def register(ctl: Controller, name: str, gpus: int = 2) -> None:
    ctl.nodes.register(
        NodeRegister(
            name=name,
            addr="127.0.0.1",
            port=6818,
            hostname=name,
            cpus=2,
            real_memory=4000,
            gpus=["gpu"] * gpus,
            gpu_type=None,
        )
    )


@pytest.fixture
def harness(tmp_path):
    cfg = parse_config(CONF.format(dir=tmp_path), path=str(tmp_path / "slurm.conf"))
    clock = FakeClock(1_800_000_000.0)
    agents = RecordingAgentClient()
    ctl = Controller(cfg, KEY, agents=agents, clock=clock)
    app = create_app(ctl, run_loop=False)
    h = Harness(ctl=ctl, clock=clock, agents=agents, client=TestClient(app))
    app.dependency_overrides[get_user] = lambda: h.who[0]
    register(ctl, "n1")
    register(ctl, "n2")
    yield h
    ctl.db.close()
