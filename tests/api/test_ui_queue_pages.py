"""The queue page shows a page of rows at a time, and a way to the rest.

A queue of 10,000 pending jobs must render in well under a second, so the
page lists ``PAGE_SIZE`` (200) rows and says how many more there are; the
order is the page's own: pending jobs by priority, then the others.
"""

from __future__ import annotations

import re

from controller.api.ui.queue_page import PAGE_SIZE
from tests.api.conftest import ALICE, BOB
from tests.api.ui_client import logged_in


def shown_ids(html: str) -> list[int]:
    """The job ids of the queue's rows, top to bottom."""
    return [int(i) for i in re.findall(r'<tr data-job-id="(\d+)" data-state=', html)]


def test_a_queue_longer_than_a_page_shows_the_first_page_and_links_to_the_rest(harness):
    h = harness
    h.as_user(ALICE)
    running = h.submit(gpus_per_node=2, nodes_min=2, time_limit=60)["job_id"]  # every GPU
    h.tick()
    pending = [h.submit(gpus_per_node=1, time_limit=30)["job_id"] for _ in range(PAGE_SIZE + 3)]
    h.tick()
    alice = logged_in(h, ALICE)

    first = alice.get("/ui/queue").text
    # 203 pending + 1 running = 204 jobs: rows 1-200 here, 4 on page 2
    assert shown_ids(first) == pending[:PAGE_SIZE]  # equal priorities: submission order
    assert "Jobs 1&ndash;200 of 204, 4 more on later pages." in first
    assert "Page 1 of 2" in first
    assert '<a href="/ui/queue?page=2" rel="next">Next</a>' in first
    assert f'data-job-id="{pending[PAGE_SIZE]}"' not in first

    second = alice.get("/ui/queue?page=2").text
    assert shown_ids(second) == [*pending[PAGE_SIZE:], running]  # the running job last
    assert "Jobs 201&ndash;204 of 204." in second
    assert '<a href="/ui/queue?page=1" rel="prev">Previous</a>' in second
    assert 'rel="next"' not in second

    # past the end: the last page; not a number: refused, never a server error
    assert shown_ids(alice.get("/ui/queue?page=9").text) == shown_ids(second)
    assert alice.get("/ui/queue?page=abc").status_code == 422
    assert alice.get("/ui/queue?page=0").status_code == 422


def test_a_short_queue_is_one_page_without_page_links(harness):
    h = harness
    h.as_user(BOB)
    jid = h.submit(gpus_per_node=1, time_limit=30)["job_id"]
    page = logged_in(h, BOB).get("/ui/queue").text
    assert shown_ids(page) == [jid]
    assert "Jobs 1&ndash;1 of 1." in page and "Page 1 of" not in page


def test_an_empty_queue_says_so(harness):
    page = logged_in(harness, ALICE).get("/ui/queue").text
    assert "No jobs." in page and 'rel="next"' not in page
