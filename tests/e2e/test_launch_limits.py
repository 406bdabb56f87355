"""On a real cluster, a job the controller accepts is one the agent launches.

``--time=99999999`` is accepted by Slurm and runs; here it used to be
accepted too and then refused by the agent (its launch's ``time_limit_s``,
99,999,999 minutes in seconds, was past the agent's 32-bit range): the job
ended FAILED and its batch step stayed RUNNING.  Both daemons now check one
table (``slurmlite.wire_limits``).  The job runs an ``srun`` too, whose
step launch carries the job's remaining time, as long.
"""

from __future__ import annotations


def test_the_longest_time_limit_slurm_takes_runs_a_batch_script_and_its_step(cluster, jobdir):
    jid = cluster.submit("--time=99999999 --wrap 'srun true'", cwd=jobdir)
    assert cluster.wait_done(jid) == "COMPLETED"
    r = cluster.run(f"sacct -n -P -j {jid} -o JobID,State,ExitCode")
    assert r.returncode == 0, r.stderr
    rows = [line.split("|") for line in r.stdout.split()]
    assert rows == [
        [str(jid), "COMPLETED", "0:0"],
        [f"{jid}.batch", "COMPLETED", "0:0"],
        [f"{jid}.0", "COMPLETED", "0:0"],
    ], r.stdout


def test_a_job_whose_ld_preload_cannot_be_loaded_runs(cluster, jobdir):
    # the loader warns at every exec (sbatch's own included); the job still runs, as in Slurm
    missing = "/nonexistent/libnothing.so"
    r = cluster.run("sbatch --parsable --wrap 'echo ran'", cwd=jobdir, LD_PRELOAD=missing)
    assert r.returncode == 0 and missing in r.stderr, r.stderr
    jid = int(r.stdout.strip())
    assert cluster.wait_done(jid) == "COMPLETED"
    assert "ran\n" in (jobdir / f"slurm-{jid}.out").read_text()
