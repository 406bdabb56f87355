"""Actions from the dashboard follow the commands' authorization: one's own jobs only.

Two users: root (``SlurmUser``, an operator) and dora (created for the tests).

* dora cancels her own running job with the page's Cancel button: the page
  answers with a flash message, and ``squeue -t all`` shows it CANCELLED.
* root's job, seen by dora: the page shows the job (PrivateData is unset, so
  everyone may see every job, as in Slurm) but offers no action button and
  not its output; root, its owner, sees the output line.
* Without a session every page leads to the login form; a login link works
  once (a second browser opening it is told it is used).
* A forged form (dora's own cancel form, with root's job id and her valid
  CSRF token) is refused with Slurm's own words, "Access/permission denied"
  (``scancel`` by another user, golden 51_*), and the job keeps running.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import wait_for
from tests.ui.conftest import cancel_all, job_state, sbatch_as

SECRET = "root-only-output-7f3a"  # what root's job prints: dora must never see it
CANCEL = 'button[name="action"][value="cancel"]'


@pytest.fixture
def jobs(cluster, dora) -> Iterator[tuple[int, int]]:  # type: ignore[no-untyped-def]
    """(root's job, which has printed SECRET; dora's job), both running."""
    submitted: list[int] = []
    try:
        wrap = f"echo {SECRET}; exec sleep 300"
        submitted.append(sbatch_as(cluster, None, ["-t", "10", "-J", "private", "--wrap", wrap]))
        submitted.append(
            sbatch_as(cluster, dora, ["-t", "10", "-J", "mine", "--wrap", "sleep 300"])
        )
        for job in submitted:
            wait_for(lambda j=job: job_state(cluster, j) == "RUNNING", 20, f"job {job} to run")
        yield submitted[0], submitted[1]
    finally:
        cancel_all(cluster, submitted)


def test_owner_cancels_from_the_job_page(dashboard, cluster, dora, jobs) -> None:
    _, mine = jobs
    ui = dashboard(dora)
    ui.goto(f"/ui/jobs/{mine}")
    ui.page.locator(CANCEL).click()
    ui.page.wait_for_load_state("load")
    assert ui.page.locator(".flash").count() == 1, "the page says what it did"
    wait_for(lambda: job_state(cluster, mine) == "CANCELLED", 10, f"job {mine} CANCELLED")
    ui.console.assert_none()


def test_another_users_job_offers_no_action_and_no_output(dashboard, dora, jobs) -> None:
    theirs, mine = jobs
    ui = dashboard(dora)
    ui.goto(f"/ui/jobs/{mine}")
    assert ui.page.locator(CANCEL).count() == 1, "her own job offers cancel"
    ui.goto(f"/ui/jobs/{theirs}")
    assert str(theirs) in ui.page.locator("main").inner_text()
    assert ui.page.locator('button[name="action"]').count() == 0
    assert SECRET not in ui.page.content()
    assert ui.page.locator("#output").count() == 0
    ui.goto("/ui/queue")
    row = ui.page.locator(f'[data-job-id="{theirs}"]')
    assert row.count() >= 1 and row.locator('button[name="action"]').count() == 0

    owner = dashboard()
    owner.goto(f"/ui/jobs/{theirs}")
    assert SECRET in owner.page.locator("#output").inner_text(), "its owner sees the output"


def test_forged_cancel_of_another_users_job_is_refused(dashboard, cluster, dora, jobs) -> None:
    theirs, mine = jobs
    ui = dashboard(dora)
    ui.goto(f"/ui/jobs/{mine}")
    form = ui.page.locator("form").filter(has=ui.page.locator(CANCEL))
    action, fields = form_of(form)
    fields = {k: str(theirs) if v == str(mine) else v for k, v in fields.items()}
    fields["action"] = "cancel"
    url = ui.base + action.replace(f"/{mine}", f"/{theirs}")
    answer = ui.page.request.post(url, form=fields)
    assert answer.status < 500, f"POST {url}: {answer.status}"
    assert "Access/permission denied" in answer.text()
    assert job_state(cluster, theirs) == "RUNNING"


def test_pages_need_a_session_and_a_link_works_once(dashboard) -> None:
    visitor = dashboard(login=False)
    visitor.goto("/ui/queue")
    assert visitor.page.url.endswith("/ui/login"), "without a session: the login form"
    assert visitor.page.locator("[data-job-id]").count() == 0
    visitor.goto(visitor.link.removeprefix(visitor.base))
    assert visitor.page.locator("#viewer").get_attribute("data-user") == "root"

    late = dashboard(login=False)
    late.goto(visitor.link.removeprefix(late.base), status=401)
    assert "unknown, used or expired" in late.page.locator(".flash").inner_text()
    late.console.messages.clear()  # the browser logs the 401 itself: that is the point


def form_of(form: Any) -> tuple[str, dict[str, str]]:
    """A form's action path and its fields as the browser would send them."""
    action = form.evaluate("f => f.getAttribute('action')")
    fields = form.evaluate("f => Object.fromEntries(new FormData(f))")
    return action, fields
