"""Every dashboard view loads in a real browser, with no console error, and shows the cluster.

The login page is checked as a visitor with no session sees it; each view
as root (an operator) in a fresh browser context, and all of them as dora,
who may act on none of what they show.

Setting (``tests/ui/conftest.py``): nodes gpu1 and gpu2, 4 fake GPUs each.
One job runs on 2 GPUs, so the pages have something to show: the overview's
GPU grid has 8 cells (2 nodes x 4 GPUs) with a state each, the queue and the
plan carry the job's id, the nodes page both nodes.  The live refresh is
checked as a user sees it: the queue page, left open and never reloaded by
the test, lists a job submitted from the command line within 2 s (the
page's own script, ``live.js``, brings it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import wait_for
from tests.ui.conftest import cancel_all, job_state, sbatch_as

# (path, what must be on it: a CSS selector; {job} is the running job's id)
VIEWS = [
    ("/ui/", '[data-gpu="gpu1:0"][data-gpu-state]'),
    ("/ui/queue", '#queue tr[data-job-id="{job}"]'),
    ("/ui/plan", '#plan rect.running[data-job-id="{job}"]'),
    ("/ui/whatif", "#whatif-form"),
    ("/ui/nodes", '#nodes [data-node="gpu2"]'),
    ("/ui/fairshare", '#fairshare [data-user="root"]'),
    ("/ui/jobs/{job}", 'article[data-job-id="{job}"] button[name="action"][value="cancel"]'),
]


@pytest.fixture(scope="module")
def running(cluster) -> Iterator[int]:  # type: ignore[no-untyped-def]
    job = sbatch_as(
        cluster, None, ["--gres=gpu:2", "-t", "10", "-J", "train", "--wrap", "sleep 300"]
    )
    try:
        wait_for(lambda: job_state(cluster, job) == "RUNNING", 20, f"job {job} to run")
        yield job
    finally:
        cancel_all(cluster, [job])


@pytest.mark.parametrize(("path", "shows"), VIEWS, ids=[v[0] for v in VIEWS])
def test_view_loads_without_console_errors(dashboard, running, path: str, shows: str) -> None:
    ui = dashboard()
    ui.goto(path.format(job=running))
    assert ui.page.locator(shows.format(job=running)).count() > 0, f"{path}: no {shows}"
    ui.page.wait_for_timeout(300)  # let the live-refresh script connect and settle
    ui.console.assert_none()


def test_every_view_loads_for_a_user_who_is_not_an_operator(dashboard, dora, running) -> None:
    ui = dashboard(dora)  # root's job is someone else's: shown, with no action
    for path, shows in VIEWS:
        if path.startswith("/ui/jobs/"):
            shows = 'article[data-job-id="{job}"]:not(:has(button[name="action"]))'
        ui.goto(path.format(job=running))
        assert ui.page.locator(shows.format(job=running)).count() > 0, f"{path}: no {shows}"
    ui.page.wait_for_timeout(300)
    ui.console.assert_none()


def test_login_page_loads_without_console_errors(dashboard) -> None:
    visitor = dashboard(login=False)  # no session: what a new user sees first
    visitor.goto("/ui/login")
    assert visitor.page.locator("form input[name='jwt']").count() == 1
    visitor.page.wait_for_timeout(300)
    visitor.console.assert_none()


def test_overview_grid_has_every_gpu_with_a_state(dashboard, running) -> None:
    ui = dashboard()
    ui.goto("/ui/")
    cells = ui.page.locator("[data-gpu]")
    names = sorted(cells.evaluate_all("els => els.map(e => e.dataset.gpu)"))
    assert names == [f"gpu{n}:{i}" for n in (1, 2) for i in range(4)]
    states = cells.evaluate_all("els => els.map(e => e.dataset.gpuState)")
    assert states.count("allocated") + states.count("allocated-idle") >= 2, states


def test_open_queue_shows_a_submission_within_two_seconds(dashboard, cluster) -> None:
    ui = dashboard()
    ui.goto("/ui/queue")
    ui.page.wait_for_timeout(500)  # the live stream is open before the submission
    job = sbatch_as(cluster, None, ["-t", "5", "-J", "live", "--wrap", "sleep 300"])
    acknowledged = time.monotonic()
    try:
        ui.page.wait_for_selector(f'[data-job-id="{job}"]', timeout=2000)
        took = time.monotonic() - acknowledged
        assert took <= 2.0, f"the queue showed job {job} after {took:.1f} s"
    finally:
        cancel_all(cluster, [job])


def test_opening_a_pending_row_shows_its_explanation(dashboard, cluster) -> None:
    ui = dashboard()
    job = sbatch_as(cluster, None, ["--hold", "-t", "5", "-J", "held", "--wrap", "true"])
    try:
        ui.goto("/ui/queue")
        box = ui.page.locator(f'details[data-job-id="{job}"]')
        box.locator("summary").click()  # explain.js loads `slurmlite explain`'s text
        text = box.locator("pre")
        text.wait_for(state="visible", timeout=5000)
        assert f"Job {job} (" in text.inner_text() and "is PENDING" in text.inner_text()
        ui.console.assert_none()
    finally:
        cancel_all(cluster, [job])
