"""The job page's GPU sparkline is fed as usage arrives, not when someone looks.

Harness cluster: n1 and n2 with 2 GPUs each.  Alice's job holds n1's GPU 0;
n1's agent reports through its signed heartbeat route (and once more in the
job's completion), each report cumulative (``slurmlite.usage``).  Nobody
opens a page until the reports are in, and the page then draws one point per
report: the mean utilization of the interval since the previous one.
"""

from __future__ import annotations

import re

from controller.accounting.usage_history import UsageHistory
from slurmlite.protocol import JobCompletion
from slurmlite.usage import GpuUsage, UsageSummary
from tests.api.conftest import ALICE
from tests.api.test_allocation_usage import heartbeat
from tests.api.ui_client import logged_in

HEIGHT = 24  # spark_svg's default: y = 23 - percent / 100 * 22


def gpu_report(jid: int, samples: int, util_sum: float) -> UsageSummary:
    gpu = GpuUsage(0, samples, util_sum, util_max=100.0)
    return UsageSummary(jid, 0, samples, 100.0, 100.0 + 30 * samples, gpus=[gpu])


def spark_heights(html: str, gpu: str) -> list[float]:
    """The y of each point of the GPU row's polyline, left to right."""
    row = html[html.index(f'<tr data-gpu="{gpu}"') :]
    points = re.search(r'<polyline [^>]*points="([^"]*)"', row)
    assert points, f"no sparkline for {gpu}"
    return [float(xy.split(",")[1]) for xy in points.group(1).split()]


def test_two_heartbeats_make_two_points_at_their_intervals_means(harness):
    h = harness
    h.as_user(ALICE)
    jid = h.submit(gpus_per_node=1, nodes_min=1, time_limit=60)["job_id"]
    h.tick()
    assert h.job(jid)["nodes"] == ["n1"]
    assert heartbeat(h, "n1", gpu_report(jid, 10, 800.0)) == {"known": True}  # 800 / 10 = 80 %
    heartbeat(h, "n1", gpu_report(jid, 10, 800.0))  # the same report again: no new point
    heartbeat(h, "n1", gpu_report(jid, 20, 1000.0))  # (1000 - 800) / 10 = 20 %
    page = logged_in(h, ALICE).get(f"/ui/jobs/{jid}").text
    # 80 %: 23 - 0.8 * 22 = 5.4; 20 %: 23 - 0.2 * 22 = 18.6
    assert spark_heights(page, "n1:0") == [5.4, 18.6]
    assert "last 2 readings: 20 % now" in page
    # the job's end: its completion carries the last report, (1500 - 1000) / 10 = 50 %
    end = JobCompletion("n1", jid, 0, "batch", 0, usage=gpu_report(jid, 30, 1500.0))
    assert h.ctl.jobs.complete("n1", end)
    page = logged_in(h, ALICE).get(f"/ui/jobs/{jid}").text
    assert spark_heights(page, "n1:0") == [5.4, 18.6, 12.0]  # 23 - 0.5 * 22


def test_usage_from_before_the_controller_started_is_the_runs_mean_drawn_flat(harness):
    h = harness
    h.as_user(ALICE)
    jid = h.submit(gpus_per_node=1, nodes_min=1, time_limit=60)["job_id"]
    h.tick()
    heartbeat(h, "n1", gpu_report(jid, 10, 800.0))
    h.ctl.usage_history = UsageHistory(h.clock)  # a fresh memory, as after a restart
    page = logged_in(h, ALICE).get(f"/ui/jobs/{jid}").text
    assert spark_heights(page, "n1:0") == [5.4, 5.4]  # the stored run's mean, 80 %
    assert "last 1 readings: 80 % now" in page
