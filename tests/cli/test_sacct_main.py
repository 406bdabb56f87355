"""The sacct command end to end, with a fake controller client.

Two stores rebuild the golden capture: ``live_store`` (files 50_*: job 50
running, 51/54/57 pending) and ``final_store`` (files 60_*: every job of the
run in its final state).  Each golden file's own command line is run and
stdout, stderr and the exit status must match real Slurm 22.05 byte for byte
(TZ=UTC, a fixed clock, caller alice = uid 1001).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cli import sacct
from cli.common import version_line
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.protocol import JobInfo, NodeAlloc, StepInfo
from tests.cli.harness import FakeClient, install, unreachable
from tests.golden_path import golden_path

VERSION_OUT = version_line() + "\n"  # slurm-wlm 22.05.8 (slurmlite X)
T0 = 1796005000.0  # 2026-11-30T02:16:40Z: the jobs of the run start here
LIVE_NOW = 1796005759.0  # 02:29:19, when the 50_* files were captured
FINAL_NOW = 1796005785.0  # 02:29:45, after every 60_* job ended


def read_golden(name: str, subst: dict[str, str] | None = None) -> tuple[list[str], str, str, int]:
    """(sacct argv, stdout, stderr, exit) of a golden file; ``subst`` fills ``$(...)``."""
    path = golden_path(name)
    lines = path.read_text().splitlines()
    command = lines[0][2:]
    for old, new in (subst or {}).items():
        command = command.replace(old, new)
    words = shlex.split(command)
    argv = words[words.index("sacct") + 1 :]
    end = next((i for i, w in enumerate(argv) if w.endswith(";")), None)
    if end is not None:
        argv = argv[:end] + [argv[end].rstrip(";")]
    cut = next(i for i, line in enumerate(lines) if line.startswith(("[stderr]", "[exit")))
    out = lines[1:cut]
    err: list[str] = []
    if lines[cut] == "[stderr]":
        err = lines[cut + 1 : -1]
    status = int(lines[-1].removeprefix("[exit ").rstrip("]"))
    return argv, "".join(x + "\n" for x in out), "".join(x + "\n" for x in err), status


# ------------------------------------------------------------ the stores


def a_step(job_id: int, step_id: str, name: str, state: str = "COMPLETED", exit_code: int = 0,
           cpus: int = 1, nodes: tuple[str, ...] = ("n1",), start: float = 0.0,
           end: float | None = None) -> StepInfo:  # fmt: skip
    return StepInfo(job_id, step_id, name, state, exit_code, start, end, list(nodes), cpus)


def a_job(job_id: int, name: str, state: str, submit: float, *, cpus: int = 1,
          nodes: tuple[str, ...] = ("n1",), exit_code: int | None = 0, steps: Any = ("batch",),
          step_state: str | None = None, step_exit: int | None = None, **kw: Any) -> JobInfo:  # fmt: skip
    """A finished job of alice that ran 1 s; ``steps`` = step ids, or StepInfos."""
    started = state not in ("PENDING",) and nodes != ()
    start = submit + 1 if started else None
    end = None if state in ("PENDING", "RUNNING") else (start or submit) + 1
    fields: dict[str, Any] = dict(
        user="alice", uid=1001, gid=1001, group="alice", account="acct_a", qos="normal",
        partition="debug", flags=[], reason="None", priority=4725, work_dir="/home/alice/work",
        submit_dir="/home/alice/work", num_nodes=max(1, len(nodes)), num_cpus=cpus, num_tasks=1,
        cpus_per_task=1, time_limit=None, eligible_time=submit, start_time=start, end_time=end,
        nodes=list(nodes) if started else [], exit_code=exit_code, mem_per_cpu=1000,
        alloc=[NodeAlloc(n, cpus // len(nodes) or 1, 1000 * (cpus // len(nodes) or 1))
               for n in nodes] if started else [],
    )  # fmt: skip
    fields.update(kw)
    job = JobInfo(job_id=job_id, name=name, state=state, submit_time=submit, **fields)
    for step in steps:
        if isinstance(step, StepInfo):
            job.steps.append(step)
            continue
        job.steps.append(a_step(job_id, step, step, step_state or state,
                                exit_code if step_exit is None else step_exit,
                                cpus, nodes[:1], start or 0.0, end))  # fmt: skip
    return job


def final_store() -> list[JobInfo]:
    """Every job of the golden run, in submission order (60_sacct_default.txt)."""
    clock = iter(range(10**6))

    def t() -> float:
        return T0 + 10 * next(clock)

    jobs = [
        a_job(18, "tmo", "TIMEOUT", t(), reason="TimeLimit", step_state="CANCELLED", step_exit=15)
    ]
    jobs += [a_job(i, "wrap", "COMPLETED", t()) for i in (19, 20, 21)]
    jobs.append(a_job(22, "sbatch", "COMPLETED", t()))
    jobs.append(a_job(24, "env_1node.sh", "COMPLETED", t()))
    s = T0 + 100
    jobs.append(
        a_job(
            25,
            "env_2tasks.sh",
            "COMPLETED",
            t(),
            cpus=2,
            steps=(
                "batch",
                a_step(25, "0", "env", cpus=2, start=s),
                a_step(25, "1", "bash", cpus=2, start=s),
            ),
        )
    )
    jobs.append(
        a_job(
            26,
            "env_2nodes.sh",
            "COMPLETED",
            t(),
            cpus=2,
            nodes=("n1", "n2"),
            steps=(
                a_step(26, "batch", "batch", start=s),
                a_step(26, "0", "env", cpus=2, nodes=("n1", "n2"), start=s),
            ),
        )
    )
    jobs.append(
        a_job(27, "env_gpu.sh", "COMPLETED", t(), steps=("batch", a_step(27, "0", "env", start=s)))
    )
    jobs.append(
        a_job(
            28,
            "env_gpn.sh",
            "COMPLETED",
            t(),
            cpus=2,
            nodes=("n1", "n2"),
            steps=(
                a_step(28, "batch", "batch", start=s),
                a_step(28, "0", "env", cpus=2, nodes=("n1", "n2"), start=s),
            ),
        )
    )
    jobs.append(a_job(29, "opts-job", "COMPLETED", t(), cpus=2, partition="long", account="acct_b"))
    array_submit = t()
    for task, (job_id, node) in enumerate([(31, "n1"), (32, "n2"), (30, "n2")]):
        jobs.append(a_job(job_id, "env_array.sh", "COMPLETED", array_submit, nodes=(node,),
                          array_job_id=30, array_task_id=task))  # fmt: skip
    jobs.append(
        a_job(33, "env", "COMPLETED", t(), cpus=2, steps=(a_step(33, "0", "env", cpus=2, start=s),))
    )
    jobs.append(a_job(34, "hostname", "COMPLETED", t(), cpus=4, nodes=("n1", "n2"),
                      steps=(a_step(34, "0", "hostname", cpus=4, nodes=("n1", "n2"), start=s),)))  # fmt: skip
    jobs.append(
        a_job(35, "printenv", "COMPLETED", t(), steps=(a_step(35, "0", "printenv", start=s),))
    )
    jobs.append(a_job(36, "wrap", "COMPLETED", t()))
    jobs.append(a_job(37, "patname", "COMPLETED", t()))
    for base, tasks in ((38, (0, 1)), (40, (3, 4))):
        sub = t()
        for k, task in enumerate(tasks):
            jobs.append(
                a_job(
                    base + 100 + k, "wrap", "COMPLETED", sub, array_job_id=base, array_task_id=task
                )
            )
    jobs.append(a_job(42, "wrap", "FAILED", t(), exit_code=53, reason="JobLaunchFailure",
                      step_state="CANCELLED"))  # fmt: skip
    jobs.append(a_job(43, "wrap", "COMPLETED", t()))
    pending_cancel = dict(nodes=(), steps=(), exit_code=None, cancelled_by=1001)
    jobs.append(a_job(44, "wrap", "CANCELLED", t(), cpus=3, **pending_cancel))
    for i in (45, 46):
        jobs.append(a_job(i, "wrap", "FAILED", t(), nodes=(), steps=(), exit_code=256,
                          reason="BadConstraints"))  # fmt: skip
    jobs.append(a_job(47, "wrap", "CANCELLED", t(), **pending_cancel))
    jobs.append(a_job(48, "wrap", "COMPLETED", t()))
    jobs.append(a_job(49, "wrap", "CANCELLED", t(), cpus=3, **pending_cancel))
    jobs.append(
        a_job(51, "wants-2nodes", "CANCELLED", t(), cpus=2, reason="Priority", **pending_cancel)
    )
    jobs.append(a_job(54, "held", "COMPLETED", t()))
    jobs.append(a_job(56, "gpu-job", "COMPLETED", t(), gpus=1))
    jobs.append(a_job(58, "fails", "FAILED", t(), exit_code=256, reason="NonZeroExitCode"))
    sub = t()
    for task, job_id in enumerate((60, 61, 62, 57)):
        done = task < 2
        jobs.append(a_job(job_id, "arr", "COMPLETED" if done else "CANCELLED", sub,
                          array_job_id=57, array_task_id=task, cancelled_by=None if done else 1001,
                          step_state=None if done else "CANCELLED", step_exit=None if done else 15))  # fmt: skip
    jobs.append(a_job(59, "never", "CANCELLED", t(), nodes=(), steps=(), exit_code=None, cancelled_by=0,
                      reason="Dependency", eligible_time=None))  # fmt: skip
    jobs.append(
        a_job(
            50,
            "big-running",
            "CANCELLED",
            t(),
            cpus=4,
            nodes=("n1", "n2"),
            cancelled_by=1001,
            reason="BeginTime",
            steps=(a_step(50, "batch", "batch", "CANCELLED", 15, cpus=2, start=s),),
        )
    )
    jobs.append(a_job(65, "ok", "COMPLETED", 1796005773.0))
    jobs[-1].start_time = jobs[-1].end_time = jobs[-1].steps[0].start_time = 1796005774.0
    jobs[-1].steps[0].end_time = 1796005774.0
    jobs.append(a_job(66, "fail1", "FAILED", 1796005775.0, exit_code=256, reason="NonZeroExitCode"))
    jobs.append(a_job(67, "fail3", "FAILED", 1796005776.0, exit_code=768, reason="NonZeroExitCode"))
    jobs.append(a_job(68, "killed9", "FAILED", 1796005777.0, exit_code=9, reason="RaisedSignal",
                      step_state="CANCELLED"))  # fmt: skip
    jobs.append(a_job(69, "stepfail", "COMPLETED", 1796005778.0, derived_exit_code=256,
                      steps=("batch", a_step(69, "0", "false", "FAILED", 256, start=1796005779.0))))  # fmt: skip
    jobs.append(a_job(70, "cancel-running", "CANCELLED", 1796005780.0, cancelled_by=0,
                      step_state="CANCELLED", step_exit=15))  # fmt: skip
    return jobs


def live_store() -> list[JobInfo]:
    """The queue of the 50_* files: 50 running on both nodes, three pending jobs."""
    running = a_job(50, "big-running", "RUNNING", T0, cpus=4, nodes=("n1", "n2"), exit_code=None,
                    steps=(a_step(50, "batch", "batch", "RUNNING", None, cpus=2, start=T0 + 1),))  # fmt: skip
    pend = dict(nodes=(), steps=(), exit_code=None)
    waiting = a_job(51, "wants-2nodes", "PENDING", T0 + 10, cpus=2, reason="Priority", **pend)
    held = a_job(54, "held", "PENDING", T0 + 20, reason="JobHeldUser", eligible_time=None, **pend)
    array = a_job(
        57, "arr", "PENDING", T0 + 30, reason="JobArrayTaskLimit", array_job_id=57, **pend
    )
    array.array_task_str = "0-9%2"  # type: ignore[attr-defined]  # what the controller adds
    return [running, waiting, held, array]


def accounting_client(jobs: list[JobInfo]) -> FakeClient:
    """The harness's fake: ``get_accounting`` answers from ``fake.jobs``, by ``names``."""
    fake = FakeClient()
    fake.jobs = jobs  # type: ignore[attr-defined]

    def get_accounting(**kw: Any) -> list[JobInfo]:
        names = kw.get("names")
        wanted = None if names is None else {n.lower() for n in names}
        return [j for j in fake.jobs if wanted is None or j.name.lower() in wanted]  # type: ignore[attr-defined]

    fake.answers["get_accounting"] = get_accounting
    return fake


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeClient]:
    fake = accounting_client(final_store())
    install(monkeypatch, fake)
    monkeypatch.setattr(sacct, "my_uid", lambda: 1001)
    monkeypatch.setattr(sacct.time, "time", lambda: FINAL_NOW)
    for var in ("SACCT_FORMAT", "SLURM_TIME_FORMAT", "SACCT_FEDERATION", "SACCT_LOCAL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield fake
    monkeypatch.undo()
    time.tzset()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str, int]:
    with pytest.raises(SystemExit) as exc:
        sacct.main(argv)
    out, err = capsys.readouterr()
    return out, err, int(exc.value.code or 0)


