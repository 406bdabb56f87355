"""srun's step I/O and exit rules, against stand-in agents on loopback (tests/cli/fake_agent.py).

What a user sees: labelled lines (golden ``17_srun_label_hostname``), the
exit status of the worst task, ``srun: error: n1: task 0: Exited with exit
code 1`` (golden ``60_stepfail_job_output``), stdin reaching ``sh -s``, Ctrl-C
and ``-K`` ending the step.
"""

from __future__ import annotations

import io
import os
import signal
import threading

import pytest

from cli import step_runner
from cli.srun_control import InterruptPolicy
from cli.srun_io import Output, StdinPump, StepRun
from cli.step_runner import run_step
from slurmlite.srun_request import build_srun
from slurmlite.states import OOM_STATUS
from slurmlite.stepreport import (
    LineLabeler,
    exit_code,
    failed_task_lines,
    label_width,
    status_lines,
    worst_status,
)
from tests.cli.fake_agent import FakeAgent, cat, grant, says, until_signal


@pytest.fixture
def agents():
    made: list[FakeAgent] = []

    def make(node: str, script, error: str | None = None) -> FakeAgent:
        made.append(FakeAgent(node, script, error))
        return made[-1]

    yield make
    for agent in made:
        agent.close()


def buffers() -> tuple[io.BytesIO, io.BytesIO]:
    return io.BytesIO(), io.BytesIO()


# ----------------------------------------------------------------- labels


def test_label_width_is_that_of_the_largest_rank():
    assert [label_width(n) for n in (1, 4, 10, 11, 101)] == [
        1,
        1,
        1,
        2,
        3,
    ]  # ranks 0, 3, 9, 10, 100


def test_a_partial_line_waits_for_its_newline_and_every_line_gets_the_rank():
    labeler = LineLabeler(3, 2)  # 12 tasks: ranks up to 11, width 2
    assert labeler.feed(b"hel") == b""
    assert labeler.feed(b"lo\nwor") == b" 3: hello\n"
    assert labeler.feed(b"ld\na\nb") == b" 3: world\n 3: a\n"
    assert labeler.flush() == b" 3: b\n"  # the task ended mid-line: the next label starts anew
    assert labeler.flush() == b""


def test_a_line_without_end_is_let_out_in_pieces():
    labeler = LineLabeler(0, 1, max_line=8)
    assert labeler.feed(b"0123") == b""
    assert labeler.feed(b"4567") == b"0: 01234567"  # 8 bytes held: out they go
    plain = LineLabeler(0, 1, max_line=8)
    plain.prefix = b""  # unlabelled, line-buffered output
    assert plain.feed(b"ab\ncd") + plain.flush() == b"ab\ncd"


def test_two_tasks_writing_half_lines_never_mix_on_srun_stdout():
    out, err = buffers()
    output = Output(2, label=True, stdout=out, stderr=err)
    output.write(0, "out", b"zero ")
    output.write(1, "out", b"one\n")
    output.write(0, "out", b"done\n")
    output.write(1, "err", b"oops\n")
    assert out.getvalue() == b"1: one\n0: zero done\n"
    assert err.getvalue() == b"1: oops\n"


def test_output_of_one_task_only_with_o_N_and_raw_bytes_when_unbuffered():
    out, err = buffers()
    output = Output(3, out_task=1, unbuffered=True, stdout=out, stderr=err)
    for task in range(3):
        output.write(task, "out", f"t{task}".encode())
        output.write(task, "err", b"e")
    assert out.getvalue() == b"t1"  # no newline needed when unbuffered
    assert err.getvalue() == b"eee"  # -e not filtered here


# ------------------------------------------------------------ exit rules


