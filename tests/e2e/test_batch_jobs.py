"""Batch jobs on a real cluster: environment, output files, exit codes, cancel, time limit."""

from __future__ import annotations

import os
import re
import time

import pytest

from tests.golden_path import GOLDEN, needs_golden


def env_of(text: str) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("=")
    )


def golden_env(name: str, section: str) -> dict[str, str]:
    text = (GOLDEN / f"{name}.txt").read_text()
    body = text.split(f"[file {section}]\n", 1)[1].split("\n[", 1)[0]
    return env_of(body.split("=== srun", 1)[0])  # the batch part only


VARYING = {
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_TASK_PID",
    "SLURM_WORKING_CLUSTER",
    "SLURM_SUBMIT_DIR",
    "SLURM_SUBMIT_HOST",
    "SLURM_CONF",
    "SLURM_JOB_UID",
    "SLURM_JOB_GID",
    "SLURM_JOB_USER",
    "SLURM_JOB_ACCOUNT",
    "SLURMD_NODENAME",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_TOPOLOGY_ADDR",
    "SLURM_JOB_NAME",
}


@pytest.mark.parametrize(
    "golden,script",
    [
        ("10_env_1node_1task", "#!/bin/bash\n#SBATCH -N 1\n#SBATCH -n 1\nenv | sort\n"),
        ("13_env_gres_gpu1", "#!/bin/bash\n#SBATCH --gres=gpu:1\nenv | sort\n"),
        ("12_env_2nodes", "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --ntasks-per-node=1\nenv | sort\n"),
    ],
)
@needs_golden
def test_batch_environment_matches_slurm(cluster, jobdir, golden, script):
    (jobdir / "job.sh").write_text(script)
    jid = cluster.submit("job.sh", cwd=jobdir)
    assert cluster.wait_done(jid) == "COMPLETED"
    ours = env_of((jobdir / f"slurm-{jid}.out").read_text())
    theirs = golden_env(
        golden,
        next(
            iter(re.findall(r"\[file (slurm-\d+\.out)\]", (GOLDEN / f"{golden}.txt").read_text()))
        ),
    )
    slurm = {
        k
        for k in theirs
        if k.startswith(("SLURM", "CUDA", "GPU_", "ROCR", "ZE_")) or k in ("ENVIRONMENT",)
    }
    missing = slurm - set(ours)
    assert not missing, f"variables Slurm sets that we do not: {sorted(missing)}"
    for key in sorted(slurm - VARYING):
        assert ours[key] == theirs[key], key
    assert ours["SLURM_JOB_ID"] == str(jid) and ours["SLURMD_NODENAME"] in ("n1", "n2")
    assert ours["HOSTNAME"] == ours["SLURMD_NODENAME"]


def test_gpu_job_sees_its_gpus_and_nothing_else(cluster, jobdir):
    jid = cluster.submit(
        "--gpus-per-node=2 -N 2 --wrap 'echo cvd=$CUDA_VISIBLE_DEVICES jobgpus=$SLURM_JOB_GPUS'",
        cwd=jobdir,
    )
    assert cluster.wait_done(jid) == "COMPLETED"
    assert (jobdir / f"slurm-{jid}.out").read_text() == "cvd=0,1 jobgpus=0,1\n"
    cpu = cluster.submit("--wrap 'echo cvd=[$CUDA_VISIBLE_DEVICES]'", cwd=jobdir)
    cluster.wait_done(cpu)
    assert (jobdir / f"slurm-{cpu}.out").read_text() == "cvd=[]\n"  # non-GPU work sees no GPU


def test_exit_codes_and_states_in_sacct(cluster, jobdir):
    ok = cluster.submit("-J ok --wrap 'exit 0'", cwd=jobdir)
    fail3 = cluster.submit("-J fail3 --wrap 'exit 3'", cwd=jobdir)
    killed = cluster.submit("-J killed9 --wrap 'kill -9 $$'", cwd=jobdir)
    for j in (ok, fail3, killed):
        cluster.wait_done(j)
    r = cluster.run(
        f"sacct --parsable2 --noheader -j {ok},{fail3},{killed} -o JobID,JobName,State,ExitCode"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"{ok}|ok|COMPLETED|0:0",
        f"{ok}.batch|batch|COMPLETED|0:0",
        f"{fail3}|fail3|FAILED|3:0",
        f"{fail3}.batch|batch|FAILED|3:0",
        f"{killed}|killed9|FAILED|0:9",
        f"{killed}.batch|batch|CANCELLED|0:9",
    ]
    r = cluster.run(f"scontrol show job {fail3}")
    assert "JobState=FAILED Reason=NonZeroExitCode" in r.stdout and "ExitCode=3:0" in r.stdout


