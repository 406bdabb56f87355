"""sbatch -W/--wait (cli/sbatch_wait.py): the exit status a job's end gives, and the
polling (arrays, a job gone from the live queue, a controller that stops answering)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from cli.sbatch_wait import FIELDS, MAX_DELAY, exit_status, wait_for_job
from slurmlite import errors
from slurmlite.errors import SlurmError
from tests.unit.test_sbatch_request import ENV, sbatch


def status(code: int = 0, signal: int = 0) -> int:
    return (code << 8) | signal  # a raw wait status, as jobs carry it


@pytest.mark.parametrize(
    ("state", "raw", "expected"),
    [
        ("COMPLETED", status(0), 0),
        ("FAILED", status(3), 3),
        ("FAILED", status(0, 9), 1),  # killed by a signal: 1, as Slurm's sbatch
        ("TIMEOUT", status(0, 15), 1),
        ("OUT_OF_MEMORY", 253, 1),
        ("CANCELLED", None, 1),  # cancelled before it ran: Slurm says 0, we say 1
        ("CANCELLED", status(0), 1),
        ("COMPLETED", None, 0),
    ],
)
def test_exit_status(state: str, raw: int | None, expected: int) -> None:
    assert exit_status(state, raw) == expected


class Queue:
    """A controller whose answers move on with each poll: ``polls`` is a list of
    row lists (``(job_id, state, flags, exit_code)``) or exceptions."""

    def __init__(self, *polls: Any, accounting: list[Any] | None = None) -> None:
        self.polls = list(polls)
        self.accounting = accounting or []
        self.asked: list[Any] = []

    def get_job_rows(self, fields: list[str], **filters: Any) -> tuple[list[str], list[Any]]:
        assert fields == FIELDS and filters["all_states"]
        self.asked.append(filters["job_ids"])
        answer = self.polls.pop(0) if len(self.polls) > 1 else self.polls[0]
        if isinstance(answer, Exception):
            raise answer
        return fields, [list(r) for r in answer]

    def get_accounting(self, job_ids: list[int]) -> list[Any]:
        return [
            SimpleNamespace(job_id=j, state=s, flags=[], exit_code=c) for j, s, c in self.accounting
        ]


def test_waits_while_running_then_gives_the_exit_code() -> None:
    queue = Queue(
        [(7, "PENDING", [], None)],
        [(7, "RUNNING", [], None)],
        [(7, "FAILED", ["COMPLETING"], status(3))],  # still completing: not yet
        [(7, "FAILED", [], status(3))],
    )
    slept: list[float] = []
    assert wait_for_job(queue, 7, sleep=slept.append) == 3  # type: ignore[arg-type]
    assert queue.asked == [[7]] * 4
    assert slept == [0.1, 0.2, 0.4]  # backing off towards MAX_DELAY


def test_backoff_stops_at_one_second() -> None:
    queue = Queue(*([[(7, "RUNNING", [], None)]] * 8), [(7, "COMPLETED", [], 0)])
    slept: list[float] = []
    assert wait_for_job(queue, 7, sleep=slept.append) == 0  # type: ignore[arg-type]
    assert max(slept) == MAX_DELAY and slept[-3:] == [MAX_DELAY] * 3


def test_an_array_gives_its_highest_exit_code_once_every_task_ended() -> None:
    queue = Queue(
        [(10, "COMPLETED", [], 0), (11, "FAILED", [], status(2)), (12, "RUNNING", [], None)],
        # task 11 left the live queue meanwhile: what was seen of it still counts
        [(10, "COMPLETED", [], 0), (12, "FAILED", [], status(1))],
    )
    assert wait_for_job(queue, 10, sleep=lambda _: None) == 2  # type: ignore[arg-type]


def test_a_job_gone_from_the_queue_is_read_from_accounting() -> None:
    queue = Queue([], accounting=[(5, "FAILED", status(4))])
    assert wait_for_job(queue, 5, sleep=lambda _: None) == 4  # type: ignore[arg-type]


def test_a_job_found_nowhere_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert wait_for_job(Queue([]), 5, sleep=lambda _: None) == 1  # type: ignore[arg-type]
    assert "Job 5 no longer found" in capsys.readouterr().err


def test_an_unreachable_controller_is_retried_and_said_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    down = SlurmError(errors.SLURM_COMMUNICATIONS_CONNECTION_ERROR)
    queue = Queue(down, down, down, [(7, "COMPLETED", [], 0)])
    assert wait_for_job(queue, 7, sleep=lambda _: None) == 0  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert err.count("Currently unable to load job state information, retrying") == 1


def test_wait_from_the_line_a_directive_or_the_environment(tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text("#!/bin/sh\ntrue\n")
    assert sbatch("job.sh", cwd=tmp_path).wait is False
    assert sbatch("-W", "job.sh", cwd=tmp_path).wait is True
    assert sbatch("--wait", "job.sh", cwd=tmp_path).wait is True
    assert sbatch("job.sh", cwd=tmp_path, env={**ENV, "SBATCH_WAIT": "1"}).wait is True
    (tmp_path / "job.sh").write_text("#!/bin/sh\n#SBATCH --wait\ntrue\n")
    assert sbatch("job.sh", cwd=tmp_path).wait is True
