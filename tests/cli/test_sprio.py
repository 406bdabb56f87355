"""sprio against a fake controller (the golden outputs of Slurm 22.05) and a live one.

The golden queue (``50_sprio*.txt``): alice's pending jobs 51, 52, 56, 57, 58
in partition debug; weights Age=1000, Fairshare=10000, JobSize=1000,
Partition=1000, QOS=1000, TRES ``CPU=1000,Mem=0,GRES/gpu=...``, Assoc 0.
Each job's weighted factors are built as ``multifactor.Factors`` and sent as
the controller stores them (``controller.accounting.priority_facts.encode``):

    job 51: fair-share 4000 + job size 750 + partition 100 + cpu 500          = 5350
    job 52: fair-share 4000 + job size 375 + partition 100 + cpu 250          = 4725
    job 56: fair-share 4000 + job size 375 + partition 100 + cpu 250 + gpu 1000 = 5725
"""

from __future__ import annotations

import asyncio
import json
import shlex

import pytest

from cli import sprio
from cli.format_codes import pad
from controller.accounting.priority_facts import encode
from slurmlite.errors import SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR, SlurmError
from slurmlite.scheduler.multifactor import Factors, JobPriority, clamp_priority
from tests.api.conftest import ALICE, BOB, CONF, KEY, register
from tests.cli.harness import FakeClient, install
from tests.golden_path import GOLDEN

WEIGHTS = {"age": 1000, "assoc": 0, "fairshare": 10000, "jobsize": 1000, "partition": 1000,
           "qos": 1000, "tres": "CPU=1000,Mem=0,GRES/gpu=1000"}  # fmt: skip


def golden_job(job_id: int, jobsize: float, cpu: float, gpu: float = 0.0) -> dict:
    tres = {"cpu": cpu, "mem": 0.0, "gres/gpu": gpu}
    weighted = Factors(fairshare=4000.0, jobsize=jobsize, partition=100.0, tres=tres)
    norm = Factors(
        fairshare=0.4,
        jobsize=jobsize / 1000,
        partition=0.1,
        tres={k: v / 1000 for k, v in tres.items()},
    )
    prio = JobPriority(clamp_priority(weighted.total()), norm, weighted)
    return {"job_id": job_id, "partition": "debug", "user": "alice", "uid": 1001,
            "account": "acct_a", "qos": "normal", "priority": prio.value,
            "factors": json.loads(encode(prio))}  # fmt: skip


def golden_answer() -> dict:
    jobs = [golden_job(51, 750.0, 500.0), golden_job(52, 375.0, 250.0),
            golden_job(56, 375.0, 250.0, 1000.0), golden_job(57, 375.0, 250.0),
            golden_job(58, 375.0, 250.0)]  # fmt: skip
    return {"priority_type": "priority/multifactor", "weights": dict(WEIGHTS), "jobs": jobs}


class Config:
    cluster_name = "anchor"


def priorities_client(answer: dict) -> FakeClient:
    """The harness's fake answering ``GET /v1/priorities`` with ``fake.answer``, by ids."""
    fake = FakeClient(config=Config())
    fake.answer = answer  # type: ignore[attr-defined]

    def request(method: str, path: str, body: object = None, query: dict | None = None):
        assert (method, path) == ("GET", "/v1/priorities")
        ids = (query or {}).get("ids")
        jobs = [j for j in fake.answer["jobs"] if ids is None or j["job_id"] in ids]  # type: ignore[attr-defined]
        return {**fake.answer, "jobs": jobs}  # type: ignore[attr-defined]

    fake.answers["request"] = request
    return fake


def queries(fake: FakeClient) -> list[dict]:
    """The query of every request sprio sent."""
    return [dict(c.kwargs.get("query") or {}) for c in fake.calls]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    fake = priorities_client(golden_answer())
    install(monkeypatch, fake)
    monkeypatch.delenv("SPRIO_FORMAT", raising=False)
    return fake


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str, int]:
    code = sprio.main(argv)
    out, err = capsys.readouterr()
    return out, err, code


def golden(name: str) -> tuple[list[str], str]:
    """(argv, stdout) of a golden file."""
    lines = (GOLDEN / name).read_text().splitlines()
    argv = shlex.split(lines[0].lstrip("$# "))[1:]
    end = next(i for i, line in enumerate(lines) if line.startswith(("[stderr]", "[exit")))
    return argv, "".join(line + "\n" for line in lines[1:end])


def test_golden_priorities_add_up_through_factors():
    assert [j["priority"] for j in golden_answer()["jobs"]] == [5350, 4725, 5725, 4725, 4725]


@pytest.mark.parametrize("name", ["50_sprio.txt", "50_sprio_l.txt", "50_sprio_w.txt"])
def test_golden_outputs(name: str, fake: FakeClient, capsys: pytest.CaptureFixture[str]):
    argv, want = golden(name)
    out, err, code = run(argv, capsys)
    assert (out, err, code) == (want, "", 0)


# ------------------------------------------------------------- cells


def test_a_right_justified_cell_is_padded_then_cut_keeping_its_start():
    # "cpu=250,gres/gpu=1000" is 21 characters: the 20-wide TRES column drops the last 0
    assert pad("cpu=250,gres/gpu=1000", 20, right=True) == "cpu=250,gres/gpu=100"
    assert pad("cpu=500", 20, right=True) == " " * 13 + "cpu=500"
    assert pad("debug", 9, right=False) == "debug    "
    assert pad("averylongpartition", 9, right=False) == "averylong"
    assert pad("x", 0, right=True) == "x"