@pytest.mark.parametrize(
    "statuses,code",
    [
        ([], 0),
        ([0, 0], 0),
        ([0, 3 << 8, 1 << 8], 3),  # highest exit code
        ([0, 3 << 8, 9], 137),  # a SIGKILL beats exit 3: 128 + 9
        ([15, 9, 200 << 8], 143),  # among signals the highest number: 128 + 15
        ([OOM_STATUS, 0], 1),  # the OOM killer counts as exit code 1
    ],
)
def test_srun_exit_status(statuses, code):
    assert exit_code(statuses) == code


def test_the_deciding_raw_status_is_kept_for_the_allocation():
    assert worst_status([0, 3 << 8, 9]) == 9
    assert worst_status([256, 768]) == 768
    assert worst_status([]) == 0


def test_failed_task_lines_as_slurm_prints_them():
    assert failed_task_lines("srun", "n1", {0: 1 << 8}) == [
        "srun: error: n1: task 0: Exited with exit code 1"  # golden 60_stepfail_job_output
    ]
    lines = failed_task_lines("srun", "n2", {2: 9, 3: 9, 4: 0, 5: OOM_STATUS, 6: 2 << 8})
    assert lines == [
        "srun: error: n2: tasks 2-3: Killed",
        "srun: error: n2: task 5: Out Of Memory",
        "srun: error: n2: task 6: Exited with exit code 2",
    ]
    assert failed_task_lines("srun", "n1", {0: 0}) == []


def test_status_lines_group_tasks_by_state():
    assert status_lines("srun", "12.0", 4, {1: 0, 3: 256}) == [
        "srun: StepId=12.0 tasks 0,2: running",
        "srun: StepId=12.0 task 1: exited",
        "srun: StepId=12.0 task 3: exited abnormally",
    ]


def test_ctrl_c_policy_worked_example():
    policy = InterruptPolicy()
    # 0.0 first; 1.5 is more than a second later; 1.9 within a second of 1.5; then exit
    assert [policy.on_interrupt(t) for t in (0.0, 1.5, 1.9, 5.0)] == [
        "status",
        "status",
        "abort",
        "exit",
    ]
    assert InterruptPolicy(quit_on_interrupt=True).on_interrupt(0.0) == "abort"
    assert InterruptPolicy(disable_status=True).on_interrupt(0.0) == "forward"


# ------------------------------------------------------- against agents


def test_two_nodes_four_tasks_labelled_and_the_failures_reported(agents):
    n1 = agents("n1", says("{node}\n"))
    n2 = agents("n2", says("{node}\n", status=1 << 8))
    out, err = buffers()
    step = StepRun(grant([n1, n2], [[0, 1], [2, 3]]), Output(4, label=True, stdout=out, stderr=err))
    step.start()
    assert step.wait(10)
    assert sorted(out.getvalue().decode().splitlines()) == ["0: n1", "1: n1", "2: n2", "3: n2"]
    assert err.getvalue().decode() == "srun: error: n2: tasks 2-3: Exited with exit code 1\n"
    assert step.exits == {0: 0, 1: 0, 2: 256, 3: 256}
    assert exit_code(step.exits.values()) == 1
    assert n1.launches[0]["credential"] == "cred-n1"  # each node got its own order, unchanged


def test_a_node_that_cannot_launch_is_reported(agents):
    good = agents("n1", says("ok\n"))
    bad = agents("n2", says("never\n"), error="User not found on host")
    out, err = buffers()
    step = StepRun(
        grant([good, bad], [[0], [1]], job_id=9, step_id=2), Output(2, stdout=out, stderr=err)
    )
    step.start()
    assert step.wait(10)
    assert step.launch_failed
    assert err.getvalue().decode() == (
        "srun: error: Task launch for StepId=9.2 failed on node n2: User not found on host\n"
    )


def test_an_unreachable_agent_is_a_launch_failure(agents):
    gone = agents("n1", says("x"))
    gone.close()
    out, err = buffers()
    step = StepRun(grant([gone], [[0]]), Output(1, stdout=out, stderr=err))
    step.start()
    assert step.wait(10) and step.launch_failed
    assert "failed on node n1" in err.getvalue().decode()


