"""Scheduling policy on real daemons: backfill around a reservation, QOS limits set
with the real ``sacctmgr``, estimates in ``squeue --start`` and ``slurmlite explain``.

A cluster of its own (one node ``p1``: 4 CPUs, 2 GPUs, 4000 MB; backfill every
second), so changing QOS ``normal`` cannot disturb the session cluster's tests.
"""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime

import pytest

from tests.e2e.conftest import Cluster, local_cluster, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the local cluster runs jobs as root")


@pytest.fixture(scope="module")
def lab():
    with local_cluster(
        "slurmlite-policy-",
        nodelist="p1",
        cpus_per_node=4,
        gpus_per_node=2,
        mem_per_node=4000,
        cluster_name="policy",
        def_mem_per_cpu=500,
        # weights 0 (cluster up --fifo): Priority=5000 below must outrank the other job,
        # which a lab's fair-share weight (10000, once sacctmgr made root's association)
        # would not let it do
        fifo=True,
    ) as c:
        yield c


def _state(lab: Cluster, job: int) -> tuple[str, str]:
    out = lab.run(f"squeue -h -j {job} -o '%T|%r'").stdout.strip()
    state, _, reason = out.partition("|")
    return state, reason


def _epoch(stamp: str) -> int:
    """squeue's local ISO time (the cluster env sets TZ=UTC) -> Unix seconds."""
    return int(datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp())


def _cancel(lab: Cluster, *jobs: int) -> None:
    lab.run("scancel " + " ".join(str(j) for j in jobs))
    for job in jobs:
        lab.wait_done(job)


def test_a_short_job_backfills_around_the_reservation_a_long_one_may_not(lab):
    # p1 has 4 CPUs.  A holds 3 of them for up to 3 minutes; B needs all 4, so it
    # waits for A's end and reserves the node from then on.  C (1 CPU, 1 minute)
    # ends before A's limit: it starts at once in the free CPU (backfill).  D
    # (1 CPU, 10 minutes) would still hold its CPU when B is due: it must wait.
    # A's 3 minutes leave a whole minute between C's end and B's start however
    # late (under a minute) C starts after A: a 1-minute D always fits there.
    a = lab.submit("-n 3 -t 3 --wrap 'sleep 180'")
    wait_for(lambda: _state(lab, a)[0] == "RUNNING", what="A running")
    b = lab.submit("-n 4 -t 5 --wrap true")
    c = lab.submit("-n 1 -t 1 --wrap 'sleep 30'")
    d = lab.submit("-n 1 -t 10 --wrap 'sleep 30'")
    try:
        wait_for(lambda: _state(lab, c)[0] == "RUNNING", what="C backfilled")
        assert _state(lab, b) == ("PENDING", "Resources")
        assert _state(lab, d)[0] == "PENDING"

        # B's estimate: A's end (its start + 3 minutes), rounded to bf_resolution
        def planned():  # type: ignore[no-untyped-def]
            line = lab.run(f"squeue --start -h -j {b} -o '%S|%Y'").stdout.strip()
            return line if not line.startswith("N/A") else None

        start, _, nodes = wait_for(planned, what="B's estimate").partition("|")
        assert nodes == "p1"
        a_end = _epoch(lab.run(f"squeue -h -j {a} -o %e").stdout.strip())
        # e.g. A ends 11:28:41 -> B may start 11:29:00 (bf_resolution=60 rounds up)
        assert _epoch(start) == math.ceil(a_end / 60) * 60

        # explain names D's blockers and offers a shorter --time that the pass confirms
        r = lab.run(f"slurmlite explain --json {d}")
        assert r.returncode == 0, r.stderr
        report = json.loads(r.stdout)
        assert report["state"] == "PENDING"
        assert {blk["job_id"] for blk in report["blockers"]} & {a, b}
        times = [s for s in report["suggestions"] if s["option"] == "time"]
        # the node is full (A 3 CPUs + C 1) and B holds it from A's end: a short D
        # fits between C's end and B's start, which is earlier than D's estimate
        assert report["estimated_start"] is not None
        assert times and all(s["start"] < report["estimated_start"] for s in times)
    finally:
        _cancel(lab, a, b, c, d)


def test_a_gpu_cap_set_with_sacctmgr_keeps_the_second_gpu_job_waiting(lab):
    # "at most 1 GPU per user": the first 1-GPU job runs, the second waits with
    # Slurm's reason although a GPU is free; lifting the cap lets it start.
    r = lab.run("sacctmgr -i modify qos normal set MaxTRESPerUser=gres/gpu=1")
    assert r.returncode == 0, r.stderr
    first = second = 0
    try:
        shown = lab.run("sacctmgr -n -P show qos normal format=Name,MaxTRESPU").stdout
        assert shown.strip() == "normal|gres/gpu=1"
        first = lab.submit("--gres=gpu:1 -t 5 --wrap 'sleep 60'")
        second = lab.submit("--gres=gpu:1 -t 5 --wrap 'sleep 60'")
        wait_for(lambda: _state(lab, first)[0] == "RUNNING", what="first GPU job")
        wait_for(
            lambda: _state(lab, second) == ("PENDING", "QOSMaxGRESPerUser"),
            what="QOSMaxGRESPerUser",
        )
        lab.run("sacctmgr -i modify qos normal set MaxTRESPerUser=gres/gpu=-1")
        wait_for(lambda: _state(lab, second)[0] == "RUNNING", what="second job after the cap")
    finally:
        lab.run("sacctmgr -i modify qos normal set MaxTRESPerUser=gres/gpu=-1")
        _cancel(lab, *(j for j in (first, second) if j))


def test_sprio_and_scontrol_update_priority_change_the_order(lab):
    # The node is full; two jobs wait.  An operator raises the second one's
    # priority: sprio shows it and the scheduler gives it the node first.
    hog = lab.submit("-n 4 -t 5 --wrap 'sleep 60'")
    wait_for(lambda: _state(lab, hog)[0] == "RUNNING", what="hog running")
    one = lab.submit("-n 4 -t 1 --wrap 'sleep 30'")
    two = lab.submit("-n 4 -t 1 --wrap 'sleep 30'")
    try:
        r = lab.run(f"scontrol update JobId={two} Priority=5000")
        assert r.returncode == 0, r.stderr
        out = lab.run(f"sprio -h -j {two} -o '%i %Y'").stdout.split()
        assert out == [str(two), "5000"]
        lab.run(f"scancel {hog}")
        wait_for(lambda: _state(lab, two)[0] == "RUNNING", what="the raised job first")
        assert _state(lab, one)[0] == "PENDING"
    finally:
        _cancel(lab, hog, one, two)
