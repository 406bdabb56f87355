"""``--json`` of squeue, sacct, sinfo and scontrol against fake controllers.

The golden stores of the other command tests (the live queue of
``test_squeue_main``, the accounting records of ``test_sacct_main``, the
nodes and partitions of ``test_scontrol_main``) are printed as JSON and
compared with Slurm 22.05's captures by shape (``tests/golden_json.py``):
same envelope and ``meta``, every record with the golden's keys in its
order and value types.  The values the tests pin are the ones a script
reads: ids, names, states, nodes.
"""

from __future__ import annotations

import json

import pytest

from cli import sacct, scontrol, sinfo, squeue
from tests.cli.harness import FakeClient, install
from tests.cli.test_sacct_main import FINAL_NOW, accounting_client, final_store
from tests.cli.test_scontrol_main import golden_client
from tests.cli.test_squeue_main import golden_queue, queue_client
from tests.golden_json import document_differences, load_golden
from tests.golden_path import golden_path, needs_golden


def run(capsys: pytest.CaptureFixture[str], main, argv: list[str]) -> tuple[str, str, int]:  # type: ignore[no-untyped-def]
    try:
        status = main(argv)
    except SystemExit as exc:
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return out, err, status or 0


def doc(capsys: pytest.CaptureFixture[str], main, argv: list[str]) -> dict:  # type: ignore[no-untyped-def]
    out, err, status = run(capsys, main, argv)
    assert (err, status) == ("", 0)
    assert not out.endswith("\n")  # Slurm writes no newline after the closing brace
    return json.loads(out)


