"""The checkpoint/resume example (deploy/examples/checkpoint) on a real local cluster, with
real torch on CPU: the training resumes from its checkpoint instead of starting over,

* once through the warning signal: ``--time=1 --signal=USR1@50`` warns each run
  10 s in; the run saves, requeues itself with ``scontrol requeue`` and exits,
  and the next run starts from the saved step;
* once through a dead node: the node running it loses its agent and every
  process of the job at once (as in a power cut) and stays silent past
  ``SlurmdTimeout`` (5 s); the job is requeued onto the other node and resumes
  from the last periodic save.

The output file (``--open-mode=append``) keeps every run's lines; they are
the evidence.  Each run's progress is waited on through those lines, never
through sleeps.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.localcluster import read_pid
from tests.agent.jobs import is_live
from tests.e2e.conftest import Cluster, local_cluster, wait_for

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "examples" / "checkpoint"
LINE = re.compile(r"^run=(\d+) (\w+)\b.*?step=(\d+)")


@pytest.fixture(scope="module")
def lab() -> Iterator[Cluster]:
    if importlib.util.find_spec("torch") is None:
        if os.environ.get("SLURMLITE_REQUIRE_CLIENTS") == "1":
            pytest.fail("torch not installed; SLURMLITE_REQUIRE_CLIENTS=1 makes this an error")
        pytest.skip("torch not installed (pip install -e '.[test]')")
    with local_cluster("slurmlite-ckpt-", nodelist="ck[1-2]", cpus_per_node=2) as c:
        yield c


def workdir(c: Cluster) -> Path:
    w = c.new_workdir()
    for name in ("train.py", "train.sbatch"):
        shutil.copy(EXAMPLE / name, w / name)
    return w


def submit(c: Cluster, w: Path, options: str, train_args: str, as_words: bool = False) -> int:
    """``train_args`` for train.py in TRAIN_ARGS, or (``as_words``) after the script's name."""
    if as_words:
        r = c.run(f"sbatch --parsable {options} train.sbatch {train_args}", cwd=w)
    else:
        r = c.run(f"sbatch --parsable {options} train.sbatch", cwd=w, TRAIN_ARGS=train_args)
    assert r.returncode == 0, r.stderr
    return int(r.stdout)


def events(out: Path) -> list[tuple[int, str, int]]:
    """(run, what, step) of each line the training printed, in order."""
    text = out.read_text() if out.exists() else ""
    return [(int(m[1]), m[2], int(m[3])) for m in map(LINE.match, text.splitlines()) if m]


def show(c: Cluster, jid: int) -> dict[str, str]:
    text = c.run(f"scontrol show job {jid}").stdout
    return dict(w.split("=", 1) for w in text.split() if "=" in w)


def test_a_warned_run_saves_requeues_itself_and_the_next_run_resumes(lab):
    w = workdir(lab)
    train = "--steps 60 --every 10 --step-seconds 0.25"  # every run gets them as words
    jid = submit(lab, w, "-t 1 --signal=USR1@50", train, as_words=True)
    state = lab.wait_done(jid, timeout=180)
    assert state == "COMPLETED", (state, story(lab, w, jid))
    seen = events(w / f"train-{jid}.out")
    starts = [(run, step) for run, what, step in seen if what == "start"]
    warned = [(run, step) for run, what, step in seen if what == "warned"]
    assert starts[0] == (0, 0) and warned and warned[0][0] == 0, seen
    # every later run starts exactly where the warned one before it saved
    assert [step for _, step in starts[1:]] == [step for _, step in warned], seen
    assert all(0 < step < 60 for _, step in warned), seen
    assert seen[-1][1:] == ("done", 60) and seen[-1][0] == len(warned), seen
    assert show(lab, jid)["Restarts"] == str(len(warned))
    assert "Traceback" not in (w / f"train-{jid}.out").read_text()  # each run ended cleanly


def test_a_run_on_a_node_that_dies_resumes_on_the_other_node(lab):
    w = workdir(lab)
    jid = submit(lab, w, "", "--steps 80 --every 10 --step-seconds 0.25")
    out = w / f"train-{jid}.out"
    wait_for(lambda: (0, "saved", 20) in events(out), timeout=90, what="run 0 saved step 20")
    node = show(lab, jid)["BatchHost"]
    agent = read_pid(lab.directory / "run" / f"slurmd-{node}.pid")
    assert agent is not None
    try:
        power_cut(agent, jid)
        assert lab.wait_done(jid, timeout=120) == "COMPLETED"
    finally:  # the node comes back for the module's other test (ReturnToService=2)
        cmd = [sys.executable, "-m", "agent.main", "-N", node, "-f", str(lab.conf), "--fake-gpus"]
        subprocess.run(cmd, check=True, env=lab.env(), timeout=60)
    seen = events(out)
    saved = [step for run, what, step in seen if run == 0 and what == "saved"]
    assert (1, "start", saved[-1]) in seen, seen  # not from step 0: from its last save
    assert seen[-1] == (1, "done", 80), seen
    job = show(lab, jid)
    assert (job["Restarts"], job["BatchHost"] != node) == ("1", True), job
    hosts = re.findall(r"^run=(\d) start step=\d+ node=(\S+)", out.read_text(), re.M)
    assert dict(hosts) == {"0": node, "1": job["BatchHost"]}


def test_a_job_requeueing_itself_hears_scontrol_succeed(lab):
    """``scontrol requeue $SLURM_JOB_ID`` from inside the job: the requeue terminates
    the job, scontrol with it, yet scontrol still reports exit 0 (the job's trap sees
    the SIGTERM; submitit checks that exit status)."""
    w = lab.new_workdir()
    (w / "self.sh").write_text(
        "#!/bin/bash\n"
        "run=${SLURM_RESTART_COUNT:-0}\n"
        "trap 'echo run=$run term >> log' TERM\n"
        'if [ "$run" = 0 ]; then\n'
        "  scontrol requeue $SLURM_JOB_ID; echo run=0 rc=$? >> log\n"
        "  sleep 30 & wait; exit 0\n"
        "fi\n"
        "echo run=$run done >> log\n"
    )
    r = lab.run("sbatch --parsable -o /dev/null self.sh", cwd=w)
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout)
    assert lab.wait_done(jid, timeout=90) == "COMPLETED"
    log = (w / "log").read_text().splitlines()
    assert sorted(log) == ["run=0 rc=0", "run=0 term", "run=1 done"], log
    assert log[-1] == "run=1 done", log
    assert show(lab, jid)["Restarts"] == "1"


def story(c: Cluster, w: Path, jid: int) -> str:
    """What a failure needs: the job's output and its accounting, every run."""
    out = w / f"train-{jid}.out"
    acct = c.run(f"sacct -j {jid} -P -o JobID,State,ExitCode,Restarts,NodeList").stdout
    return (out.read_text() if out.exists() else "(no output)") + "\n" + acct


def power_cut(agent: int, jid: int) -> None:
    """The node dies: its agent and every process of the job, at once, with SIGKILL."""
    victims = [agent] + [pid for pid in all_pids() if f"SLURM_JOB_ID={jid}" in environ(pid)]
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not any(is_live(p) for p in victims), what="the node's processes gone")


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def environ(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().decode(errors="replace").split("\0")
    except OSError:
        return []
