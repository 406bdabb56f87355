"""``sbatch --signal`` on the real local cluster: the warning reaches the right processes.

Both jobs have a 1-minute limit and ask for SIGUSR1 57 s before it, so it is
due 60 - 57 = 3 s after they start (the controller looks every second); each
would sleep 50 s if it never came.  Without ``B:`` the step's tasks get it and
the batch shell does not (Slurm's default target); with ``B:`` only the batch
shell does.
"""

from __future__ import annotations

import time

STEPS = """\
#!/bin/bash
#SBATCH --time=1 --signal=USR1@57
trap 'echo batch got USR1' USR1
srun bash -c 'trap "echo step got USR1; exit 0" USR1; sleep 50 & wait'
echo batch done
"""

BATCH = """\
#!/bin/bash
#SBATCH --time=1 --signal=B:USR1@57
trap 'echo batch got USR1; kill %1; exit 0' USR1
sleep 50 &
srun bash -c 'trap "echo step got USR1" USR1; sleep 50 & wait' &
wait %1
echo not reached
"""


def test_the_warning_goes_to_the_steps_or_with_b_to_the_batch_shell(cluster, jobdir):
    (jobdir / "steps.sh").write_text(STEPS)
    (jobdir / "batch.sh").write_text(BATCH)
    started = time.monotonic()
    r = cluster.run("sbatch --parsable steps.sh && sbatch --parsable batch.sh", jobdir)
    assert r.returncode == 0, r.stderr
    steps_job, batch_job = r.stdout.split()
    assert cluster.wait_done(steps_job, timeout=45) == "COMPLETED"
    assert cluster.wait_done(batch_job, timeout=45) == "COMPLETED"
    assert time.monotonic() - started < 40  # well before the 50 s sleeps would end
    assert (jobdir / f"slurm-{steps_job}.out").read_text() == "step got USR1\nbatch done\n"
    text = (jobdir / f"slurm-{batch_job}.out").read_text()
    # the B: job's step was ended with the job, unsignalled: it never printed its line
    assert text.startswith("batch got USR1\n") and "step got" not in text, text
