"""Job arrays on a real cluster: every task runs once, with its variables and its files."""

from __future__ import annotations

from tests.e2e.conftest import wait_for


def test_an_array_with_a_throttle_runs_every_task_once(cluster, jobdir):
    (jobdir / "arr.sh").write_text(
        "#!/bin/bash\n#SBATCH --array=0-4%2\n#SBATCH --output=arr-%A_%a-%j.out\n"
        'echo "$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_JOB_ID'
        ' $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX"\n'
        "sleep 0.3\n"
    )
    jid = cluster.submit("arr.sh", cwd=jobdir)

    def ended() -> list[str] | None:
        r = cluster.run(f"sacct -X -n -P -j {jid} -o JobID,JobIDRaw,State", cwd=jobdir)
        lines = r.stdout.split()
        done = [x for x in lines if x.endswith("|COMPLETED")]
        return lines if len(done) == 5 else None

    try:
        lines = wait_for(ended, timeout=60, what="5 tasks COMPLETED in sacct")
    except AssertionError:
        every = cluster.run(
            "sacct -X -a -n -P -o JobID,JobIDRaw,State; squeue -a -t all", cwd=jobdir
        )
        raise AssertionError(every.stdout + every.stderr) from None
    tasks = {line.split("|")[0]: int(line.split("|")[1]) for line in lines}
    assert sorted(tasks) == [f"{jid}_{i}" for i in range(5)]
    assert tasks[f"{jid}_4"] == jid  # the master ran last, as the highest index
    files = sorted(p.name for p in jobdir.glob("arr-*.out"))
    assert files == sorted(f"arr-{jid}_{i}-{tasks[f'{jid}_{i}']}.out" for i in range(5))
    for i in range(5):
        out = (jobdir / f"arr-{jid}_{i}-{tasks[f'{jid}_{i}']}.out").read_text().split()
        assert out == [str(jid), str(i), str(tasks[f"{jid}_{i}"]), "5", "0", "4"]
