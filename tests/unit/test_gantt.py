"""The plan's Gantt: rows and bars from the listings (plan_rows), drawn as SVG (gantt).

The chart is 1000 units wide with a 120-unit label column and 10 units of
right padding, so a window of 7200 s maps t0 + s to x = 120 + s * 870 / 7200.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from controller.api.ui.gantt import LABEL_W, Bar, Row, gantt_svg, ticks
from controller.api.ui.plan_rows import chart, window
from slurmlite.protocol import JobInfo, NodeAlloc, NodeInfo

T0 = 1_800_000_000.0
SVG = "{http://www.w3.org/2000/svg}"


def a_node_info(name: str, gpus: int = 2) -> NodeInfo:
    gres = f"gpu:{gpus}" if gpus else "(null)"
    return NodeInfo(name, "127.0.0.1", name, 6818, 8, 16000, gres, gpus, "IDLE", [])


def a_job_info(job_id: int, state: str = "PENDING", **kw: Any) -> JobInfo:
    fields: dict[str, Any] = dict(
        job_id=job_id,
        name=f"job{job_id}",
        user="alice",
        uid=1001,
        gid=1001,
        group="alice",
        account="lab",
        qos="normal",
        partition="gpu",
        state=state,
        flags=[],
        reason="None",
        priority=1,
        submit_time=T0 - 600,
        work_dir="/tmp",
        submit_dir="/tmp",
        num_nodes=1,
        num_cpus=1,
        num_tasks=1,
        cpus_per_task=1,
        time_limit=60,
    )
    fields.update(kw)
    return JobInfo(**fields)


def bars_of(svg: str) -> dict[str, list[ET.Element]]:
    """The chart's bar rectangles by job id."""
    out: dict[str, list[ET.Element]] = {}
    for rect in ET.fromstring(svg).iter(f"{SVG}rect"):
        if "data-job-id" in rect.attrib:
            out.setdefault(rect.attrib["data-job-id"], []).append(rect)
    return out


def x_at(seconds: float) -> float:
    return LABEL_W + seconds * 870 / 7200


def test_bars_land_at_their_times_planned_hatched_and_a_now_line():
    rows = [Row("n1:0", "n1:0"), Row("n1:1", "n1:1")]
    bars = [
        Bar("n1:1", 5, T0, T0 + 3600, planned=False, user="alice", name="train"),
        Bar("n1:0", 6, T0 + 1800, T0 + 5400, planned=True, user="bob", name="eval"),
    ]
    svg = gantt_svg(rows, bars, now=T0 + 600, t0=T0, t1=T0 + 7200)
    found = bars_of(svg)
    running, planned = found["5"][0], found["6"][0]
    # job 5: x(0) = 120, x(3600) = 120 + 435 = 555
    assert running.attrib["class"] == "bar running"
    assert float(running.attrib["x"]) == pytest.approx(x_at(0), abs=0.1)
    assert float(running.attrib["width"]) == pytest.approx(x_at(3600) - x_at(0), abs=0.2)
    assert running.attrib["data-start"] == f"{T0:.0f}"
    assert running.attrib["data-end"] == f"{T0 + 3600:.0f}"
    assert not running.attrib["fill"].startswith("url(")
    # job 6: x(1800) = 337.5, on the first row (y = 30 + 3), hatched
    assert planned.attrib["class"] == "bar planned"
    assert float(planned.attrib["x"]) == pytest.approx(x_at(1800), abs=0.1)
    assert float(planned.attrib["y"]) == 33
    assert planned.attrib["fill"].startswith("url(#hatch-")
    assert planned.find(f"{SVG}title").text == "job 6 (bob) eval — planned"
    # the now line at x(600) = 192.5
    now = next(e for e in ET.fromstring(svg).iter(f"{SVG}line") if e.get("class") == "now")
    assert float(now.attrib["x1"]) == pytest.approx(x_at(600), abs=0.1)