def test_output_patterns_and_default_file(cluster, jobdir):
    jid = cluster.submit(
        "-J patname --output='pat-%j-%x-%N-%u-%t-%J-%%.out' --wrap 'echo hello'", cwd=jobdir
    )
    cluster.wait_done(jid)
    user = cluster.run("id -un").stdout.strip()
    [f] = jobdir.glob("pat-*")
    assert re.fullmatch(rf"pat-{jid}-patname-n[12]-{user}-0-{jid}-%\.out", f.name)
    jid = cluster.submit("--wrap 'echo out; echo err >&2'", cwd=jobdir)
    cluster.wait_done(jid)
    assert (jobdir / f"slurm-{jid}.out").read_text() == "out\nerr\n"
    (jobdir / "sub").mkdir(mode=0o777)
    jid = cluster.submit("--chdir=sub --output='o-%j.txt' --wrap pwd", cwd=jobdir)
    cluster.wait_done(jid)
    assert (jobdir / "sub" / f"o-{jid}.txt").read_text() == f"{jobdir}/sub\n"


def test_words_after_the_script_are_its_arguments_on_every_run(cluster, jobdir):
    (jobdir / "args.sh").write_text(
        '#!/bin/bash\nwords=$(printf "[%s]" "$@")\n'
        'echo "run=${SLURM_RESTART_COUNT:-0} n=$# $words" >> args.log\n'
        '[ "${SLURM_RESTART_COUNT:-0}" = 0 ] && { scontrol requeue $SLURM_JOB_ID; sleep 30; }\n'
        "true\n"
    )
    jid = cluster.submit("-o err.log args.sh one 'two words' --steps ''", cwd=jobdir)
    state = cluster.wait_done(jid, timeout=60)
    log, err = (jobdir / "args.log"), (jobdir / "err.log")
    assert state == "COMPLETED", [p.read_text() for p in (log, err) if p.exists()]
    words = "[one][two words][--steps][]"
    assert (jobdir / "args.log").read_text().splitlines() == [
        f"run=0 n=4 {words}",
        f"run=1 n=4 {words}",  # the requeued run has them too
    ]


def test_missing_output_directory_fails_the_launch(cluster, jobdir):
    jid = cluster.submit("--output='nosuchdir/out-%j.txt' --wrap 'echo x'", cwd=jobdir)
    assert cluster.wait_done(jid) == "FAILED"
    r = cluster.run(
        f"sacct -j {jid} -o JobID,State,ExitCode --parsable2; squeue -h -t all -j {jid} -o '%i %T %r'"
    )
    assert r.stdout == (
        f"JobID|State|ExitCode\n{jid}|FAILED|0:53\n{jid}.batch|CANCELLED|0:53\n"
        f"{jid} FAILED JobLaunchFailure\n"
    )
    assert not (jobdir / "nosuchdir").exists()  # Slurm never creates it


def test_cancel_kills_the_whole_process_tree(cluster, jobdir):
    jid = cluster.submit("--wrap 'sleep 300 & echo $! > child.pid; wait'", cwd=jobdir)
    pidfile = jobdir / "child.pid"
    deadline = time.monotonic() + 20
    while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pidfile.read_text())
    assert cluster.run(f"scancel {jid}").returncode == 0
    assert cluster.wait_done(jid) == "CANCELLED"
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
    r = cluster.run(f"sacct -P -n -j {jid} -o JobID,State,ExitCode")
    uid = os.getuid()
    assert r.stdout.splitlines() == [f"{jid}|CANCELLED by {uid}|0:0", f"{jid}.batch|CANCELLED|0:15"]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_pending_job_cancelled_and_squeue_filters(cluster, jobdir):
    big = cluster.submit("-N 3 -J toobig --wrap true", cwd=jobdir)
    r = cluster.run(f"squeue -h -j {big} -o '%i %T %r'")
    assert r.stdout == f"{big} PENDING PartitionNodeLimit\n"
    r = cluster.run("squeue --format='%i|%T' --states=all --noheader --name toobig")
    assert r.stdout == f"{big}|PENDING\n"
    assert cluster.run(f"squeue -h -u $(id -un) -t PD -o %i -j {big}").stdout == f"{big}\n"
    assert cluster.run(f"scancel {big}").returncode == 0
    assert cluster.run(f"squeue -h -j {big} -o %T").stdout == ""  # default states hide it
    r = cluster.run(f"sacct -n -P -j {big} -o JobID,State,NodeList")
    assert r.stdout == f"{big}|CANCELLED by {os.getuid()}|None assigned\n"


def test_third_gpu_job_waits_for_resources_then_runs(cluster, jobdir):
    ids = [cluster.submit("--gres=gpu:2 --wrap 'sleep 2'", cwd=jobdir) for _ in range(3)]
    deadline = time.monotonic() + 10
    text = ""
    while time.monotonic() < deadline:
        text = cluster.run(f"squeue -h -j {ids[2]} -o '%T %r'").stdout.strip()
        if text == "PENDING Resources":
            break
        time.sleep(0.05)
    assert text == "PENDING Resources"
    assert [cluster.wait_done(j) for j in ids] == ["COMPLETED"] * 3