@pytest.fixture
def queue(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    for var in ("SQUEUE_STATES", "SQUEUE_FORMAT", "SQUEUE_FORMAT2", "SQUEUE_SORT"):
        monkeypatch.delenv(var, raising=False)
    return install(monkeypatch, queue_client(golden_queue()))


@needs_golden
def test_squeue_json_has_the_golden_shape_and_envelope(queue, capsys):
    _, golden, raw, _ = load_golden(golden_path("50_squeue_json_one.txt"))
    out, _, status = run(capsys, squeue.main, ["--json"])
    assert status == 0
    assert document_differences(golden, json.loads(out)) == []
    head = raw[: raw.index('"jobs": [') + len('"jobs": [')]
    assert out.startswith(head)  # meta and errors byte for byte, "\/" escapes included


def test_squeue_json_fields_a_script_reads(queue, capsys):
    jobs = {j["job_id"]: j for j in doc(capsys, squeue.main, ["--json"])["jobs"]}
    assert sorted(jobs) == list(range(50, 60))  # one record per job, pending array unfolded
    big = jobs[50]
    assert (big["job_state"], big["nodes"], big["batch_host"]) == ("RUNNING", "n[1-2]", "n1")
    assert big["job_resources"]["allocated_hosts"] == 2
    assert big["gres_detail"] == ["gpu:2(IDX:0-1)", "gpu:2(IDX:0-1)"]
    assert (jobs[56]["state_reason"], jobs[56]["tres_per_node"]) == ("Resources", "gres:gpu:2")
    assert "job_resources" not in jobs[56]  # pending: holds nothing
    assert (jobs[57]["array_task_string"], jobs[57]["array_task_id"]) == ("0-9%2", None)
    assert jobs[53]["dependency"] == "afterok:50(unfulfilled)"


@pytest.mark.parametrize(
    ("argv", "ids"),
    [
        (["-j", "51"], [51]),
        (["-j", "51,56", "-o", "%i"], [51, 56]),  # a format option is ignored
        (["-t", "RUNNING"], [50]),
        (["-u", "nobody-here"], []),
        (["--name", "arr,held", "-S", "-i"], [54, 57]),  # sorting too: the controller's order
    ],
)
def test_squeue_json_filters_as_the_text_listing(queue, capsys, argv, ids):
    assert [j["job_id"] for j in doc(capsys, squeue.main, ["--json", *argv])["jobs"]] == ids


def test_squeue_json_unknown_single_job_is_the_text_error(queue, capsys):
    assert run(capsys, squeue.main, ["--json", "-j", "99"]) == (
        "",
        "slurm_load_jobs error: Invalid job id specified\n",
        1,
    )


@pytest.fixture
def accounting(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    monkeypatch.setattr(sacct, "my_uid", lambda: 1001)
    monkeypatch.delenv("SACCT_FORMAT", raising=False)
    monkeypatch.setattr(sacct.time, "time", lambda: FINAL_NOW)
    return install(monkeypatch, accounting_client(final_store()))  # job 65 "ok" among them


@needs_golden
def test_sacct_json_has_the_golden_shape(accounting, capsys):
    _, golden, _, _ = load_golden(golden_path("60_sacct_json_one.txt"))
    ours = doc(capsys, sacct.main, ["--json", "-j", "65"])
    assert document_differences(golden, ours) == []
    [job] = ours["jobs"]
    assert (job["job_id"], job["name"], job["state"]["current"], job["nodes"]) == (
        65,
        "ok",
        "COMPLETED",
        "n1",
    )
    assert [s["step"]["id"] for s in job["steps"]] == ["batch"]
    assert job["exit_code"] == {"status": "SUCCESS", "return_code": 0}


def test_sacct_json_selects_as_the_text_rows(accounting, capsys):
    window = ["-s", "failed", "-S", "2026-11-30T00:00", "-E", "now"]
    text = run(capsys, sacct.main, ["-X", "-n", "-P", "-o", "JobIDRaw", *window])[0]
    ours = doc(capsys, sacct.main, ["--json", *window, "-o", "JobName"])  # -o ignored
    assert ours["jobs"] and {j["state"]["current"] for j in ours["jobs"]} == {"FAILED"}
    assert [str(j["job_id"]) for j in ours["jobs"]] == text.split()
    codes = {j["name"]: j["exit_code"] for j in ours["jobs"]}
    assert codes["fail3"] == {"status": "FAILED", "return_code": 3}  # wait status 768


def test_sinfo_json_lists_nodes_and_partitions(monkeypatch, capsys):
    install(monkeypatch, golden_client())
    monkeypatch.delenv("SINFO_PARTITION", raising=False)
    shown = doc(capsys, sinfo.main, ["--json"])
    assert list(shown) == ["meta", "errors", "nodes", "partitions"]
    assert shown["meta"]["plugin"]["type"] == "openapi/v0.0.38"
    n1 = shown["nodes"][0]
    assert (n1["name"], n1["state"], n1["alloc_cpus"], n1["idle_cpus"]) == ("n1", "allocated", 2, 0)
    assert (n1["gres"], n1["cpu_load"], n1["tres"]) == (
        "gpu:2",
        168,
        "cpu=2,mem=4000M,billing=2,gres/gpu=2",
    )
    debug = shown["partitions"][0]
    assert (debug["name"], debug["flags"], debug["max_time_limit"]) == ("debug", ["default"], -1)
    only = doc(capsys, sinfo.main, ["--json", "-p", "long", "-n", "n2", "-o", "%P"])
    assert [p["name"] for p in only["partitions"]] == ["long"]
    assert [n["name"] for n in only["nodes"]] == ["n2"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--json", "show", "job", "50"],
        ["show", "job", "50", "--json"],
        ["show", "--json", "job=50"],
    ],
)
def test_scontrol_json_show_job_either_spelling(monkeypatch, capsys, argv):
    install(monkeypatch, golden_client())
    [job] = doc(capsys, scontrol.main, argv)["jobs"]
    assert (job["job_id"], job["job_state"], job["nodes"]) == (50, "RUNNING", "n[1-2]")


def test_scontrol_json_array_task_nodes_partitions_and_errors(monkeypatch, capsys):
    install(monkeypatch, golden_client())
    [task] = doc(capsys, scontrol.main, ["--json", "show", "job", "57_3"])["jobs"]
    assert (task["array_job_id"], task["array_task_id"], task["array_task_string"]) == (57, 3, "")
    nodes = doc(capsys, scontrol.main, ["--json", "show", "node", "n2"])["nodes"]
    assert [(n["name"], n["port"], n["slurmd_version"]) for n in nodes] == [("n2", 6922, "22.05.8")]
    parts = doc(capsys, scontrol.main, ["--json", "show", "partition"])["partitions"]
    assert [(p["name"], p["priority_job_factor"]) for p in parts] == [("debug", 1), ("long", 10)]
    assert run(capsys, scontrol.main, ["--json", "show", "job", "99"]) == (
        "",
        "slurm_load_jobs error: Invalid job id specified\n",
        1,
    )


def test_yaml_is_still_refused(queue, capsys):
    assert run(capsys, sinfo.main, ["--yaml"]) == (
        "",
        "sinfo: error: --yaml is not supported yet\n",
        1,
    )