def test_clipped_unlimited_and_escaped():
    rows = [Row("n3", "n3")]
    bars = [Bar("n3", 9, T0 - 3600, None, planned=False, user="eve", name="<script>")]
    svg = gantt_svg(rows, bars, now=T0, t0=T0, t1=T0 + 7200)
    rect = bars_of(svg)["9"][0]
    # started before the window: drawn from its left edge; UNLIMITED: to its right edge
    assert float(rect.attrib["x"]) == LABEL_W
    assert float(rect.attrib["width"]) == pytest.approx(870, abs=0.2)
    assert "open-ended" in rect.attrib["class"]
    assert rect.attrib["data-start"] == f"{T0 - 3600:.0f}" and rect.attrib["data-end"] == ""
    assert "&lt;script&gt;" in svg and "<script>" not in svg
    # with a link pattern, each bar opens its job's page
    linked = gantt_svg(rows, bars, now=T0, t0=T0, t1=T0 + 7200, href="/ui/jobs/{}")
    link = next(ET.fromstring(linked).iter(f"{SVG}a"))
    assert link.attrib["href"] == "/ui/jobs/9" and link.find(f"{SVG}rect") is not None


def test_ticks_are_round_and_within_the_window():
    # 2 hours: 15-minute ticks (7200 / 900 = 8 <= 10), on quarter hours of the local clock
    out = ticks(T0 + 100, T0 + 7300)
    assert len(out) in (8, 9) and all(b - a == 900 for a, b in zip(out, out[1:], strict=False))
    assert all(T0 + 100 <= t <= T0 + 7300 for t in out)


def test_chart_rows_per_gpu_and_planned_jobs_take_free_gpus():
    nodes = [a_node_info("n1", gpus=2), a_node_info("n3", gpus=0)]
    jobs = [
        # job 5 runs on GPU 1 of n1 until T0 + 3600
        a_job_info(5, "RUNNING", start_time=T0, gpus=1, alloc=[NodeAlloc("n1", 1, 0, [1])]),
        # a CPU job on n3 and one on the GPU node n1 (a "n1 CPUs" row)
        a_job_info(8, "RUNNING", start_time=T0, alloc=[NodeAlloc("n3", 2, 0, [])]),
        a_job_info(10, "RUNNING", start_time=T0, alloc=[NodeAlloc("n1", 1, 0, [])]),
        # job 6 (1 GPU) planned at T0 + 1800: GPU 0 is free then -> n1:0
        a_job_info(6, sched_start=T0 + 1800, sched_nodes=["n1"], gpus=1, time_limit=30),
        # job 7 (2 GPUs) at T0 + 3600: both free once 5 and 6 end -> n1:0 and n1:1
        a_job_info(7, sched_start=T0 + 3600, sched_nodes=["n1"], gpus=2),
        # pending without an estimate: no bar
        a_job_info(11, gpus=1),
    ]
    rows, bars = chart(nodes, jobs)
    assert [r.key for r in rows] == ["n1:0", "n1:1", "n1:cpu", "n3"]
    where = {(b.job_id, b.row, b.planned) for b in bars}
    assert where == {
        (5, "n1:1", False),
        (8, "n3", False),
        (10, "n1:cpu", False),
        (6, "n1:0", True),
        (7, "n1:0", True),
        (7, "n1:1", True),
    }
    job7 = [b for b in bars if b.job_id == 7]
    assert {(b.start, b.end) for b in job7} == {(T0 + 3600, T0 + 7200)}


def test_window_reaches_the_last_end_within_the_horizon():
    bars = [Bar("n1:0", 1, T0, T0 + 5 * 3600, planned=True)]
    # last end 5 h ahead: t1 = +5 h, t0 = now - 1 h (a fifth of the span)
    assert window(bars, T0) == (T0 - 3600, T0 + 5 * 3600)
    # nothing ahead: one hour, and at least 10 minutes behind now
    assert window([], T0) == (T0 - 720, T0 + 3600)
    # a horizon of 2 hours cuts the chart there
    assert window(bars, T0, horizon=7200)[1] == T0 + 7200
