"""srun and salloc from the command line, against a recording controller and stand-in agents.

The controller is the harness's ``FakeClient`` (installed through
``ControllerClient.from_env``, as the commands look it up), which records what
it was asked: submissions, steps, allocation updates, cancels; its job's state
moves on with each poll (``allocating_client``).  Agents are
``tests/cli/fake_agent.py`` servers on loopback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import types

import pytest

import cli.client
from cli import allocation, salloc, srun, step_runner
from cli.client import ControllerClient, Record
from slurmlite import errors
from slurmlite.allocenv import allocation_environment
from slurmlite.conftext import ClientSettings
from slurmlite.errors import SlurmError
from tests.cli.fake_agent import FakeAgent, grant, says
from tests.cli.harness import FakeClient, install
from tests.cli.test_import_budget import HEAVY, ROOT

JOB = 12


def job_record(state: str = "RUNNING") -> Record:
    """Job 12 as ``get_jobs`` answers it: 2 nodes of 2 CPUs, 4 tasks."""
    job = {"job_id": JOB, "name": "hostname", "state": state, "nodes": ["n1", "n2"],
           "alloc": [Record({"node": "n1", "cpus": 2}), Record({"node": "n2", "cpus": 2})],
           "tasks_per_node": [2, 2], "num_tasks": 4, "partition": "debug",
           "account": "acct_a", "qos": "normal", "submit_dir": "/work", "uid": 1001,
           "user": "alice", "gid": 1001, "mem_per_cpu": 1000}  # fmt: skip
    return Record(job)


def allocating_client(
    step_grant: object = None, states: tuple[str, ...] = ("RUNNING",), busy: int = 0
) -> FakeClient:
    """The harness's fake as srun and salloc's controller: a submission is job 12;
    each poll of ``get_jobs`` sees the next of ``states`` (the last one stays); the
    first ``busy`` step requests are refused (nodes busy), the next get ``step_grant``."""
    left = list(states)

    def poll(**_: object) -> list[Record]:
        return [job_record(left.pop(0) if len(left) > 1 else left[0])]

    def create_step(job_id: int, req: object) -> object:
        nonlocal busy
        if busy:
            busy -= 1
            raise SlurmError(errors.ESLURM_NODES_BUSY)
        return step_grant

    config = types.SimpleNamespace(cluster_name="anchor", path="/etc/slurm/slurm.conf")
    return FakeClient(
        config, submit=Record({"job_id": JOB}), get_jobs=poll, create_step=create_step,
        allocation_update=None, cancel=[], close=None,
    )  # fmt: skip


def submitted(fake: FakeClient) -> list[dict]:
    """The fields of every submission."""
    return [args["req"] for args in fake.sent("submit")]


def steps(fake: FakeClient) -> list[tuple[int, dict]]:
    """(job id, request) of every step request, refused ones too."""
    return [(args["job_id"], args["req"]) for args in fake.sent("create_step")]


def updates(fake: FakeClient) -> list[tuple[int, bool, int]]:
    """(job id, end, exit status) of every allocation update: keepalives and the end."""
    return [(u["job_id"], u["end"], u["exit_code"]) for u in fake.sent("allocation_update")]


@pytest.fixture
def controller(monkeypatch):
    """Install a fake controller client; commands run outside any allocation, stdin unread."""
    for name in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_NTASKS", "SLURM_NNODES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(step_runner, "stdin_is_ours", lambda fd=0: False)

    def put(fake: FakeClient) -> FakeClient:
        return install(monkeypatch, fake)

    return put


@pytest.fixture
def agents():
    made: list[FakeAgent] = []
    yield lambda node, script: made.append(FakeAgent(node, script)) or made[-1]
    for agent in made:
        agent.close()


def run_main(main, *args: str) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return exit_info.value.code


def test_srun_outside_an_allocation_allocates_runs_step_0_and_releases(controller, agents, capfd):
    n1, n2 = agents("n1", says("{node}\n")), agents("n2", says("{node}\n", status=3 << 8))
    fake = controller(allocating_client(grant([n1, n2], [[0, 1], [2, 3]], job_id=JOB)))
    assert run_main(srun.main, "-N2", "-n4", "-l", "hostname") == 3  # worst task: exit 3
    out, err = capfd.readouterr()
    assert sorted(out.splitlines()) == ["0: n1", "1: n1", "2: n2", "3: n2"]
    assert err == "srun: error: n2: tasks 2-3: Exited with exit code 3\n"  # started at once: quiet
    [fields] = submitted(fake)
    assert fields["allocation"] is True and fields["script"] == ""
    assert (fields["name"], fields["nodes_min"], fields["ntasks"]) == ("hostname", 2, 4)
    [(job_id, step)] = steps(fake)
    assert job_id == JOB and step["argv"] == ["hostname"] and step["label"] is True
    # the caller's environment only: the step adds the job's variables (stepenv), and
    # salloc's allocation variables are not for srun's tasks (golden 17: no SLURM_MEM_PER_CPU)
    env = step["environment"]
    assert not {"SLURM_JOB_ID", "SLURM_MEM_PER_CPU", "SLURM_NODE_ALIASES"} & env.keys()
    assert updates(fake)[-1] == (JOB, True, 3 << 8)  # the allocation ends with the step's status


def test_srun_reports_the_wait_when_the_allocation_is_queued(
    controller, agents, capfd, monkeypatch
):
    monkeypatch.setattr(allocation, "GRACE", 0.0)
    n1 = agents("n1", says("hi\n"))
    controller(allocating_client(grant([n1], [[0]], job_id=JOB), states=("PENDING", "RUNNING")))
    assert run_main(srun.main, "-n1", "hostname") == 0
    assert capfd.readouterr().err == (  # golden 17_srun_label_hostname
        "srun: job 12 queued and waiting for resources\nsrun: job 12 has been allocated resources\n"
    )


def test_an_allocation_that_ends_before_it_runs_is_revoked(controller, capfd, monkeypatch):
    monkeypatch.setattr(allocation, "GRACE", 0.0)
    fake = controller(allocating_client(states=("PENDING", "CANCELLED")))
    assert run_main(srun.main, "hostname") == 1
    assert capfd.readouterr().err.endswith("srun: Job allocation 12 has been revoked\n")
    assert steps(fake) == []


def test_ctrl_c_while_queued_ends_the_request(controller, capfd, monkeypatch):
    monkeypatch.setattr(allocation, "GRACE", 0.0)
    fake = controller(allocating_client(states=("PENDING",)))

    def pending_then_ctrl_c(**_):
        if fake.names().count("get_jobs") == 2:  # this call is recorded already
            os.kill(os.getpid(), signal.SIGINT)  # the user gives up while it waits
        return [job_record("PENDING")]

    fake.answers["get_jobs"] = pending_then_ctrl_c
    assert run_main(srun.main, "hostname") == 1
    assert capfd.readouterr().err == (
        "srun: job 12 queued and waiting for resources\nsrun: Job allocation 12 has been revoked\n"
    )
    assert updates(fake) == [(JOB, True, 0)]  # ended while pending: the controller cancels it


def test_a_busy_step_is_retried_with_one_message(controller, agents, capfd, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", str(JOB))
    n1 = agents("n1", says("ok\n"))
    fake = controller(allocating_client(grant([n1], [[0]], job_id=JOB, step_id=1), busy=2))
    assert run_main(srun.main, "-n1", "true") == 0
    out, err = capfd.readouterr()
    assert out == "ok\n"
    assert err == (
        "srun: Job 12 step creation temporarily disabled, retrying (Requested nodes are busy)\n"
        "srun: Step created for StepId=12.1\n"
    )
    assert submitted(fake) == [] and updates(fake) == []  # inside an allocation: no new job
    assert len(steps(fake)) == 3  # refused twice, granted the third time


def test_a_step_in_an_expired_job(controller, capfd, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "99")
    fake = controller(allocating_client())
    fake.answers["create_step"] = SlurmError(errors.ESLURM_INVALID_JOB_ID)
    assert run_main(srun.main, "true") == 1
    assert capfd.readouterr().err == (
        "srun: error: Unable to confirm allocation for job 99: Invalid job id specified\n"
        "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 99\n"
    )


def test_salloc_runs_the_command_here_with_the_allocation_variables(controller, capfd):
    fake = controller(allocating_client())
    code = run_main(
        salloc.main,
        "-N2",
        "sh",
        "-c",
        "echo $SLURM_JOB_ID $SLURM_NNODES $SLURM_TASKS_PER_NODE; exit 3",
    )
    assert code == 3
    out, err = capfd.readouterr()
    assert out == "12 2 2(x2)\n"
    assert err == "salloc: Granted job allocation 12\nsalloc: Relinquishing job allocation 12\n"
    assert submitted(fake)[0]["name"] == "sh"
    assert updates(fake) == [(JOB, True, 3 << 8)]


def test_salloc_hangs_up_its_command_when_the_allocation_is_revoked(controller, capfd, monkeypatch):
    monkeypatch.setattr(allocation, "KEEPALIVE", 0.05)
    fake = controller(allocating_client())

    def gone(job_id, end=False, exit_code=0):
        if not end:  # scancel'd meanwhile: the keepalive learns it
            raise SlurmError(errors.ESLURM_ALREADY_DONE)

    fake.answers["allocation_update"] = gone
    assert run_main(salloc.main, "sleep", "30") == 128 + signal.SIGHUP
    err = capfd.readouterr().err
    assert err == "salloc: Granted job allocation 12\nsalloc: Job allocation 12 has been revoked.\n"
    assert updates(fake) == [(JOB, False, 0)]  # nothing left to end


def test_salloc_passes_sigterm_to_its_command_and_still_releases(controller, capfd):
    fake = controller(allocating_client())
    default = signal.getsignal(signal.SIGTERM)

    def terminate_when_waiting() -> None:
        deadline = time.monotonic() + 10
        while signal.getsignal(signal.SIGTERM) is default and time.monotonic() < deadline:
            time.sleep(0.01)  # polling salloc's state, not timing it
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=terminate_when_waiting)
    thread.start()
    try:
        assert run_main(salloc.main, "sleep", "30") == 128 + signal.SIGTERM
    finally:
        thread.join(10)
    assert capfd.readouterr().err.endswith("salloc: Relinquishing job allocation 12\n")
    assert updates(fake) == [(JOB, True, signal.SIGTERM)]  # the command's raw status: signal 15


def test_allocation_environment_worked_example():
    job = job_record()
    env = allocation_environment(
        {"HOME": "/h", "SLURM_STEP_ID": "3", "SLURM_CONF": "/c"}, job, "anchor", "login",
        {"SLURM_NTASKS": "4", "SLURM_NPROCS": "4"},
    )  # fmt: skip
    assert env["SLURM_JOB_CPUS_PER_NODE"] == "2(x2)" and env["SLURM_TASKS_PER_NODE"] == "2(x2)"
    assert env["SLURM_NTASKS"] == "4" and env["SLURM_MEM_PER_CPU"] == "1000"
    assert env["MASTER_ADDR"] == "n1" and env["MASTER_PORT"] == "20012"  # 20000 + 12
    assert "SLURM_STEP_ID" not in env  # an enclosing step's variable is stale here
    assert env["SLURM_CONF"] == "/c" and env["HOME"] == "/h"


def test_client_create_step_maps_a_bare_409_to_nodes_busy(monkeypatch):
    client = ControllerClient(ClientSettings("/none", "c", "/none.sock"), "srun")
    sent: list[tuple] = []

    def busy(method, path, body=None, query=None):
        sent.append((method, path, body))
        raise cli.client._error_from(409, {"detail": "busy"})

    monkeypatch.setattr(client, "request", busy)
    with pytest.raises(SlurmError) as info:
        client.create_step(5, {"argv": ["x"]})
    assert info.value.code == errors.ESLURM_NODES_BUSY
    assert sent == [("POST", "/v1/jobs/5/steps", {"argv": ["x"]})]
    monkeypatch.setattr(client, "request", lambda *a, **k: sent.append(a[:3]))
    client.allocation_update(5, end=True, exit_code=256)
    assert sent[-1] == ("POST", "/v1/jobs/5/allocation", {"end": True, "exit_code": 256})


def test_the_modules_srun_loads_to_run_a_step_stay_light():
    # as tests/cli/test_import_budget.py, for what srun and salloc import after the options
    probe = (
        "import sys, json; import cli.srun, cli.salloc, cli.step_runner, cli.allocation, "
        "slurmlite.allocenv, slurmlite.resources; "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == []
