"""Job efficiency on a real local cluster: agents sample, sacct and seff show it.

Nodes g1 and g2 have 4 fake GPUs each, which read ``$SLURMLITE_FAKE_GPU_STATE``
(``slurmlite.fakegpu``): GPU 0 is busy at 90 % with 2 GiB, the others idle.
The agents sample every second (``JobAcctGatherFrequency=1``).  A 4-GPU job
spins one core until it has used 3 s of CPU (CPU time, not wall time: on a
loaded machine a wall-time spin gets only a share of a core); afterwards sacct shows its CPU time, memory and GPU
figures, and seff tells the user that only one of the four GPUs was used.
"""

from __future__ import annotations

import re
import sys

from tests.e2e.conftest import fake_gpu_state, local_cluster

SPIN = f"""#!/bin/bash
{sys.executable} -c 'import time
while time.process_time() < 3.0: pass'
"""


def test_sacct_and_seff_show_what_a_four_gpu_job_used(tmp_path, monkeypatch):
    fake_gpu_state(tmp_path, monkeypatch, {"0": {"util": 90, "mem_used_mib": 2048}})
    with local_cluster(
        "slurmlite-eff-",
        nodelist="g[1-2]",
        cpus_per_node=2,
        gpus_per_node=4,
        mem_per_node=2000,
        cluster_name="lab",
        extra_conf=("JobAcctGatherFrequency=1",),
    ) as c:
        work = c.new_workdir()
        (work / "spin.sh").write_text(SPIN)
        job = c.submit(f"--gpus=4 -N1 -c1 --mem=500 -o {work}/out.txt {work}/spin.sh")
        assert c.wait_done(job, 60) == "COMPLETED"

        r = c.run(f"sacct -P -n -j {job} -o JobID,TotalCPU,MaxRSS,TRESUsageInAve")
        rows = {line.split("|")[0]: line.split("|")[1:] for line in r.stdout.splitlines()}
        total, maxrss, ave = rows[f"{job}.batch"]
        assert rows[str(job)][0] == total and maxrss.endswith(("K", "M")), r.stdout
        seconds = sum(float(x) * 60**i for i, x in enumerate(reversed(re.split("[:]", total))))
        assert 2.5 <= seconds <= 8.0, total  # one core spun for 3 s of CPU
        # GPU 0 at 90 % (the others idle: the step's sum is 90) with 2 GiB
        assert "gres/gpumem=2147483648,gres/gpuutil=90," in ave, ave

        seff = c.run(f"{sys.executable} -m cli.seff {job}")
        assert seff.returncode == 0, seff.stderr
        lines = seff.stdout.splitlines()
        assert lines[:4] == [f"Job ID: {job}", "Cluster: lab", f"User/Group: {_user(lines)}",
                             "State: COMPLETED (exit code 0)"]  # fmt: skip
        assert any(re.fullmatch(r"CPU Efficiency: \d+\.\d\d% of 00:0\d:\d\d core-walltime", x)
                   for x in lines), lines  # fmt: skip
        assert any(
            x.startswith("GPU 0 on g") and "utilization 90.00% (max 90%)" in x for x in lines
        )
        assert "GPU Utilization: 22.50% average over 4 GPUs (time a kernel ran)" in lines
        assert lines[-1] == "Advice: this job used 1 of its 4 GPUs; ask for --gpus=1"

        gone = c.run(f"{sys.executable} -m cli.seff 999999")
        assert (gone.returncode, gone.stdout, gone.stderr) == (2, "", "Job not found.\n")
        text = c.run(f"slurmlite explain {job}").stdout
        assert "Advice: this job used 1 of its 4 GPUs; ask for --gpus=1" in text, text


def _user(lines: list[str]) -> str:
    return next(x for x in lines if x.startswith("User/Group: ")).split(": ", 1)[1]
