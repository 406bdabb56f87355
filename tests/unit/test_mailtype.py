"""``--mail-type``: Slurm's words and order, the state-change rule, Slurm's subject lines."""

from __future__ import annotations

import pytest

from slurmlite import mailtype
from slurmlite.errors import CommandLineError
from slurmlite.mailtype import events_for, parse, subject
from slurmlite.sbatch_request import build_submit
from slurmlite.srun_request import build_salloc, build_srun


def test_words_in_any_case_come_back_in_slurms_order():
    assert parse("end,Begin") == "BEGIN,END"
    assert parse("ALL") == "INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT"
    assert parse("time_limit_80,ARRAY_TASKS,fail") == "ARRAY_TASKS,FAIL,TIME_LIMIT_80"
    assert parse("TIME_LIMIT,TIME_LIMIT_90") == "TIME_LIMIT_90,TIME_LIMIT"
    assert parse("BEGIN,NONE") == "NONE"  # NONE clears the list


def test_an_unknown_word_is_skipped_but_nothing_known_is_an_error():
    assert parse("BEGIN,bogus") == "BEGIN"  # Slurm's parse_mail_type skips it too
    with pytest.raises(ValueError, match="Invalid --mail-type specification"):
        parse("bogus")
    with pytest.raises(ValueError):
        parse("")


def test_two_options_add_up():
    assert mailtype.combine("BEGIN", "END") == "BEGIN,END"
    assert mailtype.combine(None, "FAIL") == "FAIL"
    assert mailtype.combine("FAIL", "NONE") == "FAIL"


@pytest.mark.parametrize(
    ("wanted", "old", "new", "events"),
    [
        ("BEGIN,END", "PENDING", "RUNNING", ["BEGIN"]),
        ("BEGIN,END", "RUNNING", "COMPLETED", ["END"]),
        ("END", "RUNNING", "FAILED", ["END"]),  # no FAIL asked: the end is mailed as END
        ("END,FAIL", "RUNNING", "FAILED", ["FAIL"]),
        ("END,FAIL", "RUNNING", "CANCELLED", ["END"]),  # Slurm: CANCELLED is an END
        ("FAIL,TIME_LIMIT", "RUNNING", "TIMEOUT", ["TIME_LIMIT", "FAIL"]),
        ("REQUEUE", "RUNNING", "PENDING", ["REQUEUE"]),
        ("END", "PENDING", "CANCELLED", ["END"]),  # cancelled before it ran
        ("BEGIN", "RUNNING", "RUNNING", []),
        (None, "PENDING", "RUNNING", []),
        ("NONE", "RUNNING", "COMPLETED", []),
        ("END", "COMPLETED", "COMPLETED", []),
    ],
)
def test_which_state_change_is_which_event(wanted, old, new, events):
    assert events_for(wanted, old, new) == events


def test_subjects_are_slurms():
    # submitted at 100, started at 130 (queued 30 s), ended at 192 (ran 62 s), exit 0
    times = dict(submit_time=100.0, start_time=130.0, end_time=192.0)
    assert subject("BEGIN", 12, "train", "RUNNING", **times) == (
        "Slurm Job_id=12 Name=train Began, Queued time 00:00:30"
    )
    assert subject("END", 12, "train", "COMPLETED", exit_code=0, **times) == (
        "Slurm Job_id=12 Name=train Ended, Run time 00:01:02, COMPLETED, ExitCode 0"
    )
    # exit 3 is wait status 3 << 8
    assert subject("FAIL", 12, "train", "FAILED", exit_code=3 << 8, **times) == (
        "Slurm Job_id=12 Name=train Failed, Run time 00:01:02, FAILED, ExitCode 3"
    )
    # killed by a signal (the OOM killer's status 253): no exit code
    assert subject("FAIL", 7, "big", "OUT_OF_MEMORY", exit_code=253, **times) == (
        "Slurm Job_id=7 Name=big Failed, Run time 00:01:02, OUT_OF_MEMORY"
    )
    # 80 % of a 10-minute limit: 480 s after the start
    assert subject("TIME_LIMIT_80", 12, "t", "RUNNING", start_time=0.0 + 1, now=481.0) == (
        "Slurm Job_id=12 Name=t Reached 80% of time limit Elapsed time 00:08:00"
    )
    assert subject("BEGIN", 13, "a", "RUNNING", array_job_id=10, array_task_id=3) == (
        "Slurm Array Task Job_id=10_3 (13) Name=a Began"
    )
    done = mailtype.array_summary("COMPLETED", [("COMPLETED", 0, 0)])
    assert subject(
        "END", 13, "a", "COMPLETED", array_job_id=10, array_summary=True, summary=done, **times
    ) == ("Slurm Array Summary Job_id=10_* (10) Name=a Ended, COMPLETED, ExitCode [0-0]")
    # an array's other events: the summary head, no times (Slurm's format has none)
    assert subject("BEGIN", 11, "a", "RUNNING", array_job_id=10, array_summary=True, **times) == (
        "Slurm Array Summary Job_id=10_* (10) Name=a Began"
    )
    assert subject("INVALID_DEPEND", 12, "post", "PENDING", **times) == (
        "Slurm Job_id=12 Name=post Invalid dependency"
    )


