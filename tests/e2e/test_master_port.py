"""Node 0's agent warns in the job's log when the MASTER_PORT slurmlite chose is taken."""

from __future__ import annotations

import re
import socket

from slurmlite.jobenv import master_port
from tests.e2e.conftest import wait_for


def _submit(cluster, *args: str) -> int:  # type: ignore[no-untyped-def]
    r = cluster.run("sbatch --parsable " + " ".join(args))
    assert r.returncode == 0, r.stderr
    return int(r.stdout.strip().split(";")[0])


def test_a_taken_master_port_is_named_in_the_jobs_error_output(cluster):
    probe = _submit(cluster, "--hold", "--wrap", "true")  # learns the next job id
    cluster.run(f"scancel {probe}")
    port = master_port(probe + 1)
    taker = socket.socket()
    try:
        taker.bind(("0.0.0.0", port))
        taker.listen(1)
        job = _submit(cluster, "-o", "portjob-%j.out", "--wrap", "'echo started'")
        assert job == probe + 1, "another submission came between: the port guess is stale"
        out = cluster.work / f"portjob-{job}.out"
        wait_for(
            lambda: out.exists() and "already in use" in out.read_text(),
            30,
            "the warning in the job's output",
        )
        text = out.read_text()
        # the batch host is the job's first node, whichever the scheduler chose
        assert re.search(rf"MASTER_PORT {port} is already in use on n\d+: set MASTER_PORT", text)
        wait_for(lambda: "started" in out.read_text(), 30, "the job itself to run")
    finally:
        taker.close()


def test_a_free_port_gives_no_warning(cluster):
    job = _submit(cluster, "-o", "freeport-%j.out", "--wrap", "'echo fine'")
    out = cluster.work / f"freeport-{job}.out"
    wait_for(lambda: out.exists() and "fine" in out.read_text(), 30, "the job's output")
    assert "already in use" not in out.read_text()
