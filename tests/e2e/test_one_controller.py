"""One controller per store (``controller.store.lease``), on SQLite and on PostgreSQL.

Each store kind gets a cluster of its own (two agents, one controller).

* A second ``slurmctld`` on the same store, with another port, socket, PID
  file and log (a mistyped unit file), exits non-zero at once with a
  ``slurmctld: fatal:`` line naming the holder; the first one's running job
  goes on and ends COMPLETED with ``Restarts=0``.
* ``kill -9`` of the controller, then a new one on the same configuration:
  it takes the store over (``event=lease_takeover`` in its log) with a
  higher epoch; the running job completes, a new one runs (the agents obey
  the new epoch: their spool says so).

Waits are conditions with deadlines; the clusters are stopped by PID and
removed even when a test fails.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine

from cli.localcluster import free_port, read_pid
from controller.store.lease import LEASE_LOCK, read_holder
from tests.agent.jobs import is_live
from tests.e2e.conftest import Cluster, local_cluster, wait_for
from tests.pg import PgServer, server_for_tests


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    yield from server_for_tests()


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def store(request) -> Iterator[tuple[Cluster, str, PgServer | None]]:
    """(cluster, its store URL, the PostgreSQL server or None)."""
    server, url = None, None
    if request.param == "postgresql":
        server = request.getfixturevalue("pg")
        _, url = server.create_database()
    with local_cluster("slurmlite-lease-", nodelist="ls[1-2]", cpus_per_node=2, store_url=url) as c:
        conf = c.conf.read_text()
        state = re.search(r"^StateSaveLocation=(\S+)", conf, re.M)
        assert state is not None
        yield c, url or f"sqlite:///{state.group(1)}/slurmlite.db", server


def show(c: Cluster, jid: int, key: str) -> str:
    m = re.search(rf"\b{key}=(\S+)", c.run(f"scontrol show job {jid}").stdout)
    return m.group(1) if m else ""


def conf_value(c: Cluster, key: str) -> str:
    m = re.search(rf"^{key}=(\S+)", c.conf.read_text(), re.M)
    assert m is not None, key
    return m.group(1)


def controller(conf: Path) -> subprocess.CompletedProcess[str]:
    """``slurmctld -f conf`` as an admin types it (it detaches when it may run)."""
    return subprocess.run(
        [sys.executable, "-m", "controller.main", "-f", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_a_second_controller_on_the_store_exits_naming_the_first(store):
    c, url, _ = store
    jid = c.submit("-w ls1 --wrap 'sleep 8'")
    wait_for(lambda: show(c, jid, "JobState") == "RUNNING", what="job running")
    first_pid = read_pid(c.directory / "run" / "slurmctld.pid")
    port = conf_value(c, "SlurmctldPort")
    other = c.directory / "other"
    other.mkdir()
    # the same store, everything else its own: port, socket, PID file, log
    text = c.conf.read_text()
    for key, value in {
        "SlurmctldPort": str(free_port()),
        "SlurmliteSocket": f"{other}/slurmctld.sock",
        "SlurmctldPidFile": f"{other}/slurmctld.pid",
        "SlurmctldLogFile": f"{other}/slurmctld.log",
    }.items():
        text = re.sub(rf"^{key}=.*$", f"{key}={value}", text, flags=re.M)
    conf2 = other / "slurm.conf"
    conf2.write_text(text)
    second = controller(conf2)
    try:
        assert second.returncode == 1, second.stderr
        line = second.stderr.strip()
        assert line.startswith("slurmctld: fatal: the job store "), line
        assert "is in use by another slurmctld" in line
        assert f"pid {first_pid} port {port} " in line and " since " in line, line
        assert not (other / "slurmctld.sock").exists()  # it never listened
    finally:
        pid = read_pid(other / "slurmctld.pid")
        if pid is not None and is_live(pid):  # it started after all: stop it
            os.kill(pid, signal.SIGKILL)
    # the first controller goes on as if nothing happened
    assert c.wait_done(jid, timeout=60) == "COMPLETED"
    assert show(c, jid, "Restarts") == "0"
    holder = read_holder(create_engine(url))
    assert holder is not None and holder.pid == first_pid and holder.epoch == 1


def test_a_killed_controller_is_taken_over_with_a_higher_epoch(store):
    c, url, server = store
    jid = c.submit("-w ls2 --wrap 'sleep 4'")
    wait_for(lambda: show(c, jid, "JobState") == "RUNNING", what="job running")
    old = read_pid(c.directory / "run" / "slurmctld.pid")
    assert old is not None
    os.kill(old, signal.SIGKILL)
    wait_for(lambda: not is_live(old), what="controller gone")
    if server is not None:  # the server drops the lock once it sees the session end
        wait_for(lambda: not _lease_locked(server), what="PostgreSQL session ended")
    log = Path(conf_value(c, "SlurmctldLogFile"))
    started = controller(c.conf)
    assert started.returncode == 0, started.stderr
    wait_for(
        lambda: re.search(rf"event=lease_takeover previous_holder=\S+:{old}/\S+ ", log.read_text()),
        what="the take-over in the log",
    )
    assert re.search(r"event=lease_takeover .* epoch=2 ", log.read_text())
    new_pid = read_pid(c.directory / "run" / "slurmctld.pid")
    holder = read_holder(create_engine(url))
    assert holder is not None and (holder.epoch, holder.pid) == (2, new_pid)
    # the cluster works on: the job that ran through the change completes, a new one runs
    assert c.wait_done(jid, timeout=60) == "COMPLETED"
    jid2 = c.submit("-N2 --wrap 'srun true'")
    assert c.wait_done(jid2, timeout=60) == "COMPLETED"
    epochs = {p.read_text().split()[1] for p in (c.directory / "spool").glob("*/epoch")}
    assert epochs == {"2"}  # both agents obeyed epoch 2


def _lease_locked(server: PgServer) -> bool:
    assert server._admin is not None
    row = server._admin.execute(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s",
        (LEASE_LOCK,),
    ).fetchone()
    return bool(row and row[0])
