"""``slurmlite report`` through a real controller: the table, ``--by account``, ``--json``,
PrivateData, a bad time.

The day 2026-11-01 (local time) on the two-node cluster of ``tests/api/conftest.py``:

    job  user/account  held              ran (hours)  waited  ended      GPU utilization
    1    alice/lab     2 CPUs, 2 GPUs    10 .. 12     300 s   COMPLETED  75 %
    2    alice/lab     1 CPU, 1 GPU      14 .. 16     0 s     FAILED     30 %
    3    bob/ml        1 CPU             1 .. 4       0 s     COMPLETED  -

alice: CPU 2 x 2 + 1 x 2 = 6 h, GPU 2 x 2 + 1 x 2 = 6 h, mean wait 150 s (2:30),
1 of 2 completed (50 %), utilization (75 x 4 + 30 x 2) / 6 = 60 %.
bob: CPU 3 h, no GPU, wait 0:00, 100 %, utilization unmeasured (-).
"""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner

from cli.slurmlite import main
from tests.api.conftest import ALICE, CONF
from tests.cli.harness import install
from tests.report_jobs import a_gpu_measure, a_job, put_jobs, put_measures

H = 3600.0
DAY = time.mktime((2026, 11, 1, 0, 0, 0, 0, 0, -1))
PERIOD = ["--start", "2026-11-01", "--end", "2026-11-02"]


@pytest.fixture
def lab(live_controller, monkeypatch):
    live = live_controller(CONF)
    put_jobs(
        live.ctl.db,
        [
            a_job(1, "alice", start=DAY + 10 * H, end=DAY + 12 * H, cpus=2, gpus_per_node=2,
                  submit=DAY + 10 * H - 300),
            a_job(2, "alice", start=DAY + 14 * H, end=DAY + 16 * H, gpus_per_node=1,
                  state="FAILED"),
            a_job(3, "bob", account="ml", start=DAY + H, end=DAY + 4 * H),
        ],
    )  # fmt: skip
    put_measures(live.ctl.db, [a_gpu_measure(1, 75.0), a_gpu_measure(2, 30.0)])
    install(monkeypatch, live)
    return live


def run(*argv: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, ["report", *argv])


def test_the_table_per_user(lab):
    result = run(*PERIOD)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "Usage 2026-11-01T00:00:00 - 2026-11-02T00:00:00 by user",
        "USER  JOBS GPU-HOURS CPU-HOURS MEAN-WAIT SUCCESS GPU-UTIL",
        "alice    2      6.00      6.00      2:30   50.0%    60.0%",
        "bob      1      0.00      3.00      0:00  100.0%        -",
    ]


def test_per_account_and_as_json(lab):
    result = run(*PERIOD, "--by", "account")
    assert [line.split()[:3] for line in result.output.splitlines()[2:]] == [
        ["lab", "2", "6.00"],
        ["ml", "1", "0.00"],
    ]
    data = json.loads(run(*PERIOD, "--json").output)
    assert (data["by"], data["start"], data["end"]) == ("user", DAY, DAY + 24 * H)
    alice = data["rows"][0]
    assert (alice["name"], alice["gpu_util"], alice["measured_gpu_hours"]) == ("alice", 60.0, 6.0)


def test_private_data_usage_shows_a_user_only_their_own_row(lab):
    lab.ctl.cfg.private_data = ["usage"]
    lab.as_user(ALICE)
    assert [line.split()[0] for line in run(*PERIOD).output.splitlines()[2:]] == ["alice"]


def test_an_empty_period_and_a_bad_time(lab):
    result = run("--start", "2026-10-01", "--end", "2026-10-02")
    assert result.output.splitlines()[-1] == "(no jobs in this period)"
    result = run("--start", "someday")
    assert result.exit_code == 1
    assert result.output == "slurmlite: error: Invalid time specification (pos=0): someday\n"