def test_time_limit_ends_the_job_with_timeout(cluster, jobdir):
    # --time is in minutes, as in Slurm: this test waits just over one minute
    jid = cluster.submit("--time=1 --wrap 'echo started; trap \"\" TERM; sleep 600'", cwd=jobdir)
    assert cluster.wait_done(jid, timeout=100) == "TIMEOUT"
    out = (jobdir / f"slurm-{jid}.out").read_text().splitlines()
    assert out[0] == "started"
    assert re.fullmatch(
        rf"slurmstepd-n[12]: error: \*\*\* JOB {jid} ON n[12] CANCELLED AT "
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d DUE TO TIME LIMIT \*\*\*",
        out[1],
    )
    r = cluster.run(f"sacct -P -n -j {jid} -o JobID,State,ExitCode")
    # TERM was ignored, so KillWait later SIGKILL ended it
    assert r.stdout.splitlines() == [f"{jid}|TIMEOUT|0:0", f"{jid}.batch|CANCELLED|0:9"]
    # the cause, with the limit and the run time (slurmlite.failures), and explain's fix
    why = cluster.run(f"sacct -n -P -X -j {jid} -o SystemComment").stdout.strip()
    assert re.fullmatch(r"time limit 00:01:00 reached after 00:01:0\d of run time", why), why
    explained = cluster.run(f"slurmlite explain {jid}").stdout
    assert "fix: ask for more --time than 00:01:00" in explained


def test_export_controls_the_job_environment(cluster, jobdir):
    def echo(export: str) -> str:
        opt = f"--export={export} " if export else ""
        # FOO is set in the submitting shell's environment
        r = cluster.run(
            f"sbatch --parsable {opt}--wrap 'echo \"[$FOO] [$BAR]\"'", cwd=jobdir, FOO="from-shell"
        )
        jid = int(r.stdout)
        cluster.wait_done(jid)
        return (jobdir / f"slurm-{jid}.out").read_text()

    assert echo("") == "[from-shell] []\n"  # --export=ALL is the default
    assert echo("NONE") == "[] []\n"
    assert echo("BAR=set") == "[] [set]\n"
    assert echo("ALL,BAR=set") == "[from-shell] [set]\n"


def test_test_only_answers_without_submitting(cluster, jobdir):
    r = cluster.run("sbatch --test-only -N1 --wrap true", cwd=jobdir)
    assert r.returncode == 0 and r.stdout == ""
    assert re.fullmatch(
        r"sbatch: Job \d+ to start at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d using 1 processors "
        r"on nodes n[12] in partition debug\n",
        r.stderr,
    )
    job = int(r.stderr.split()[2])
    assert cluster.run(f"squeue -h -t all -j {job}").returncode == 1  # nothing was queued


def test_config_and_cluster_views_clients_parse(cluster):
    r = cluster.run("scontrol show config")
    assert "MinJobAge               = 300 sec" in r.stdout or re.search(
        r"^MinJobAge\s+= 300 sec$", r.stdout, re.M
    )
    assert re.search(r"^MaxArraySize\s+= 1001$", r.stdout, re.M)
    r = cluster.run("sinfo -o %C")
    assert r.stdout.splitlines()[0] == "CPUS(A/I/O/T)"
    assert re.fullmatch(r"\d+/\d+/0/4", r.stdout.splitlines()[1])
    assert cluster.run("scontrol show hostnames n[1-2]").stdout == "n1\nn2\n"


def test_scancel_signal_reaches_steps_not_the_batch_shell_unless_asked(cluster, jobdir):
    script = "trap 'echo got USR1; exit 0' USR1; echo ready; while :; do sleep 0.1; done"
    jid = cluster.submit(f'--wrap "{script}"', cwd=jobdir)
    out = jobdir / f"slurm-{jid}.out"
    deadline = time.monotonic() + 20
    while not (out.exists() and "ready" in out.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    # golden 52_scancel_signal_running: the default target is the job's steps; the batch shell keeps running
    assert cluster.run(f"scancel --signal=USR1 {jid}").returncode == 0
    deadline = time.monotonic() + 1.5  # long enough for a delivered signal to show
    while time.monotonic() < deadline:
        assert "got USR1" not in out.read_text()
        time.sleep(0.1)
    assert cluster.run(f"squeue -h -j {jid} -o %T").stdout == "RUNNING\n"
    # -b: the batch shell itself, whose trap ends the job
    assert cluster.run(f"scancel -b --signal=USR1 {jid}").returncode == 0
    assert cluster.wait_done(jid) == "COMPLETED"
    assert out.read_text() == "ready\ngot USR1\n"
