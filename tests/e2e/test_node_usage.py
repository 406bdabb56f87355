"""Every node of a job reports what it used: steps on a batch job's other nodes, and
``salloc`` allocations, which have no batch script, on a real local cluster.

Nodes g1 and g2 have fake GPUs reading ``$SLURMLITE_FAKE_GPU_STATE``
(``slurmlite.fakegpu``); the agents sample every second
(``JobAcctGatherFrequency=1``).

* A two-node batch job (one GPU per node) whose ``srun`` spins only on its
  second node: ``seff`` shows both nodes' GPU 0 and ``sacct`` a CPU time
  that only the second node's step can have used.
* An ``salloc`` holding two GPUs whose step does nothing with them is judged
  by the same GPU signal as a batch job (threshold 5 %, window 3 s): flagged
  ``GpusIdle``, cleared once the GPUs are busy, cancelled when they idle
  again (an allocation cannot be requeued).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.e2e.conftest import fake_gpu_state, local_cluster, wait_for

# about 3 s of CPU time however loaded the machine is (a fixed amount of work)
SPIN = "for ((i=0; i<3000000; i++)); do :; done"
SCRIPT = f"""#!/bin/bash
srun -N2 -n2 bash -c '[ "$SLURM_NODEID" = 1 ] && {{ {SPIN}; }}; true'
"""


def seconds(text: str) -> float:
    """sacct's ``[D-][HH:]MM:SS[.mmm]`` as seconds."""
    days, _, rest = text.rpartition("-")
    parts = [float(x) for x in rest.split(":")]
    return float(days or 0) * 86400 + sum(x * 60**i for i, x in enumerate(reversed(parts)))


def test_a_two_node_jobs_usage_counts_both_nodes(tmp_path, monkeypatch):
    fake_gpu_state(tmp_path, monkeypatch, {"0": {"util": 90, "mem_used_mib": 2048}})
    with local_cluster(
        "slurmlite-nodes-",
        nodelist="g[1-2]",
        cpus_per_node=2,
        gpus_per_node=2,
        mem_per_node=2000,
        cluster_name="lab",
        extra_conf=("JobAcctGatherFrequency=1",),
    ) as c:
        work = c.new_workdir()
        (work / "job.sh").write_text(SCRIPT)
        job = c.submit(f"-N2 --gpus-per-node=1 -c1 --mem=200 -o {work}/out.txt {work}/job.sh")
        assert c.wait_done(job, 120) == "COMPLETED", (work / "out.txt").read_text()

        seff = c.run(f"{sys.executable} -m cli.seff {job}")
        assert seff.returncode == 0, seff.stderr
        lines = seff.stdout.splitlines()
        for node in ("g1", "g2"):  # each node's GPU 0, read at 90 % on both
            assert any(
                x.startswith(f"GPU 0 on {node}") and "utilization 90.00% (max 90%)" in x
                for x in lines
            ), lines
        assert "GPU Utilization: 90.00% average over 2 GPUs (time a kernel ran)" in lines

        r = c.run(f"sacct -P -n -j {job} -o JobID,TotalCPU,AveCPU")
        rows = {line.split("|")[0]: line.split("|")[1:] for line in r.stdout.splitlines()}
        total, ave = rows[f"{job}.batch"]
        # g2's step spun ~3 s; g1 ran only the script and srun: the sum has g2's share,
        # and the mean over the two nodes is half of it
        assert seconds(total) >= 2.0, r.stdout
        assert abs(seconds(ave) - seconds(total) / 2) < 1.0, r.stdout


def squeue(c, job: int) -> str:  # type: ignore[no-untyped-def]
    return c.run(f"squeue -h -j {job} -o '%T %r'").stdout.strip()


def test_an_salloc_whose_gpus_idle_is_flagged_cleared_by_use_then_cancelled(tmp_path, monkeypatch):
    state = fake_gpu_state(tmp_path, monkeypatch, {})  # every GPU idle
    with local_cluster(
        "slurmlite-allocidle-",
        nodelist="g[1-2]",
        cpus_per_node=2,
        gpus_per_node=2,
        mem_per_node=2000,
        extra_conf=(
            "JobAcctGatherFrequency=1",
            "SlurmliteIdleGpuPolicy=threshold=5,window=0:03,grace=0:10,action=cancel",
        ),
    ) as c:
        salloc = subprocess.Popen(
            ["salloc", "--gpus=2", "-N1", "srun", "sleep", "300"],
            cwd=c.work, env=c.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, start_new_session=True,
        )  # fmt: skip
        try:
            found = wait_for(lambda: c.run("squeue -h -o %i").stdout.split(), 30, "the allocation")
            job = int(found[0])
            wait_for(lambda: squeue(c, job) == "RUNNING GpusIdle", 30, "the idle flag")
            text = c.run(f"slurmlite explain {job}").stdout
            assert "GPUs idle since" in text and "will be cancelled at" in text, text
            state.write_text(json.dumps({str(i): {"util": 90} for i in range(2)}))
            wait_for(lambda: squeue(c, job) == "RUNNING None", 10, "the flag to clear")
            state.write_text("{}")
            assert c.wait_done(job, 40) == "CANCELLED"
            _, err = salloc.communicate(timeout=30)
        finally:
            if salloc.poll() is None:
                salloc.kill()
                salloc.wait()
        sacct = c.run(f"sacct -X -n -j {job} -o State,Reason%12").stdout.split()
        assert sacct == ["CANCELLED", "GpusIdle"], sacct
        assert re.search(rf"\*\*\* STEP {job}\.0 ON g\d CANCELLED AT ", err), err
