"""The plan's Gantt puts a pending job's bar where the scheduler expects it to start.

A blocker holds all 8 GPUs (2 nodes x 4) with a 5-minute limit; a 2-GPU job
waits for it.  The backfill plan gives the waiting job an estimate, which
``squeue --start`` (%S) and ``scontrol show job`` (StartTime) print; the
page must agree with them to the second:

    blocker starts at t0, TimeLimit 5:00  -> running bars end at EndTime = t0 + 300
    waiting job's StartTime = t0 + 300 rounded up to the plan's grain
        (bf_resolution, 60 s, as Slurm's)   -> planned bars start there

On screen the bars share one time axis: the planned bar, 3 minutes wide,
gives the scale (px per second), and its left edge lies that many px per
second of (StartTime - EndTime) right of the blocker's end, within 2 px.

The what-if page, asked for 2 GPUs for 3 minutes in the same state, answers
"About HH:MM, ... behind job <blocker>" with the start ``sbatch --test-only``
gives for the same request: the same dry run behind both.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import wait_for
from tests.ui.browser import epoch
from tests.ui.conftest import cancel_all, expected_start, job_state, sbatch_as


@pytest.fixture
def blocked(cluster) -> Iterator[tuple[int, int]]:  # type: ignore[no-untyped-def]
    jobs: list[int] = []
    try:
        args = ["-N2", "--gres=gpu:4", "-t", "5", "-J", "blocker", "--wrap", "sleep 300"]
        jobs.append(sbatch_as(cluster, None, args))
        wait_for(lambda: job_state(cluster, jobs[0]) == "RUNNING", 20, "the blocker to run")
        jobs.append(sbatch_as(cluster, None, ["--gres=gpu:2", "-t", "3", "--wrap", "true"]))
        yield jobs[0], jobs[1]
    finally:
        cancel_all(cluster, jobs)


def scontrol_time(cluster, job: int, key: str) -> float:  # type: ignore[no-untyped-def]
    out = cluster.run(f"scontrol show job {job}").stdout
    found = re.search(rf"\b{key}=(\S+)", out)
    assert found, out
    return epoch(found.group(1))


def test_planned_bar_starts_at_the_estimate(dashboard, cluster, blocked) -> None:
    blocker, waiting = blocked
    estimate = epoch(wait_for(lambda: expected_start(cluster, waiting), 10, "an estimate"))
    assert scontrol_time(cluster, waiting, "StartTime") == estimate
    blocker_end = scontrol_time(cluster, blocker, "EndTime")
    assert blocker_end <= estimate < blocker_end + 60  # when the blocker's limit ends

    ui = dashboard()
    ui.goto("/ui/plan")
    planned = ui.page.locator(f'svg [data-job-id="{waiting}"].planned')
    running = ui.page.locator(f'svg [data-job-id="{blocker}"].running')
    assert running.count() == 8, "one running bar per GPU the blocker holds"
    assert planned.count() == 2, "one planned bar per GPU the waiting job asks for"
    for bar in planned.all():
        assert abs(epoch(bar.get_attribute("data-start") or "") - estimate) <= 1
    for bar in running.all():
        assert abs(epoch(bar.get_attribute("data-end") or "") - blocker_end) <= 1

    run_box, plan_box = running.first.bounding_box(), planned.first.bounding_box()
    assert run_box and plan_box and plan_box["width"] > 0, "bars are drawn"
    px_per_s = plan_box["width"] / (3 * 60)
    gap = plan_box["x"] - (run_box["x"] + run_box["width"])
    assert abs(gap - (estimate - blocker_end) * px_per_s) <= 2, (run_box, plan_box)
    ui.console.assert_none()


def test_whatif_answers_as_sbatch_test_only(dashboard, cluster, blocked) -> None:
    blocker, _ = blocked
    ui = dashboard()
    ui.goto("/ui/whatif")
    ui.page.fill("#gpus", "2")
    ui.page.fill("#time", "3")
    ui.page.locator("#whatif-form button[type=submit]").click()
    ui.page.wait_for_load_state("load")
    head = ui.page.locator("#answer .headline").inner_text()
    assert head.startswith("About") and str(blocker) in head, head
    shown = epoch(ui.page.locator("#answer time").inner_text())
    r = cluster.run("sbatch --test-only --gpus=2 -t 3 --wrap true")
    found = re.search(r"to start at (\S+)", r.stderr)
    assert found, r.stderr
    assert shown == epoch(found.group(1)), (head, r.stderr)
    ui.console.assert_none()