FINAL_FILES = [
    "60_sacct_default.txt",
    "60_sacct_parsable2.txt",
    "60_sacct_parsable2_noheader.txt",
    "60_sacct_j_states.txt",
    "60_sacct_brief.txt",
    "60_sacct_X_states.txt",
    "60_sacct_submitit.txt",
    "60_sacct_torchx.txt",
    "60_sacct_format_widths.txt",
    "60_sacct_long.txt",
    "60_sacct_nonexistent.txt",
    "60_sacct_helpformat.txt",
]


@pytest.mark.parametrize("golden", FINAL_FILES)
def test_final_state_goldens(
    golden: str, fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, stdout, stderr, status = read_golden(golden)
    assert run(argv, capsys) == (stdout, stderr, status)


def test_snakemake_status_query(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    argv, stdout, stderr, status = read_golden(
        "60_sacct_snakemake.txt", {"$(date +%Y-%m-%dT00:00)": "2026-11-30T00:00"}
    )
    assert run(argv, capsys) == (stdout, stderr, status)
    assert fake.calls[-1].kwargs["names"] == ["fail1"]


@pytest.mark.parametrize(("golden", "job_id"), [("20_output_missing_dir.txt", "42"),
                                               ("41_dependency_on_unknown_job.txt", "48")])  # fmt: skip
def test_goldens_inside_shell_pipelines(golden: str, job_id: str, fake: FakeClient,
                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    argv, stdout, _, status = read_golden(golden, {"$ID": job_id})
    # the file also holds squeue's line after sacct's output
    expected = "".join(line + "\n" for line in stdout.splitlines() if "|" in line)
    assert run(argv, capsys) == (expected, "", status)


@pytest.mark.parametrize(
    "golden", ["50_sacct_pending_running.txt", "50_sacct_submitit_pending.txt"]
)
def test_live_queue_goldens(golden: str, fake: FakeClient, capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    fake.jobs = live_store()
    monkeypatch.setattr(sacct.time, "time", lambda: LIVE_NOW)
    argv, stdout, stderr, status = read_golden(golden)
    assert run(argv, capsys) == (stdout, stderr, status)


# ------------------------------------------------------------ behaviours


def test_stray_words_from_an_unshelled_pipe_fail_like_getopt(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    # snakemake runs this without a shell: "|", "tail", "-1" become arguments
    out, err, code = run(["-nu", "root", "-o", "Account%256", "|", "tail", "-1"], capsys)
    assert (out, err, code) == ("", "sacct: invalid option -- '1'\n", 1)
    assert fake.calls == []


def test_unknown_positional_words(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    out, err, code = run(["-n", "foo", "bar"], capsys)
    assert (out, code) == ("", 1)
    assert err == "sacct: error: Unknown arguments:\nsacct: error:  foo\nsacct: error:  bar\n"


def test_unknown_field_is_an_error(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    out, err, code = run(["-o", "JobID,Bogus%5"], capsys)
    assert (out, err, code) == ("", 'sacct: error: Invalid field requested: "Bogus"\n', 1)


def test_sacct_format_env_and_brief(fake: FakeClient, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("SACCT_FORMAT", "jobid%-6,state%12")
    out = run(["-j", "66", "-X"], capsys)[0]
    assert out == "JobID         State \n------ ------------ \n66           FAILED \n"
    # -b wins over SACCT_FORMAT
    assert run(["-b", "-j", "66", "-X", "-P"], capsys)[0] == "JobID|State|ExitCode\n66|FAILED|1:0\n"


def test_repeated_and_comma_separated_ids_and_steps(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(["-P", "-n", "-o", "jobid", "-j", "69.0,65", "-j", "57_1"], capsys)[0]
    # 69.0 asks for one step only: no job row, no batch row
    assert out.splitlines() == ["57_1", "57_1.batch", "65", "65.batch", "69.0"]


def test_state_filter_needs_a_window(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    # with -s and no -S the window is the instant "now": no job ended exactly then;
    # -S alone makes the window the instant -S (-E defaults to -S)
    assert run(["-n", "-X", "-P", "-s", "F", "-o", "jobid"], capsys)[0] == ""
    assert (
        run(["-n", "-X", "-P", "-s", "F", "-S", "2026-11-30T00:00", "-o", "jobid"], capsys)[0] == ""
    )
    argv = ["-n", "-X", "-P", "-s", "failed", "-S", "2026-11-30T00:00", "-E", "now", "-o", "jobid"]
    out = run(argv, capsys)[0]
    assert out.split() == ["42", "45", "46", "58", "66", "67", "68"]


def test_bad_state_and_bad_job_id(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["-s", "xx"], capsys) == ("", "sacct: fatal: unrecognized job state value 'xx'\n", 1)
    assert run(["-j", "abc"], capsys) == ("", "sacct: fatal: Bad job/step specified: abc\n", 1)


def test_other_users_jobs_are_hidden_unless_asked(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.jobs = [
        a_job(90, "bobs", "COMPLETED", T0, user="bob", uid=1002),
        a_job(91, "mine", "COMPLETED", T0),
    ]
    assert run(["-n", "-X", "-P", "-o", "jobid"], capsys)[0] == "91\n"
    assert run(["-n", "-X", "-P", "-o", "jobid", "-a"], capsys)[0] == "90\n91\n"
    assert run(["-n", "-X", "-P", "-o", "jobid", "-u", "1002"], capsys)[0] == "90\n"


def test_start_after_end_is_refused(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    out, err, code = run(["-S", "2026-11-30T10:00", "-E", "2026-11-30T09:00"], capsys)
    assert (out, code) == ("", 1)
    assert err == ("sacct: error: Start time (2026-11-30T10:00:00) requested is after end time "
                   "(2026-11-30T09:00:00).\n")  # fmt: skip


def test_bad_time(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    out, err, code = run(["-S", "yesterdayish"], capsys)
    assert (out, code) == ("", 1) and err.startswith("Invalid time specification (pos=")


def test_long_and_format_conflict(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    out, err, code = run(["-l", "-o", "jobid"], capsys)
    assert (out, code) == ("", 1)
    assert err.startswith(
        "sacct: fatal: Options -o(--format) and -l(--long) are mutually exclusive."
    )


def test_store_unreachable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    unreachable(monkeypatch, SlurmError(errors.SLURM_COMMUNICATIONS_CONNECTION_ERROR))
    out, err, code = run(["-j", "1"], capsys)
    assert (out, code) == ("", 1)
    assert err.startswith("sacct: error: Problem talking to the database: ")


def test_version(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["--version"], capsys) == (VERSION_OUT, "", 0)


def test_helpformat_needs_no_controller(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    unreachable(monkeypatch, AssertionError("sacct -e must not contact the controller"))
    out, err, code = run(["-e"], capsys)
    assert (err, code) == ("", 0)
    assert out.startswith("Account             AdminComment")
