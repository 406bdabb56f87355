"""Screenshots of the overview and the plan, of a lab in mid-afternoon.

Two users share gpu1 and gpu2 (4 fake GPUs each).  Four jobs run on 7 of
the 8 GPUs (3 + 2 + 1 + 1); a job asking for both nodes whole waits for the
longest of them, and a 2-GPU job waits too, so the overview has busy and
idle GPUs, and the plan running bars, planned (hatched) bars and the "now"
line:

    finetune  root  3 GPUs  60 min   running
    sweep     dora  2 GPUs  30 min   running
    notebook  root  1 GPU   20 min   running
    eval      root  1 GPU   45 min   running
    pretrain  dora  8 GPUs 120 min   planned at finetune's end
    ablation  root  2 GPUs  30 min   planned

The pictures are saved as test artifacts under ``$SLURMLITE_ARTIFACTS``
(default ``tests/artifacts/``, git-ignored) as ``dashboard-overview.png``
and ``dashboard-plan.png``.  With ``SLURMLITE_SCREENSHOTS_TO=docs/images``
(``make screenshots``) they are also copied there, for the README.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.e2e.conftest import wait_for
from tests.ui.browser import artifacts_dir
from tests.ui.conftest import cancel_all, expected_start, job_state, sbatch_as

RUNNING = [  # (user is dora?, name, GPUs, minutes)
    (False, "finetune", 3, 60),
    (True, "sweep", 2, 30),
    (False, "notebook", 1, 20),
    (False, "eval", 1, 45),
]
PLANNED = [(True, "pretrain", 8, 120), (False, "ablation", 2, 30)]


def submit(cluster, dora, who: bool, name: str, gpus: int, minutes: int) -> int:  # type: ignore[no-untyped-def]
    gres = ["-N2", "--gres=gpu:4"] if gpus == 8 else [f"--gres=gpu:{gpus}"]
    args = [*gres, "-t", str(minutes), "-J", name, "--wrap", "sleep 3600"]
    return sbatch_as(cluster, dora if who else None, args)


def test_screenshots_of_overview_and_plan(dashboard, cluster, dora) -> None:
    jobs: list[int] = []
    try:
        for who, name, gpus, minutes in RUNNING:
            jobs.append(submit(cluster, dora, who, name, gpus, minutes))
            wait_for(lambda j=jobs[-1]: job_state(cluster, j) == "RUNNING", 20, f"{name} to run")
        for who, name, gpus, minutes in PLANNED:
            jobs.append(submit(cluster, dora, who, name, gpus, minutes))
        waiting = jobs[len(RUNNING) :]
        wait_for(lambda: all(expected_start(cluster, j) for j in waiting), 10, "estimates")
        ui = dashboard()
        saved = []
        for path, picture in (
            ("/ui/", "dashboard-overview.png"),
            ("/ui/plan", "dashboard-plan.png"),
        ):
            ui.goto(path)
            ui.page.wait_for_timeout(300)
            target = artifacts_dir() / picture
            ui.page.screenshot(path=str(target), full_page=True)
            assert target.stat().st_size > 10_000, f"{picture} is nearly empty"
            saved.append(target)
        ui.console.assert_none()
    finally:
        cancel_all(cluster, jobs)
    copy_to = os.environ.get("SLURMLITE_SCREENSHOTS_TO")
    if copy_to:
        Path(copy_to).mkdir(parents=True, exist_ok=True)
        for picture in saved:
            shutil.copyfile(picture, Path(copy_to) / picture.name)
