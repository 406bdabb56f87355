"""squeue end to end against a fake controller: golden outputs of Slurm 22.05.

The fake client returns the live queue of the golden capture (cluster
``anchor``, user alice uid 1001, jobs 50-59 in submission order) with the
capture's timestamps; the clock is frozen at ``squeue -l``'s date line
(02:29:19 UTC) and TZ is UTC, so the outputs compare byte for byte.
"""

from __future__ import annotations

import calendar
import dataclasses
import os
import shlex
import time

import pytest

from cli import squeue
from cli.common import version_line
from slurmlite.errors import (
    ESLURM_INVALID_JOB_ID,
    SLURM_COMMUNICATIONS_CONNECTION_ERROR,
    SlurmError,
)
from slurmlite.protocol import JobInfo, NodeAlloc
from tests.cli.harness import FakeClient, install
from tests.golden_path import GOLDEN

VERSION_OUT = version_line() + "\n"  # slurm-wlm 22.05.8 (slurmlite X)


def at(hms: str) -> float:
    """2026-11-30 HH:MM:SS UTC as a timestamp."""
    h, m, s = map(int, hms.split(":"))
    return float(calendar.timegm((2026, 11, 30, h, m, s)))


def job(
    job_id: int, name: str, state: str = "PENDING", reason: str = "Priority", **kw: object
) -> JobInfo:
    """A job of alice's golden queue; extra attributes (dependency...) ride along."""
    extra = {k: kw.pop(k) for k in ("array_task_str", "dependency") if k in kw}
    submit = at(str(kw.pop("submit", "02:29:10")))
    fields: dict[str, object] = dict(
        job_id=job_id, name=name, user="alice", uid=1001, gid=1001, group="alice",
        account="acct_a", qos="normal", partition="debug", state=state, flags=[],
        reason=reason, priority=4725, submit_time=submit, eligible_time=submit,
        work_dir="/home/alice/work", submit_dir="/home/alice/work", num_nodes=1,
        num_cpus=1, num_tasks=1, cpus_per_task=1, time_limit=None, mem_per_cpu=1000,
    )  # fmt: skip
    fields.update(kw)
    info = JobInfo(**fields)  # type: ignore[arg-type]
    for key, value in extra.items():
        setattr(info, key, value)
    return info


def golden_queue() -> list[JobInfo]:
    """Jobs 50..59 in submission order (the controller's order)."""
    return [
        job(50, "big-running", "RUNNING", "None", priority=5350, submit="02:29:09",
            start_time=at("02:29:10"), nodes=["n1", "n2"], num_nodes=2, num_cpus=4,
            num_tasks=2, exclusive=True, batch_host="n1",
            alloc=[NodeAlloc("n1", 2, 2000, [0, 1]), NodeAlloc("n2", 2, 2000, [0, 1])]),
        job(51, "wants-2nodes", priority=5350, num_nodes=2, nodes_max=2, num_cpus=2, num_tasks=2),
        job(52, "small-one"),
        job(53, "after-big", reason="Dependency", dependency="afterok:50(unfulfilled)"),
        job(54, "held", reason="JobHeldUser", priority=0),
        job(55, "later", reason="BeginTime", start_time=at("03:29:10")),
        job(56, "gpu-job", reason="Resources", priority=5725, tres_per_node="gres:gpu:2", gpus=2),
        job(57, "arr", array_job_id=57, array_task_str="0-9%2"),
        job(58, "fails"),
        job(59, "never", reason="Dependency", submit="02:29:11", dependency="afterok:58(unfulfilled)"),
    ]  # fmt: skip


def queue_client(jobs: list[JobInfo]) -> FakeClient:
    """The harness's fake, answering with ``fake.jobs`` (a test may change them)."""
    fake = FakeClient()
    fake.jobs = jobs  # type: ignore[attr-defined]

    def job_rows(fields: list[str], **kw: object) -> tuple[list[str], list[list]]:
        """The controller's projection: only ``fields`` (each must be a JobInfo field), plus
        the attributes these test jobs carry beyond JobInfo (arrays, dependencies: fields
        the wire will grow, and their columns will then be in squeue's NEEDS table)."""
        known = {f.name for f in dataclasses.fields(JobInfo)}
        assert set(fields) <= known, set(fields) - known
        extra = sorted({k for j in fake.jobs for k in vars(j)} - known)  # type: ignore[attr-defined]
        names = [*fields, *extra]
        return names, [[getattr(j, n, None) for n in names] for j in fake.jobs]  # type: ignore[attr-defined]

    fake.answers.update(get_jobs=lambda **kw: fake.jobs, get_job_rows=job_rows)  # type: ignore[attr-defined]
    return fake


@pytest.fixture
def utc():
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