def test_stdin_reaches_the_tasks_then_eof(agents):
    # snakemake: `srun ... sh -s` with the script piped into srun
    n1 = agents("n1", cat)
    out, err = buffers()
    step = StepRun(grant([n1], [[0]]), Output(1, stdout=out, stderr=err))
    read, write = os.pipe()
    os.write(write, b"echo one\necho two\n")
    os.close(write)
    step.start()
    StdinPump(step, None, read).start()
    assert step.wait(10)
    os.close(read)
    assert out.getvalue() == b"echo one\necho two\n"
    assert n1.inputs[-1]["eof"] is True
    assert {i["credential"] for i in n1.inputs} == {"cred-n1"}


def test_stdin_for_one_task_goes_only_to_its_node(agents):
    n1 = agents("n1", says("a\n"))
    n2 = agents("n2", cat)
    out, err = buffers()
    step = StepRun(grant([n1, n2], [[0, 1], [2, 3]]), Output(4, stdout=out, stderr=err))
    read, write = os.pipe()
    os.write(write, b"data\n")
    os.close(write)
    step.start()
    StdinPump(step, 2, read).start()  # -i 2: task 2 lives on n2
    assert step.wait(10)
    os.close(read)
    assert n1.inputs == []
    # base64 of "data\n", then EOF
    assert [(i.get("data"), i.get("eof")) for i in n2.inputs] == [("ZGF0YQo=", None), (None, True)]


def srun_command(*args: str):
    return build_srun(list(args), {"SLURM_JOB_ID": "7"}, "/tmp", "host")


def test_kill_on_bad_exit_ends_the_other_tasks(agents, capfd):
    failing = agents("n1", says("", status=1 << 8))
    running = agents("n2", until_signal)
    cmd = srun_command("-K", "-n2", "prog")
    cmd.read_stdin = False
    code, raw = run_step(grant([failing, running], [[0], [1]]), cmd)
    # task 0 exited 1, task 1 was ended by SIGTERM (15): signals beat exit codes, 128 + 15
    assert (code, raw) == (143, 15)
    err = capfd.readouterr().err
    assert "srun: Terminating StepId=7.0" in err
    assert "srun: error: n1: task 0: Exited with exit code 1" in err
    assert [i["signal"] for i in running.inputs if i.get("signal")][:2] == [
        signal.SIGCONT,
        signal.SIGTERM,
    ]


def test_two_ctrl_c_within_a_second_abort_the_step(agents, capfd, monkeypatch):
    running = agents("n1", until_signal)
    cmd = srun_command("prog")
    cmd.read_stdin = False
    seen = threading.Semaphore(0)

    class Noted(InterruptPolicy):
        def on_interrupt(self, now: float) -> str:
            action = super().on_interrupt(now)
            seen.release()
            return action

    monkeypatch.setattr(step_runner, "InterruptPolicy", Noted)

    def interrupt_twice() -> None:
        assert running.launched.wait(10)
        os.kill(os.getpid(), signal.SIGINT)
        assert seen.acquire(timeout=10)  # srun took the first one (two at once would merge)
        os.kill(os.getpid(), signal.SIGINT)  # the second, well within a second

    thread = threading.Thread(target=interrupt_twice)
    thread.start()
    try:
        result = run_step(grant([running], [[0]]), cmd)
    finally:
        thread.join(10)
    err = capfd.readouterr().err
    assert "srun: interrupt (one more within 1 sec to abort)" in err
    assert "srun: sending Ctrl-C to StepId=7.0" in err
    assert "srun: Job step aborted: Waiting up to 3 seconds for job step to finish." in err  # 1 + 2
    assert result == (130, 2)  # the task died from the forwarded SIGINT: 128 + 2
    assert "srun: error:" not in err  # no failure lines for a step the user ended
