"""API tests: the controller app built by its factory, a temporary store, a fake
clock, a recording agent client, and the user dependency overridden.

Every test that uses ``harness`` (or ``store_url``) runs twice: on a SQLite
file in its temporary directory, and on a fresh database of a throwaway
PostgreSQL server (``tests/pg.py``) started once per session.  Without the
PostgreSQL binaries the ``[postgresql]`` runs are skipped, unless
``SLURMLITE_REQUIRE_PG=1`` (set by ``.ci/run``) makes that an error."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from fastapi.testclient import TestClient

from controller.api.app import create_app
from controller.api.deps import get_user
from controller.auth.callers import Caller
from controller.context import Controller
from controller.store.db import Database
from slurmlite.clock import FakeClock
from slurmlite.config import parse_config
from slurmlite.protocol import NodeRegister
from tests.pg import PgServer, server_for_tests
from tests.recording_agents import RecordingAgentClient

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
SchedulerParameters=requeue_delay=5,bf_interval=1
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

    def post_job(self, **fields):  # type: ignore[no-untyped-def]
        """POST a submission (defaults for what a test does not care about); the raw response."""
        body = {
            "script": "#!/bin/sh\ntrue\n",
            "name": "job",
            "work_dir": "/tmp",
            "submit_dir": "/tmp",
            "submit_host": "vm",
            **fields,
        }
        return self.client.post("/v1/jobs", json=body)

    def submit(self, **fields) -> dict:
        return self.post_job(**fields).json()

    def job(self, job_id: int) -> dict:
        jobs = self.client.get(
            "/v1/jobs", params={"ids": job_id, "all_states": True, "steps": True}
        ).json()["jobs"]
        assert len(jobs) == 1
        return jobs[0]


def register(ctl: Controller, name: str, gpus: int = 2, cpus: int = 2) -> None:
    """The node's agent registers, reporting these resources (configured: 2 CPUs, 2 GPUs)."""
    ctl.nodes.register(
        NodeRegister(
            name=name,
            addr="127.0.0.1",
            port=6818,
            hostname=name,
            cpus=cpus,
            real_memory=4000,
            gpus=["gpu"] * gpus,
            gpu_type=None,
        )
    )


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    yield from server_for_tests()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> Iterator[str]:
    """An empty store: a SQLite file where the config would put it, or a new PG database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/state/slurmlite.db"
        return
    server: PgServer = request.getfixturevalue("pg_server")
    name, url = server.create_database()
    try:
        yield url
    finally:
        server.drop_database(name)


def harness_on(tmp_path, store_url: str, clock_is_monotonic: bool = False) -> Iterator[Harness]:  # type: ignore[no-untyped-def]
    """The harness cluster (n1, n2) on ``store_url``, for a fixture to ``yield from``.

    ``clock_is_monotonic``: the controller also measures its liveness gaps on the
    ``FakeClock``, so a clock jump between passes looks like a stalled controller."""
    cfg = parse_config(CONF.format(dir=tmp_path), path=str(tmp_path / "slurm.conf"))
    clock = FakeClock(1_800_000_000.0)
    agents = RecordingAgentClient()
    extra = {"monotonic": clock} if clock_is_monotonic else {}
    ctl = Controller(cfg, KEY, db=Database(store_url), agents=agents, clock=clock, **extra)
    app = create_app(ctl, run_loop=False)
    h = Harness(ctl=ctl, clock=clock, agents=agents, client=TestClient(app))
    app.dependency_overrides[get_user] = lambda: h.who[0]
    register(ctl, "n1")
    register(ctl, "n2")
    yield h
    ctl.db.close()


@pytest.fixture
def harness(tmp_path, store_url):
    yield from harness_on(tmp_path, store_url)
