"""The job page's GPU sparkline on a real cluster: the line follows the GPU as it runs.

slurmctld and one agent on loopback; the agent's fake GPUs read
``$SLURMLITE_FAKE_GPU_STATE`` (``slurmlite.fakegpu``) and it samples every
second (``JobAcctGatherFrequency=1``), reporting with each heartbeat.  The
GPU is busy at 90 %, then drops to 10 %: the page draws one point per
interval between reports (the controller keeps them as the heartbeats
arrive, ``controller.accounting.usage_history``), each at that interval's
mean -- 90, 90, 90, ..., then 10 -- not the run's mean so far.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

from slurmlite import fakegpu
from tests.e2e.conftest import local_cluster, wait_for

LINK = re.compile(r"(https?://\S+)/ui/login\?token=\S+")


def set_util(path: Path, percent: int) -> None:
    state = {str(i): {"util": percent, "mem_used_mib": 1024} for i in range(2)}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    tmp.chmod(0o644)
    tmp.replace(path)  # agents never read half a file


def percents(html: str) -> list[float]:
    """The sparkline's points as percentages (its y: 23 - percent / 100 * 22)."""
    if "<tr data-gpu=" not in html:
        return []  # no usage reported yet
    row = html[html.index("<tr data-gpu=") :]
    found = re.search(r'<polyline [^>]*points="([^"]*)"', row)
    ys = [float(xy.split(",")[1]) for xy in found.group(1).split()] if found else []
    return [round((23 - y) / 22 * 100) for y in ys]


def test_the_sparkline_draws_each_intervals_mean_as_reported(tmp_path, monkeypatch):
    state = tmp_path / "gpus.json"
    tmp_path.chmod(0o755)
    set_util(state, 90)
    monkeypatch.setenv(fakegpu.ENV, str(state))  # the agent started below inherits it
    with local_cluster(
        "slurmlite-spark-",
        nodelist="s1",
        gpus_per_node=2,
        extra_conf=("JobAcctGatherFrequency=1",),
    ) as c:
        job = c.submit("--gpus=1 -t 10 --wrap 'sleep 120'")
        r = c.run("slurmlite ui")
        assert r.returncode == 0, r.stderr
        found = LINK.search(r.stdout)
        assert found, r.stdout
        with httpx.Client(base_url=found.group(1), timeout=10) as browser:
            assert browser.get(found.group(0), follow_redirects=True).status_code == 200

            def line(enough) -> list[float] | None:  # type: ignore[no-untyped-def]
                points = percents(browser.get(f"/ui/jobs/{job}").text)
                return points if enough(points) else None

            busy = wait_for(lambda: line(lambda p: len(p) >= 3), 60, "three intervals")
            assert set(busy) == {90}, busy  # each interval's mean, not the run's
            set_util(state, 10)
            after = wait_for(lambda: line(lambda p: p[-1] == 10), 30, "an interval at 10 %")
            assert after[:3] == busy[:3]  # the busy stretch is still drawn
        c.run(f"scancel {job}")
        assert c.wait_done(job) == "CANCELLED"
