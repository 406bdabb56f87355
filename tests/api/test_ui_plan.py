"""The dashboard's plan and what-if pages, through the app, as a logged-in browser sees them.

The harness cluster: n1 and n2, 2 CPUs and 2 GPUs each, bf_interval=1.
Job A takes all four GPUs for 60 minutes from t = 1.8e9, so a 1-GPU request
can start only when A ends: at t + 3600 (on n1, the first node).
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ET

from fastapi.testclient import TestClient

from tests.api.conftest import ALICE, BOB
from tests.api.ui_client import csrf_of, logged_in

SVG = "{http://www.w3.org/2000/svg}"


def log_in(h, caller) -> tuple[TestClient, str]:  # type: ignore[no-untyped-def]
    """A browser with a dashboard session for ``caller``, and its forms' CSRF token."""
    browser = logged_in(h, caller)
    page = browser.get("/ui/whatif")
    assert page.status_code == 200
    return browser, csrf_of(page.text)


def fill_cluster(h) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Job A holds every GPU for an hour; job B (1 GPU, 30 min) waits with an estimate."""
    a = h.submit(nodes_min=2, nodes_max=2, gpus_per_node=2, time_limit=60, name="big")["job_id"]
    h.tick()
    b = h.submit(gpus_per_node=1, time_limit=30, name="small")["job_id"]
    h.pass_time(2)  # past bf_interval: the next pass is the full (backfill) one
    h.tick()
    assert h.job(a)["state"] == "RUNNING"
    return a, b


def bars(page: str) -> dict[str, list[dict[str, str]]]:
    svg = re.search(r"<svg.*?</svg>", page, re.S).group(0)
    out: dict[str, list[dict[str, str]]] = {}
    for rect in ET.fromstring(svg).iter(f"{SVG}rect"):
        if "data-job-id" in rect.attrib:
            out.setdefault(rect.attrib["data-job-id"], []).append(rect.attrib)
    return out


def post_whatif(browser: TestClient, csrf: str, **fields: str):  # type: ignore[no-untyped-def]
    form = {"csrf": csrf, "gpus": "1", "time": "30", "partition": "debug", **fields}
    return browser.post("/ui/whatif", data=form)


def test_plan_shows_running_solid_and_the_pending_job_hatched_at_its_estimate(harness):
    a, b = fill_cluster(harness)
    estimate = harness.job(b)["sched_start"]
    start_a = harness.job(a)["start_time"]
    assert estimate == start_a + 3600  # B waits for A's time limit
    browser, _csrf = log_in(harness, ALICE)
    page = browser.get("/ui/plan")
    assert page.status_code == 200
    found = bars(page.text)
    # A: one solid bar per GPU it holds, from its start to its time limit
    assert len(found[str(a)]) == 4
    assert {r["class"] for r in found[str(a)]} == {"bar running"}
    assert {r["data-end"] for r in found[str(a)]} == {f"{start_a + 3600:.0f}"}
    # B: hatched, from its estimate for its 30 minutes
    [bar] = found[str(b)]
    assert bar["class"] == "bar planned" and bar["fill"].startswith("url(#hatch-")
    assert bar["data-start"] == f"{estimate:.0f}"
    assert bar["data-end"] == f"{estimate + 1800:.0f}"
    assert 'class="now"' in page.text
    assert f'<tr data-job-id="{b}"><td><a href="/ui/jobs/{b}">' in page.text  # the table
    # a mistyped range shows the default day rather than an error
    assert browser.get("/ui/plan?hours=abc").status_code == 200


def test_whatif_answers_starts_now_then_behind_the_running_job(harness):
    browser, csrf = log_in(harness, ALICE)
    page = post_whatif(browser, csrf, gpus="2", time="1:00:00")
    assert page.status_code == 200
    assert "Starts now on n1." in page.text
    assert "sbatch --test-only -p debug --gpus=2 --time=01:00:00 job.sh" in page.text

    a, _b = fill_cluster(harness)
    end = harness.job(a)["start_time"] + 3600
    page = post_whatif(browser, csrf, gpus="1", time="30")
    assert page.status_code == 200
    hhmm = time.strftime("%H:%M", time.localtime(end))
    assert f"About {hhmm}, on n" in page.text
    assert f"behind job {a}" in page.text or f"behind jobs {a}" in page.text


def test_whatif_changes_nothing(harness):
    browser, csrf = log_in(harness, ALICE)
    before = harness.submit(name="first")["job_id"]
    for gpus in ("1", "4", "9"):
        post_whatif(browser, csrf, gpus=gpus)
    after = harness.submit(name="second")["job_id"]
    assert after == before + 1  # no job id taken, no job stored
    listed = harness.client.get("/v1/jobs").json()["jobs"]
    assert sorted(j["job_id"] for j in listed) == [before, after]


def test_whatif_refuses_mistakes_in_words_never_500(harness):
    browser, csrf = log_in(harness, ALICE)
    page = post_whatif(browser, csrf, partition="nosuch")
    assert page.status_code == 400
    assert "invalid partition specified: nosuch" in page.text
    page = post_whatif(browser, csrf, time="soon")
    assert page.status_code == 400 and "Time limit: &#39;soon&#39; is not" in page.text
    page = post_whatif(browser, csrf, gpus="-1")
    assert page.status_code == 400 and "GPUs:" in page.text
    # more GPUs than any node set can give: "never", not "later"
    page = post_whatif(browser, csrf, gpus="9")
    assert page.status_code == 200 and "It could never run as asked" in page.text


def test_whatif_form_needs_the_session_csrf_token_and_pages_need_a_login(harness):
    browser, _csrf = log_in(harness, BOB)
    assert post_whatif(browser, "forged").status_code == 403
    stranger = TestClient(harness.client.app)  # no session, no token
    assert stranger.get("/ui/plan").status_code == 401
    assert post_whatif(stranger, "").status_code == 401


def test_private_data_hides_other_users_jobs_in_the_plan_and_the_answer(harness):
    a, b = fill_cluster(harness)  # alice's jobs
    harness.ctl.cfg.private_data = ["jobs"]
    browser, csrf = log_in(harness, BOB)
    assert bars(browser.get("/ui/plan").text) == {}
    page = post_whatif(browser, csrf, gpus="1", time="30")
    assert page.status_code == 200
    assert "behind a job of another user" in page.text or "jobs of other users" in page.text
    assert f"behind job {a}" not in page.text and f"jobs {a}" not in page.text
