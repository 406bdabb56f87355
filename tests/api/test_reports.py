"""The usage reports' API: ``GET /v1/reports/usage`` (sreport) and ``/v1/reports/lab``
(slurmlite report), from jobs with known times, on SQLite and PostgreSQL.

The cluster (``tests/api/conftest.py``): n1, n2 with 2 CPUs and 2 GPUs each ->
4 CPUs, 4 GPUs.  The period is the 8 hours [S, E) = [now - 10 h, now - 2 h):
reported = 4 x 8 h = 4 x 28800 = 115200 TRES-seconds for each TRES.

    job  user/account  held                        ran               in the period
    1    alice/lab     2 CPUs, 1 GPU (n1)          S+1h .. S+3h      2 h
    2    bob/lab       1 CPU                       S-1h .. S+1h      1 h (clipped)
    3    alice/ml      4 CPUs, --gpus=4 (n1,n2)    E-1h .. E+1h      1 h (clipped)
    4    carol/ml      1 CPU, 1 GPU/node (n1,n2)   E-2h .. running   2 h (stops at E)
    5    bob/lab       1 CPU                       S-3h .. S-2h      none
    6    carol/ml      pending                     never started     none

CPU-seconds: 1: 2 x 7200 = 14400; 2: 3600; 3: 4 x 3600 = 14400; 4: 7200 -> 39600.
GPU-seconds: 1: 7200; 3: 4 x 3600 = 14400; 4: 2 x 7200 = 14400 -> 36000.
"""

from __future__ import annotations

import pytest
from sqlalchemy import update

from controller.store.models import NodeRow
from tests.api.conftest import ALICE, ROOT
from tests.report_jobs import a_gpu_measure, a_job, put_jobs, put_measures

H = 3600.0
NOW = 1_800_000_000.0  # the harness's clock
S, E = NOW - 10 * H, NOW - 2 * H


def jobs() -> list[dict]:
    return [
        a_job(1, "alice", start=S + H, end=S + 3 * H, cpus=2, gpus_per_node=1, submit=S + H - 600),
        a_job(2, "bob", start=S - H, end=S + H, state="FAILED"),
        a_job(3, "alice", account="ml", start=E - H, end=E + H, cpus=4, gpus_total=4,
              nodes="n1,n2", submit=E - H - 1800),
        a_job(4, "carol", account="ml", start=E - 2 * H, end=E + 10 * H, state="RUNNING",
              gpus_per_node=1, nodes="n1,n2", submit=E - 3 * H),
        a_job(5, "bob", start=S - 3 * H, end=S - 2 * H),
        a_job(6, "carol", account="ml", start=None, end=None, state="PENDING", submit=E),
    ]  # fmt: skip


@pytest.fixture
def lab(harness):
    put_jobs(harness.ctl.db, jobs())
    # job 1 measured 80 % on n1; job 3 10 % on n1 and 30 % on n2 (mean 20 %)
    put_measures(
        harness.ctl.db,
        [a_gpu_measure(1, 80.0), a_gpu_measure(3, 10.0, "n1"), a_gpu_measure(3, 30.0, "n2")],
    )
    harness.as_user(ROOT)
    return harness


def usage(h, tres="cpu,gres/gpu", start=S, end=E):
    r = h.client.get("/v1/reports/usage", params={"start": start, "end": end, "tres": tres})
    assert r.status_code == 200, r.text
    return r.json()


def test_cluster_totals_are_held_time_clipped_to_the_period(lab):
    data = usage(lab)
    cpu, gpu = data["tres"]
    assert (cpu["tres"], cpu["count"], cpu["alloc_secs"]) == ("cpu", 4, 39600.0)
    # idle = 115200 - 39600 = 75600; reported = alloc + down + idle
    assert (cpu["down_secs"], cpu["idle_secs"], cpu["reported_secs"]) == (0.0, 75600.0, 115200.0)
    # GPUs: 36000 allocated, idle 115200 - 36000 = 79200
    assert (gpu["tres"], gpu["count"], gpu["alloc_secs"], gpu["idle_secs"]) == (
        "gres/gpu", 4, 36000.0, 79200.0,
    )  # fmt: skip
    assert (data["start"], data["end"], data["now"], data["cluster"]) == (S, E, NOW, "anchor")


def test_each_association_gets_its_own_usage_and_jobs(lab):
    rows = {(a["user"], a["account"]): (a["jobs"], a["secs"]) for a in usage(lab)["assocs"]}
    assert rows == {
        ("alice", "lab"): (1, {"cpu": 14400.0, "gres/gpu": 7200.0}),
        ("bob", "lab"): (1, {"cpu": 3600.0, "gres/gpu": 0.0}),  # job 5 ended before S
        ("alice", "ml"): (1, {"cpu": 14400.0, "gres/gpu": 14400.0}),
        ("carol", "ml"): (1, {"cpu": 7200.0, "gres/gpu": 14400.0}),  # running: up to E
    }
    assert {"account": "root", "parent": None} in usage(lab)["accounts"]


def test_a_running_job_counts_up_to_now(lab):
    # period [E, now + 1 h): carol's job 4 held 1 CPU from E to now = 2 h = 7200 s;
    # alice's job 3 from E to E + 1 h = 3600 s x 4 CPUs = 14400
    data = usage(lab, tres="cpu", start=E, end=NOW + H)
    secs = {(a["user"], a["account"]): a["secs"]["cpu"] for a in data["assocs"]}
    assert secs == {("carol", "ml"): 7200.0, ("alice", "ml"): 14400.0}