def _sum(*tasks: tuple[str, int | None, int]) -> mailtype.ArraySummary:
    return mailtype.array_summary("COMPLETED", tasks)


@pytest.mark.parametrize(
    ("tasks", "term", "failed"),
    [
        # statuses are raw wait statuses: exit 3 is 3 << 8 = 768
        ((("COMPLETED", 0, 0), ("COMPLETED", 0, 0)), ", COMPLETED, ExitCode [0-0]", False),
        ((("FAILED", 3 << 8, 0), ("COMPLETED", 0, 0)), ", Mixed, ExitCode [0-3]", True),
        ((("FAILED", 1 << 8, 0), ("FAILED", 3 << 8, 0)), ", COMPLETED, ExitCode [1-3]", True),
        # cancelled with status 0 counts as 9 (SIGKILL): lowest 9 is no exit, highest 768 is
        ((("CANCELLED", None, 0), ("FAILED", 3 << 8, 0)), ", Mixed, MaxExitCode [3]", True),
        # only signals: the highest signal
        ((("CANCELLED", None, 0), ("FAILED", 15, 0)), ", Mixed, MaxSignal [15]", False),
        # a task that was requeued says so
        ((("COMPLETED", 0, 1), ("COMPLETED", 0, 0)), ", COMPLETED, ExitCode [0-0], with requeued "
         "tasks", False),
    ],
)  # fmt: skip
def test_an_array_summary_is_worded_as_slurm_does(tasks, term, failed):
    assert (_sum(*tasks).term(), _sum(*tasks).failed) == (term, failed)


def test_invalid_depend_and_the_summary_decide_events():
    # a dependency found never satisfiable, with the cancel that may follow it: told first
    every = parse("ALL")  # the stored, canonical form
    assert events_for(every, "PENDING", "CANCELLED", dep_failed=True) == ["INVALID_DEPEND", "END"]
    assert events_for(every, "PENDING", "PENDING", dep_failed=True) == ["INVALID_DEPEND"]
    assert events_for("END", "PENDING", "PENDING", dep_failed=True) == []  # not asked for
    # an array's last task completed, but another failed: the summary is a FAIL (if asked for)
    mixed = _sum(("FAILED", 3 << 8, 0), ("COMPLETED", 0, 0))
    assert events_for("END,FAIL", "RUNNING", "COMPLETED", summary=mixed) == ["FAIL"]
    assert events_for("END", "RUNNING", "COMPLETED", summary=mixed) == ["END"]
    assert events_for("FAIL", "RUNNING", "COMPLETED", summary=mixed) == ["FAIL"]


ENV = {"PATH": "/usr/bin"}


def _sbatch(*argv: str):  # type: ignore[no-untyped-def]
    return build_submit(list(argv), ENV, "/tmp", lambda: b"", "host", "alice")


def test_sbatch_carries_mail_type_and_user():
    cmd = _sbatch("--mail-type=end,begin", "--mail-user=a@example.org", "--wrap", "x")
    assert (cmd.fields["mail_type"], cmd.fields["mail_user"]) == ("BEGIN,END", "a@example.org")
    both = _sbatch("--mail-type=BEGIN", "--mail-type=FAIL", "--wrap", "x")
    assert both.fields["mail_type"] == "BEGIN,FAIL"
    assert "mail_type" not in _sbatch("--wrap", "x").fields


def test_sbatch_refuses_a_mail_type_with_slurms_words_and_exit_code():
    with pytest.raises(CommandLineError) as caught:
        _sbatch("--mail-type=sometimes", "--wrap", "x")
    assert caught.value.lines == ["sbatch: error: Invalid --mail-type specification"]
    assert caught.value.exit_code == 255


def test_salloc_says_its_own_name():
    with pytest.raises(CommandLineError) as caught:
        build_salloc(["--mail-type=x", "true"], ENV, "/tmp", "host")
    assert caught.value.lines == ["salloc: error: Invalid --mail-type specification"]


def test_salloc_and_srun_carry_them_into_their_allocation():
    got = build_salloc(["--mail-type=begin", "--mail-user=bob", "true"], ENV, "/tmp", "host")
    assert (got.submit["mail_type"], got.submit["mail_user"]) == ("BEGIN", "bob")
    ran = build_srun(["--mail-type=END,FAIL", "hostname"], ENV, "/tmp", "host")
    assert ran.submit is not None and ran.submit["mail_type"] == "END,FAIL"