def test_norm_shows_seven_decimals_and_the_priority_over_2_to_the_32(fake, capsys):
    out, _err, _ = run(["-n", "-j51"], capsys)
    head, row = out.splitlines()
    assert head.split() == ["JOBID", "PARTITION", "PRIORITY", "AGE", "FAIRSHARE", "JOBSIZE",
                            "PARTITION", "QOS", "TRES"]  # fmt: skip
    # 5350 / (2**32 - 1) = 0.0000012456..., "%16.14f" cut to the 10-wide left column
    # fair-share 4000 / 10000 = 0.4; TRES: only the non-zero cpu, 500/1000 with 2 decimals
    assert row.split() == ["51", "debug", "0.00000124", "0.0000000", "0.4000000", "0.7500000",
                           "0.1000000", "0.0000000", "cpu=0.50"]  # fmt: skip


def test_format_option_with_prefix_suffix_and_widths(fake, capsys):
    out, _err, _ = run(["-h", "-o", "job=%i|%5u|%.6Y|%T!", "-j52,56"], capsys)
    assert out == "job=52|alice|  4725|cpu=250!\njob=56|alice|  5725|cpu=250,gres/gpu=1000!\n"


def test_sort_by_priority_descending_then_id(fake, capsys):
    out, _err, _ = run(["-h", "-o", "%i", "-S", "-Y"], capsys)
    # 5725 (56), 5350 (51), then the 4725s in id order (a stable sort)
    assert out.split() == ["56", "51", "52", "57", "58"]


def test_user_filter_keeps_matching_rows_and_header_says_user(fake, capsys):
    out, _err, _ = run(["-u", "bob"], capsys)  # none of bob's: the header alone
    assert out.split() == ["JOBID", "PARTITION", "USER", "PRIORITY", "SITE", "AGE", "FAIRSHARE",
                           "JOBSIZE", "PARTITION", "QOS", "TRES"]  # fmt: skip
    out, _err, _ = run(["-h", "-u", "alice", "-o", "%i"], capsys)
    assert out.split() == ["51", "52", "56", "57", "58"]


def test_jobs_that_match_nothing(fake, capsys):
    out, err, code = run(["-j99"], capsys)
    assert (out, err, code) == ("Unable to find jobs matching user/id(s) specified\n", "", 0)
    assert queries(fake)[-1]["ids"] == [99]
    out, err, code = run(["-j", "52"], capsys)  # the word after a bare -j is the list
    assert queries(fake)[-1]["ids"] == [52] and out.count("\n") == 2
    out, err, code = run(["-jx"], capsys)
    assert (err, code) == ("sprio: error: Invalid job id: x\n", 1)


def test_an_empty_queue_prints_the_header_alone(fake, capsys):
    fake.answer["jobs"] = []
    out, _err, code = run([], capsys)
    assert (out.count("\n"), out.split()[0], code) == (1, "JOBID", 0)


def test_priority_basic_is_not_supported(fake, capsys):
    fake.answer["priority_type"] = "priority/basic"
    out, err, code = run([], capsys)
    assert (out, code) == ("", 1)
    assert err == (
        "You are not running a supported priority plugin\n(priority/basic).\n"
        "Only 'priority/multifactor' is supported.\n"
    )


def test_long_and_format_together_are_refused(fake, capsys):
    out, err, code = run(["-l", "-o", "%i"], capsys)
    assert (out, code) == ("", 1)
    assert err.startswith("sprio: fatal: Options -o(--format) and -l(--long) are mutually")
    assert queries(fake) == []


def test_the_controller_unreachable(fake, capsys):
    fake.error = SlurmError(SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR)
    out, err, code = run([], capsys)
    assert (out, code) == ("", 255)
    assert err == (
        "Couldn't get priority factors from controller: "
        "Unable to contact slurm controller (connect failure)\n"
    )


def test_sprio_format_variable_applies_unless_long(fake, capsys, monkeypatch):
    monkeypatch.setenv("SPRIO_FORMAT", "%i")
    out, _err, _ = run(["-h"], capsys)
    assert out.split() == ["51", "52", "56", "57", "58"]
    out, _err, _ = run(["-h", "-l"], capsys)
    assert "alice" in out


# ------------------------------------------------------- live controller


def test_sprio_against_a_live_controller(live_controller, monkeypatch, capsys):
    weights = "PriorityWeightJobSize=1000\nPriorityWeightPartition=1000\n"
    live = install(
        monkeypatch,
        live_controller(CONF.replace("NodeName=", weights + "NodeName=", 1), who=ALICE, key=KEY),
    )
    ctl, http, who = live.ctl, live.http, live.who
    register(ctl, "n1")
    register(ctl, "n2")
    monkeypatch.delenv("SPRIO_FORMAT", raising=False)
    try:
        body = {"script": "#!/bin/sh\ntrue\n", "name": "j", "work_dir": "/tmp",
                "submit_dir": "/tmp", "submit_host": "vm", "nodes_min": 2, "ntasks": 4}  # fmt: skip
        first = http.post("/v1/jobs", json=body).json()["job_id"]  # takes the whole cluster
        asyncio.run(ctl.loop.tick())
        who[0] = BOB
        waiting = http.post("/v1/jobs", json={**body, "ntasks": 2}).json()["job_id"]
        out, err, code = run(["-l"], capsys)
        # only the pending job: size (2/2 + 2/4) / 2 = 0.75 -> 750, partition 1000
        assert (err, code) == ("", 0)
        lines = out.splitlines()
        assert len(lines) == 2 and first != waiting
        assert lines[1].split() == [str(waiting), "debug", "bob", "1750", "0", "0", "0", "0",
                                    "750", "1000", "0", "0"]  # fmt: skip
        out, _err, _ = run(["-w"], capsys)
        assert out.splitlines()[1].split() == ["Weights", "1", "1000", "1000"]
    finally:
        ctl.db.close()
