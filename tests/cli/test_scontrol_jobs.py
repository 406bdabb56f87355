"""scontrol's job verbs against a fake controller: what is sent, what is printed.

The texts are Slurm 22.05's (golden files 51_*): a refusal prints ``<error> for
job <id>``; hold and release add ``slurm_suspend error: <error>``; exit 1.
"""

from __future__ import annotations

import os
import signal

import pytest

from cli import scontrol
from cli.client import Record
from slurmlite import errors
from slurmlite.errors import SlurmError
from tests.cli.harness import FakeClient, arguments, install
from tests.golden_path import GOLDEN

VERBS = ("hold_jobs", "release_jobs", "requeue_jobs", "update_jobs")


def refuse(fake: FakeClient, errnos: dict[int, int]) -> None:
    """Every verb answers each of its ids: refused with ``errnos[id]``, else done."""

    def answer(job_ids: list[int], *_: object) -> list[Record]:
        codes = [(i, errnos.get(i, 0)) for i in job_ids]
        return [
            Record({"job_id": i, "errno": code, "error": errors.message(code) if code else None})
            for i, code in codes
        ]

    fake.answers.update(dict.fromkeys(VERBS, answer))


def named(names: list[str] | None = None, **_: object) -> list[Record]:
    """``get_jobs(names=[...])``: job 70 + k is called the k-th name."""
    return [Record({"job_id": 70 + k, "name": n}) for k, n in enumerate(names or [])]


def verbs(fake: FakeClient) -> list[tuple[str, dict[str, object]]]:
    """The verb requests sent, in order, with their arguments by name (name look-ups left out)."""
    return [(c.method, arguments(c)) for c in fake.calls if c.method in VERBS]


@pytest.fixture
def fake(monkeypatch):
    client = FakeClient(get_jobs=named)
    refuse(client, {})
    install(monkeypatch, client)
    return client


def run(capsys, argv: list[str]) -> tuple[str, str, int]:
    status = scontrol.main(argv)
    captured = capsys.readouterr()
    return captured.out, captured.err, status


@pytest.mark.parametrize(
    ("argv", "call"),
    [
        (["hold", "52"], ("hold_jobs", {"job_ids": [52], "user_hold": False})),
        (["uhold", "52,53"], ("hold_jobs", {"job_ids": [52, 53], "user_hold": True})),
        (["holdu", "JobId=52"], ("hold_jobs", {"job_ids": [52], "user_hold": True})),
        (["rel", "job=54"], ("release_jobs", {"job_ids": [54]})),
        (["requeue", "50"], ("requeue_jobs", {"job_ids": [50], "hold": False})),
        (["requeuehold", "50"], ("requeue_jobs", {"job_ids": [50], "hold": True})),
        # the fake's job called "later"
        (["hold", "Name=later"], ("hold_jobs", {"job_ids": [70], "user_hold": False})),
    ],
)
def test_verbs_send_their_ids_and_print_nothing_on_success(fake, capsys, argv, call):
    assert run(capsys, argv) == ("", "", 0)
    assert verbs(fake) == [call]
    looked_up = [{"filters": {"names": ["later"]}}] if "Name=later" in argv else []
    assert fake.sent("get_jobs") == looked_up


def test_a_name_no_job_has_is_nothing_to_do(fake, capsys):
    fake.answers["get_jobs"] = []
    assert run(capsys, ["release", "JobName=nosuch"]) == ("", "", 0)
    assert verbs(fake) == []
    assert fake.sent("get_jobs") == [{"filters": {"names": ["nosuch"]}}]


def test_each_argument_is_one_request(fake, capsys):
    assert run(capsys, ["release", "1", "2,3"]) == ("", "", 0)
    assert [args["job_ids"] for _, args in verbs(fake)] == [[1], [2, 3]]


def test_release_of_an_admin_hold_as_the_owner_matches_golden(fake, capsys):
    # golden 51_scontrol_release_admin_hold_as_user (its exit line is squeue's; ours is 1)
    text = (GOLDEN / "51_scontrol_release_admin_hold_as_user.txt").read_text()
    want = text.split("[stderr]\n")[1].split("[exit")[0]
    refuse(fake, {55: errors.ESLURM_ACCESS_DENIED})
    assert run(capsys, ["release", "55"]) == ("", want, 1)


def test_update_of_another_users_job_matches_golden(fake, capsys):
    lines = (GOLDEN / "51_scontrol_update_other_users_job.txt").read_text().split("\n")
    assert lines[0] == "$ scontrol update jobid=60 TimeLimit=5"
    refuse(fake, {60: errors.ESLURM_USER_ID_MISSING})
    assert run(capsys, ["update", "jobid=60", "TimeLimit=5"]) == ("", lines[2] + "\n", 1)
    assert lines[1:4:2] == ["[stderr]", "[exit 1]"]
    assert verbs(fake) == [("update_jobs", {"job_ids": [60], "changes": {"time_limit": 5}})]


def test_refusals_name_each_job_and_quiet_keeps_only_the_status(fake, capsys):
    refuse(fake, {2: errors.ESLURM_USER_ID_MISSING, 3: errors.ESLURM_JOB_FINISHED})
    out, err, status = run(capsys, ["hold", "1,2,3"])
    assert (out, status) == ("", 1)
    assert err == (
        "Invalid user id for job 2\n"
        "Job has already finished for job 3\n"
        "slurm_suspend error: Job has already finished\n"
    )
    assert run(capsys, ["-Q", "hold", "2"]) == ("", "", 1)
    refuse(fake, {9: errors.ESLURM_JOB_PENDING})
    assert run(capsys, ["requeue", "9"]) == ("", "Job is pending execution for job 9\n", 1)


