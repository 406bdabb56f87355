"""A waiting srun/salloc names the user's own limit that holds it: once per reason.

``cli.allocation.Allocation`` against the harness's ``FakeClient``: each poll of
``get_jobs`` sees the next (state, reason); the controller's explanation
(``GET /v1/jobs/N/explain``) gives the limit's words.
"""

from __future__ import annotations

import types

import pytest

from cli import allocation
from tests.cli.harness import FakeClient

JOB = 12
LIMIT = "your QOS normal allows 1 running job per user; 1 of your jobs (5) is running"
GPUS = "your QOS normal allows 2 GPUs per user; 1 of your running jobs (5) hold 2 and this job asks for 1"


def _client(polls: list[tuple[str, str]], limits: dict[str, str]) -> FakeClient:
    left = list(polls)
    current = {"reason": "None"}

    def get_jobs(**_: object) -> list[object]:
        state, reason = left.pop(0) if len(left) > 1 else left[0]
        current["reason"] = reason
        return [types.SimpleNamespace(job_id=JOB, state=state, reason=reason)]

    def request(method: str, path: str, *args: object, **kw: object) -> dict[str, object]:
        assert (method, path) == ("GET", f"/v1/jobs/{JOB}/explain")
        return {"user_limit": limits.get(current["reason"], "")}

    submitted = types.SimpleNamespace(job_id=JOB)
    return FakeClient(submit=submitted, get_jobs=get_jobs, request=request)


@pytest.mark.parametrize("prog", ["salloc", "srun"])
def test_the_limit_line_is_said_once_and_again_when_the_reason_changes(prog, capsys, monkeypatch):
    monkeypatch.setattr(allocation, "GRACE", 0.0)
    polls = [
        ("PENDING", "QOSMaxJobsPerUserLimit"),
        ("PENDING", "QOSMaxJobsPerUserLimit"),
        ("PENDING", "Priority"),
        ("PENDING", "QOSMaxGRESPerUser"),
        ("PENDING", "QOSMaxGRESPerUser"),
        ("RUNNING", "None"),
    ]
    fake = _client(polls, {"QOSMaxJobsPerUserLimit": LIMIT, "QOSMaxGRESPerUser": GPUS})
    alloc = allocation.Allocation(fake, prog)
    assert alloc.request({}, sleep=lambda _s: None).state == "RUNNING"
    lines = capsys.readouterr().err.splitlines()
    pending = [f"salloc: Pending job allocation {JOB}"] if prog == "salloc" else []
    granted = [f"salloc: Granted job allocation {JOB}"] if prog == "salloc" else []
    assert lines == [
        *pending,
        f"{prog}: job {JOB} queued and waiting for resources",
        f"{prog}: {LIMIT}",
        f"{prog}: {GPUS}",
        f"{prog}: job {JOB} has been allocated resources",
        *granted,
    ]
    assert fake.names().count("request") == 2  # asked only when a limit became the reason


def test_other_reasons_ask_nothing_and_quiet_says_nothing(capsys, monkeypatch):
    monkeypatch.setattr(allocation, "GRACE", 0.0)
    fake = _client([("PENDING", "Resources"), ("RUNNING", "None")], {})
    allocation.Allocation(fake, "srun").request({}, sleep=lambda _s: None)
    assert "request" not in fake.names()
    assert "allows" not in capsys.readouterr().err
    quiet = _client([("PENDING", "QOSMaxJobsPerUserLimit"), ("RUNNING", "None")], {})
    allocation.Allocation(quiet, "srun", quiet=True).request({}, sleep=lambda _s: None)
    assert "request" not in quiet.names() and capsys.readouterr().err == ""