def test_a_node_down_now_counts_down_since_it_went_down(harness):
    # n2 (2 CPUs) down since E - 1 h: down = 2 x 3600 = 7200; idle = 115200 - 7200 = 108000
    with harness.ctl.db.write() as s:
        s.execute(update(NodeRow).where(NodeRow.name == "n2").values(down=True, reason_time=E - H))
    cpu = usage(harness, tres="cpu")["tres"][0]
    assert (cpu["alloc_secs"], cpu["down_secs"], cpu["idle_secs"]) == (0.0, 7200.0, 108000.0)
    assert cpu["reported_secs"] == 115200.0


def test_lab_report_per_user(lab):
    r = lab.client.get("/v1/reports/lab", params={"start": S, "end": E, "by": "user"})
    rows = {row["name"]: row for row in r.json()["rows"]}
    alice, bob, carol = rows["alice"], rows["bob"], rows["carol"]
    # alice: jobs 1 and 3; CPU (14400 + 14400) / 3600 = 8 h; GPU (7200 + 14400) / 3600 = 6 h
    assert (alice["jobs"], alice["cpu_hours"], alice["gpu_hours"]) == (2, 8.0, 6.0)
    # waits 600 s and 1800 s -> mean 1200; job 1 ended in the period COMPLETED (job 3 after E)
    assert (alice["mean_wait_s"], alice["ended"], alice["completed"]) == (1200.0, 1, 1)
    # utilization by GPU-hours: (80 x 2 h + 20 x 4 h) / 6 h = 40 %
    assert (alice["gpu_util"], alice["measured_gpu_hours"]) == (40.0, 6.0)
    # bob: job 2 (1 h, FAILED in the period); no job of his started in it
    assert (bob["jobs"], bob["cpu_hours"], bob["mean_wait_s"], bob["ended"], bob["completed"]) == (
        1, 1.0, None, 1, 0,
    )  # fmt: skip
    assert bob["gpu_util"] is None
    # carol: running job 4, 2 h x 1 CPU, 2 h x 2 GPUs, waited 1 h, nothing ended, unmeasured
    assert (carol["cpu_hours"], carol["gpu_hours"], carol["mean_wait_s"]) == (2.0, 4.0, 3600.0)
    assert (carol["ended"], carol["gpu_util"]) == (0, None)


def test_lab_report_per_account(lab):
    r = lab.client.get("/v1/reports/lab", params={"start": S, "end": E, "by": "account"})
    rows = {row["name"]: row for row in r.json()["rows"]}
    # lab: jobs 1, 2: CPU (14400 + 3600) / 3600 = 5 h, GPU 2 h; 80 % over job 1's 2 GPU-hours
    assert (rows["lab"]["jobs"], rows["lab"]["cpu_hours"], rows["lab"]["gpu_hours"]) == (
        2,
        5.0,
        2.0,
    )
    assert rows["lab"]["gpu_util"] == 80.0
    # ml: jobs 3, 4: CPU (14400 + 7200) / 3600 = 6 h, GPU (14400 + 14400) / 3600 = 8 h;
    # only job 3 measured: 20 % over its 4 GPU-hours
    assert (rows["ml"]["cpu_hours"], rows["ml"]["gpu_hours"]) == (6.0, 8.0)
    assert (rows["ml"]["gpu_util"], rows["ml"]["measured_gpu_hours"]) == (20.0, 4.0)


def test_private_data_usage_shows_a_user_only_their_own_usage(lab):
    lab.ctl.cfg.private_data = ["usage"]
    lab.as_user(ALICE)
    data = usage(lab)
    assert data["own_only"] is True
    assert {(a["user"], a["account"]) for a in data["assocs"]} == {
        ("alice", "lab"),
        ("alice", "ml"),
    }
    assert data["tres"][0]["alloc_secs"] == 39600.0  # the cluster's totals name nobody
    r = lab.client.get("/v1/reports/lab", params={"start": S, "end": E, "by": "account"})
    assert {row["name"]: row["jobs"] for row in r.json()["rows"]} == {"lab": 1, "ml": 1}
    lab.as_user(ROOT)  # operators see everyone
    assert len(usage(lab)["assocs"]) == 4
    lab.ctl.cfg.private_data = ["jobs"]  # hides jobs, not usage
    lab.as_user(ALICE)
    assert len(usage(lab)["assocs"]) == 4


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"start": E, "end": S}, 400),  # an empty period: ESLURM_INVALID_TIME_VALUE
        ({"start": S, "end": E, "tres": "mem"}, 400),  # ESLURM_INVALID_TRES
        ({"start": "soon", "end": E}, 422),
        ({"start": -1, "end": E}, 422),
        ({"start": "inf", "end": E}, 422),
        ({"end": E}, 422),
    ],
)
def test_bad_questions_get_a_client_error_never_500(lab, params, status):
    r = lab.client.get("/v1/reports/usage", params=params)
    assert r.status_code == status, r.text
    r = lab.client.get("/v1/reports/lab", params={"start": S, "end": E, "by": "group"})
    assert r.status_code == 422