def test_bad_ids_and_missing_arguments(fake, capsys):
    assert run(capsys, ["hold", "abc"]) == (
        "",
        "Invalid job id specified for job abc\nslurm_suspend error: Invalid job id specified\n",
        1,
    )
    assert run(capsys, ["requeue", "5_"]) == ("", "Invalid job id specified for job 5_\n", 1)
    assert run(capsys, ["release"]) == ("", "too few arguments for keyword:release\n", 1)
    assert run(capsys, ["requeue", "Incomplete", "5"]) == (
        "",
        "scontrol: error: requeue Incomplete is not supported yet\n",
        1,
    )
    assert fake.calls == []


def test_unreachable_controller_is_reported_per_job(fake, capsys):
    fake.error = SlurmError(errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR)
    msg = errors.message(errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR)
    assert run(capsys, ["release", "4,5"]) == (
        "",
        f"{msg} for job 4\n{msg} for job 5\nslurm_suspend error: {msg}\n",
        1,
    )
    assert verbs(fake) == [("release_jobs", {"job_ids": [4, 5]})]  # one request, refused whole


@pytest.mark.parametrize(
    ("words", "changes"),
    [
        (["TimeLimit=1:00:00"], {"time_limit": 60}),
        (["TimeLimit=UNLIMITED"], {"time_limit": "UNLIMITED"}),
        (["timelim=90"], {"time_limit": 90}),
        (["Name=x", "Comment=why not"], {"name": "x", "comment": "why not"}),
        (
            ["JobName=y", "Partition=long", "Requeue=0"],
            {"name": "y", "partition": "long", "requeue": False},
        ),
        (["TimeLimit", "30"], {"time_limit": 30}),  # a tag without "=" takes the next word
        (["Priority=5000", "Nice=-5"], {"priority": 5000, "nice": -5}),
        (["prio=0"], {"priority": 0}),  # Priority=0 holds the job
        (["Nice"], {"nice": 100}),  # a bare Nice is 100, the next word is not its value
        (["Nice=12abc"], {"nice": 12}),  # read as strtoll reads it
    ],
)
def test_update_reads_slurms_keys(fake, capsys, words, changes):
    assert run(capsys, ["update", "JobId=7", *words]) == ("", "", 0)
    assert verbs(fake) == [("update_jobs", {"job_ids": [7], "changes": changes})]


@pytest.mark.parametrize(
    ("words", "err"),
    [
        (["JobId=7", "TimeLimit=abc"], "scontrol: error: Invalid TimeLimit value\n"),
        (["JobId=7", "TimeLimit=+10"], "scontrol: error: TimeLimit=+N is not supported yet\n"),
        (["JobId=7", "Priority=-5"], "scontrol: error: Invalid Priority value: -5\n"),
        (
            ["JobId=7", "Priority=4294967294"],
            "scontrol: error: Invalid Priority value: 4294967294\n",
        ),
        (
            ["JobId=7", "Nice=2147483646"],
            "scontrol: error: Nice value out of range (+/- 2147483645). Value ignored\n",
        ),
        (["JobId=7", "Requeue=maybe"], "scontrol: error: Invalid Requeue value: maybe\n"),
        (
            ["JobId=7", "Weight=5"],
            "Update of this parameter is not supported: Weight=5\nRequest aborted\n",
        ),
        (["JobId=7"], "No changes specified\n"),
        (["JobId=7", "TimeLimit"], "Invalid input: TimeLimit\nRequest aborted\n"),
        (["JobId=x7", "TimeLimit=5"], "Invalid job id specified for job x7\n"),
    ],
)
def test_update_refuses_what_it_cannot_send(fake, capsys, words, err):
    assert run(capsys, ["update", *words]) == ("", err, 1)
    assert fake.calls == []


@pytest.mark.parametrize(
    ("env", "argv", "rides_out"),
    [
        ({"SLURM_JOB_ID": "50"}, ["requeue", "50"], True),
        ({"SLURM_JOB_ID": "50"}, ["requeue", "JobId=49,50"], True),
        (
            {"SLURM_JOB_ID": "51", "SLURM_ARRAY_JOB_ID": "50", "SLURM_ARRAY_TASK_ID": "1"},
            ["requeuehold", "50_1"],
            True,
        ),
        ({"SLURM_JOB_ID": "50"}, ["requeue", "49"], False),  # another job's
        ({}, ["requeue", "50"], False),  # not inside a job
    ],
)
def test_a_job_requeueing_itself_still_hears_the_answer(
    fake, capsys, monkeypatch, env, argv, rides_out
):
    """The requeue's SIGTERM reaches the job, this scontrol included, possibly before
    the answer: scontrol ignores it then and reports the outcome (exit 0)."""
    for name in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    answer = fake.answers["requeue_jobs"]
    terms: list[int] = []

    def killed_while_asking(*args: object) -> list[Record]:
        os.kill(os.getpid(), signal.SIGTERM)
        return answer(*args)

    fake.answers["requeue_jobs"] = killed_while_asking
    before = signal.signal(signal.SIGTERM, lambda signum, _: terms.append(signum))
    try:
        assert run(capsys, argv) == ("", "", 0)
        assert terms == ([] if rides_out else [signal.SIGTERM])
    finally:
        signal.signal(signal.SIGTERM, before)
