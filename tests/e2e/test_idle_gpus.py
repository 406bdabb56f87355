"""Idle GPUs on a real local cluster: the agents sample fake GPUs, the controller acts.

The fake GPUs read ``$SLURMLITE_FAKE_GPU_STATE`` (``slurmlite.fakegpu``) at
every sample: absent or empty, every GPU is idle (0 %).  The cluster samples
every second (``JobAcctGatherFrequency=1``) and the policy is short: flagged
after 3 s under 5 %, cancelled 10 s after the flag.  The test flags a job,
makes its GPUs busy (the flag clears), lets them idle again and sees it
cancelled, as a user would: squeue, slurmlite explain, sacct, the job's output
-- where each flag leaves one warning line while the job still runs, and the
kill line comes last.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.e2e.conftest import fake_gpu_state, local_cluster, wait_for


def reason(c, job_id: int) -> str:  # type: ignore[no-untyped-def]
    return c.run(f"squeue -h -j {job_id} -o '%T %r'").stdout.strip()


def warnings_in(out: Path) -> list[str]:
    """The idle-GPU warning lines in the job's output so far."""
    text = out.read_text() if out.exists() else ""
    return [line for line in text.splitlines() if ": warning: job " in line]


def test_an_idle_job_is_flagged_cleared_by_use_then_cancelled(tmp_path, monkeypatch):
    state = fake_gpu_state(tmp_path, monkeypatch, {})  # every GPU idle
    with local_cluster(
        "slurmlite-idle-",
        nodelist="g[1-2]",
        cpus_per_node=2,
        gpus_per_node=2,
        mem_per_node=2000,
        extra_conf=(
            "JobAcctGatherFrequency=1",
            "SlurmliteIdleGpuPolicy=threshold=5,window=0:03,grace=0:10,action=cancel",
        ),
    ) as c:
        work = c.new_workdir()
        job = c.submit(f"--gpus=2 -N1 -o {work}/out.txt --wrap 'sleep 120'")
        wait_for(lambda: reason(c, job) == "RUNNING GpusIdle", 30, "the idle flag")
        text = c.run(f"slurmlite explain {job}").stdout
        assert "GPUs idle since" in text and "will be cancelled at" in text, text
        out = Path(work / "out.txt")  # stdout and stderr: the warning goes to stderr
        wait_for(lambda: len(warnings_in(out)) == 1, 10, "the warning in the job's output")
        assert reason(c, job).startswith("RUNNING ")  # the job runs on: only warned so far
        [line] = warnings_in(out)
        pattern = (
            rf"slurmstepd-g[12]: warning: job {job}: its GPUs have been under 5 % for 0:03; "
            r"it will be cancelled at \S+ unless they get busy \(SlurmliteIdleGpuPolicy\)"
        )
        assert re.fullmatch(pattern, line), line
        busy = {str(i): {"util": 90} for i in range(2)}
        state.write_text(json.dumps(busy))
        wait_for(lambda: reason(c, job) == "RUNNING None", 8, "the flag to clear")
        state.write_text("{}")
        wait_for(lambda: len(warnings_in(out)) == 2, 15, "the second flag's warning")
        assert reason(c, job) == "RUNNING GpusIdle"  # warned again, not cancelled yet
        assert c.wait_done(job, 40) == "CANCELLED"
        sacct = c.run(f"sacct -X -n -j {job} -o State,Reason%12").stdout.split()
        assert sacct == ["CANCELLED", "GpusIdle"], sacct
        wait_for(lambda: "DUE TO IDLE GPUS" in out.read_text(), 10, "the line")
        lines = out.read_text().splitlines()
        assert "DUE TO IDLE GPUS" in lines[-1] and len(warnings_in(out)) == 2, lines
