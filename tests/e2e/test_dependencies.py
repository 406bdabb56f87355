"""Dependencies on a real local cluster: an afterok chain runs in order, afternotok
follows a failure, singleton waits for its namesake (spec §1.8)."""

from __future__ import annotations

from tests.e2e.conftest import wait_for


def test_afterok_chain_runs_in_order(cluster, jobdir):
    log = jobdir / "order.txt"
    ids: list[int] = []
    for i in range(3):
        dep = f"--dependency=afterok:{ids[-1]} " if ids else ""
        ids.append(cluster.submit(f"{dep}--wrap 'sleep 0.3; echo {i} >> {log}'", cwd=jobdir))
    assert [cluster.wait_done(j) for j in ids] == ["COMPLETED"] * 3
    assert log.read_text().split() == ["0", "1", "2"]


def test_afternotok_runs_after_a_failing_job(cluster, jobdir):
    bad = cluster.submit("--wrap 'exit 3'", cwd=jobdir)
    after = cluster.submit(f"--dependency=afternotok:{bad} --wrap true", cwd=jobdir)
    assert cluster.wait_done(bad) == "FAILED"
    assert cluster.wait_done(after) == "COMPLETED"


def test_singleton_waits_for_the_same_name(cluster, jobdir):
    log = jobdir / "solo.txt"
    first = cluster.submit(f"-J solo --wrap 'sleep 1; echo first >> {log}'", cwd=jobdir)
    second = cluster.submit(
        f"-J solo --dependency=singleton --wrap 'echo second >> {log}'", cwd=jobdir
    )
    assert cluster.wait_done(first) == "COMPLETED"
    assert cluster.wait_done(second) == "COMPLETED"
    assert log.read_text().split() == ["first", "second"]


def test_srun_and_salloc_allocations_wait_for_their_dependency(cluster, jobdir):
    log = jobdir / "alloc.txt"
    first = cluster.submit(f"--wrap 'sleep 2; echo first >> {log}'", cwd=jobdir)
    r = cluster.run(
        f"srun --dependency=afterok:{first} bash -c 'echo srun >> {log}'", cwd=jobdir, timeout=90
    )
    assert r.returncode == 0, r.stderr
    assert cluster.wait_done(first) == "COMPLETED"
    r = cluster.run(
        f"salloc -d afterany:{first} bash -c 'echo salloc $SLURM_JOB_ID >> {log}'",
        cwd=jobdir,
        timeout=90,
    )
    assert r.returncode == 0, r.stderr
    lines = log.read_text().splitlines()  # first sleeps 2 s: srun waited for it
    assert lines[:2] == ["first", "srun"] and lines[2].startswith("salloc "), lines
    r = cluster.run("srun -d afterok:x true", cwd=jobdir)
    assert (r.returncode, r.stderr) == (
        1,
        "srun: error: Unable to allocate resources: Job dependency problem\n",
    )


def test_aftercorr_starts_each_task_when_its_own_target_task_ends(cluster, jobdir):
    log = jobdir / "corr.txt"
    # task 0 of the target takes 4 s, task 1 none
    work = f"sleep $((4 - 4 * SLURM_ARRAY_TASK_ID)); echo t$SLURM_ARRAY_TASK_ID >> {log}"
    target = cluster.submit(f"--array=0-1 --wrap '{work}'", cwd=jobdir)
    cluster.submit(
        f"--array=0-1 --dependency=aftercorr:{target} --wrap 'echo c$SLURM_ARRAY_TASK_ID >> {log}'",
        cwd=jobdir,
    )
    lines = wait_for(
        lambda: (
            len(log.read_text().split()) == 4 and log.read_text().split() if log.exists() else None
        ),
        timeout=60,
        what="both arrays' four tasks",
    )
    # c1 ran as soon as t1 ended, before the slow t0 ended; c0 only after t0
    assert lines.index("t1") < lines.index("c1") < lines.index("t0") < lines.index("c0"), lines