@pytest.fixture
def fake(monkeypatch, utc):
    """Install a fake controller with the golden queue; clock at 02:29:19."""
    client = queue_client(golden_queue())
    install(monkeypatch, client)
    monkeypatch.setattr(squeue, "clock", lambda: at("02:29:19"))
    for var in [v for v in os.environ if v.startswith("SQUEUE_") or v == "SLURM_TIME_FORMAT"]:
        monkeypatch.delenv(var)
    return client


def golden(name: str) -> tuple[list[str], str, str, int]:
    """(argv, stdout, stderr, exit) of one golden file."""
    lines = (GOLDEN / name).read_text().split("\n")
    argv = shlex.split(lines[0][2:])[1:]
    body = lines[1:]
    exit_at = max(i for i, line in enumerate(body) if line.startswith("[exit "))
    status = int(body[exit_at][6:-1])
    body = body[:exit_at]
    if "[stderr]" in body:
        cut = body.index("[stderr]")
        out, err = body[:cut], body[cut + 1 :]
    else:
        out, err = body, []
    join = lambda part: "".join(line + "\n" for line in part)  # noqa: E731
    return argv, join(out), join(err), status


def run(capsys, argv: list[str]) -> tuple[str, str, int]:
    try:
        status = squeue.main(argv)
    except SystemExit as exc:
        status = int(exc.code or 0)
    captured = capsys.readouterr()
    return captured.out, captured.err, status


@pytest.mark.parametrize(
    "name",
    [
        "50_squeue_default.txt",  # sort quirk: 55 59 58 57 53 52 among equal priorities
        "50_squeue_long.txt",  # date line first, STATE and TIME_LIMI(T) columns
        "50_squeue_h_o_default_like.txt",
        "50_squeue_h_o_i_t.txt",
        "50_squeue_user_pending.txt",
        "50_squeue_array_expanded.txt",  # -r: 57_0 .. 57_9 in place of 57_[0-9%2]
        "50_squeue_start.txt",  # PD only, sorted by start: 55 first, others ascending
        "50_squeue_O_fields.txt",  # 20-wide columns, DEPENDENCY cut to 20 characters
        "50_squeue_o_many.txt",
        "50_squeue_j_T.txt",
        "50_squeue_j_array_task.txt",
        "50_squeue_name.txt",
        "50_squeue_nonexistent.txt",
        "50_squeue_nonexistent_h.txt",
        "60_squeue_helpformat.txt",
    ],
)
def test_matches_golden(fake, capsys, name):
    argv, want_out, want_err, want_status = golden(name)
    out, err, status = run(capsys, argv)
    assert (out, err, status) == (want_out, want_err, want_status)


def test_me_shows_the_callers_jobs(fake, capsys, monkeypatch):
    argv, want_out, _, _ = golden("50_squeue_me.txt")
    monkeypatch.setattr(os, "geteuid", lambda: 1001)
    assert run(capsys, argv) == (want_out, "", 0)
    monkeypatch.setattr(os, "geteuid", lambda: 1002)  # someone else: header only
    out, _, _ = run(capsys, argv)
    assert out == want_out.split("\n")[0] + "\n"


def test_finished_jobs_are_hidden_unless_asked(fake, capsys):
    # 50 was cancelled while running, 51 while pending and task 9 of 57 too
    fake.jobs[0] = job(
        50, "big-running", "CANCELLED", "None", start_time=at("02:29:10"), nodes=["n1", "n2"]
    )
    fake.jobs[1] = job(51, "wants-2nodes", "CANCELLED", "None")
    fake.jobs[7].array_task_str = "0-8%2"
    for name in ("52_squeue_after_cancel_running.txt", "52_squeue_after_cancel_pending.txt"):
        argv, want_out, _, want_status = golden(name)
        assert run(capsys, argv) == (want_out, "", want_status)
    out, _, _ = run(capsys, ["-h", "-t", "CA", "-o", "%i %t %R"])
    # a job cancelled while pending never had nodes: the NODELIST column is empty
    assert out == "50 CA n[1-2]\n51 CA \n"


def test_empty_queue_prints_the_header(fake, capsys):
    fake.jobs = []
    argv, want_out, _, _ = golden("60_squeue_after_all_done.txt")
    assert run(capsys, argv) == (want_out, "", 0)


def test_all_states_orders_by_partition_then_state(fake, capsys):
    done = dict(start_time=at("02:20:00"), end_time=at("02:20:05"), nodes=["n1"])
    fake.jobs = [
        job(29, "opts-job", "COMPLETED", "None", partition="long", **done),
        job(
            18,
            "tmo",
            "TIMEOUT",
            "TimeLimit",
            start_time=at("02:27:34"),
            end_time=at("02:28:43"),
            nodes=["n1"],
        ),
        job(42, "wrap", "FAILED", "JobLaunchFailure", **done),
        job(19, "wrap", "COMPLETED", "None", **done),
        job(17, "roots-job", "CANCELLED", "None", user="root", uid=0),
        job(60, "closing", "COMPLETED", "None", flags=["COMPLETING"], **done),
    ] + fake.jobs[:1]
    out, _, status = run(capsys, ["-t", "all"])
    # partition debug first; states by compact name: CA < CD < CG < F < R < TO
    assert status == 0
    assert out.splitlines()[1:] == [
        "                17     debug roots-jo     root CA       0:00      1 ",
        "                19     debug     wrap    alice CD       0:05      1 n1",
        "                60     debug  closing    alice CG       0:05      1 n1",
        "                42     debug     wrap    alice  F       0:05      1 (JobLaunchFailure)",
        "                50     debug big-runn    alice  R       0:09      2 n[1-2]",
        "                18     debug      tmo    alice TO       1:09      1 (TimeLimit)",
        "                29      long opts-job    alice CD       0:05      1 n1",
    ]


def test_sort_option_and_environment(fake, capsys, monkeypatch):
    out, _, _ = run(capsys, ["-h", "-S", "i", "-o", "%i"])
    assert out.split() == ["50", "51", "52", "53", "54", "55", "56", "57_[0-9%2]", "58", "59"]
    monkeypatch.setenv("SQUEUE_SORT", "-j")  # names, descending
    out, _, _ = run(capsys, ["-h", "-o", "%j", "-t", "R"])
    assert out == "big-running\n"
    out, _, _ = run(capsys, ["-h", "-o", "%j", "-p", "debug", "-u", "alice"])
    assert out.split()[:3] == ["wants-2nodes", "small-one", "never"]


def test_bad_sort_letter_fails_after_the_header(fake, capsys):
    out, err, status = run(capsys, ["-S", "Y"])
    assert out.startswith("             JOBID PARTITION")
    assert (err, status) == ("squeue: error: Invalid sort specification: Y\n", 1)


def test_format_environment_variables(fake, capsys, monkeypatch):
    monkeypatch.setenv("SQUEUE_FORMAT2", "jobid:4,name:6")
    assert run(capsys, ["-h", "-j", "50"]) == ("50  big-ru\n", "", 0)
    monkeypatch.setenv("SQUEUE_FORMAT", "%i|%t")  # beats SQUEUE_FORMAT2
    assert run(capsys, ["-h", "-j", "50"]) == ("50|R\n", "", 0)
    assert run(capsys, ["-h", "-j", "50", "-o", "%T"]) == ("RUNNING\n", "", 0)  # -o beats both
    monkeypatch.setenv("SQUEUE_STATES", "R")
    assert run(capsys, ["-h"]) == ("50|R\n", "", 0)


def test_invalid_states_and_ids(fake, capsys):
    out, err, status = run(capsys, ["-t", "running,bogus"])
    assert status == 1 and out == ""
    assert err.splitlines()[0] == "squeue: error: Invalid job state specified: bogus"
    assert err.splitlines()[1].startswith(
        "squeue: error: Valid job states include: PENDING,RUNNING,"
    )
    assert run(capsys, ["-j", "abc"]) == ("", "squeue: error: Invalid job id: abc\n", 1)


def test_unknown_format_letter_is_reported_and_printed(fake, capsys):
    out, err, status = run(capsys, ["-h", "-j", "50", "-o", "%i %=5 %t"])
    assert (out, err, status) == (
        "50 %=5 R\n",
        "squeue: error: Invalid job format specification: =\n",
        0,
    )


def test_several_ids_and_unknown_ones(fake, capsys):
    # with two ids an unknown one is simply absent (no error)
    assert run(capsys, ["-h", "-j", "52,999999", "-o", "%i"]) == ("52\n", "", 0)
    # -j without '=' takes the next word as its list
    assert run(capsys, ["-h", "-o", "%i", "-j", "53"]) == ("53\n", "", 0)


def test_controller_unreachable(fake, capsys):
    fake.error = SlurmError(SLURM_COMMUNICATIONS_CONNECTION_ERROR)
    out, err, status = run(capsys, ["-h"])
    assert (out, status) == ("", 1)
    assert err.startswith("slurm_load_jobs error: ")


def test_controller_error_on_single_job(fake, capsys):
    fake.error = SlurmError(ESLURM_INVALID_JOB_ID)
    assert run(capsys, ["-h", "-j", "7"]) == (
        "",
        "slurm_load_jobs error: Invalid job id specified\n",
        1,
    )


def test_version_and_unsupported_options(fake, capsys):
    assert run(capsys, ["-V"]) == (VERSION_OUT, "", 0)
    assert run(capsys, ["--yaml"]) == ("", "squeue: error: --yaml is not supported yet\n", 1)


def test_the_state_only_fast_path_knows_every_filter_of_keep():
    """``select_rows`` skips ``keep`` when no filter but the state is set; a filter added
    to ``keep`` and not to ``KEEP_FILTERS`` would silently be ignored by that path."""
    import inspect
    import re

    used = set(re.findall(r"\bq\.(\w+)", inspect.getsource(squeue.keep)))
    state_and_helpers = {"all_states", "states", "user_names"}
    assert used - state_and_helpers == set(squeue.KEEP_FILTERS)
