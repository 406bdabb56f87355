"""Dashboard actions: the commands' rules, a CSRF token, and a flash message saying what happened."""

from __future__ import annotations

from urllib.parse import unquote

from tests.api.conftest import ALICE, BOB, ROOT
from tests.api.ui_client import csrf_of, logged_in


def act(browser, job_id: int, action: str, csrf: str | None = None):  # type: ignore[no-untyped-def]
    """Press a job's button on its page; the redirect's flash text (or the refusal)."""
    token = csrf if csrf is not None else csrf_of(browser.get(f"/ui/jobs/{job_id}").text)
    r = browser.post(
        f"/ui/jobs/{job_id}/action",
        data={"csrf": token, "action": action, "back": "/ui/queue"},
        follow_redirects=False,
    )
    if r.status_code != 303:
        return r
    assert r.headers["location"].startswith("/ui/queue?flash=")
    return unquote(r.headers["location"].split("flash=", 1)[1])


def test_the_owner_holds_releases_and_cancels_and_the_page_says_so(harness):
    h = harness
    h.as_user(ALICE)
    h.submit(gpus_per_node=2, nodes_min=2, time_limit=60)
    h.tick()
    jid = h.submit()["job_id"]
    alice = logged_in(h, ALICE)
    assert act(alice, jid, "hold") == f"job {jid} held"
    assert h.job(jid)["reason"] == "JobHeldUser"
    page = alice.get(f"/ui/jobs/{jid}").text
    assert 'value="release"' in page and 'value="hold"' not in page
    assert act(alice, jid, "release") == f"job {jid} released"
    assert act(alice, jid, "cancel") == f"job {jid} cancelled"
    assert h.job(jid)["state"] == "CANCELLED"
    flash = alice.get("/ui/queue?flash=job%201%20cancelled").text
    assert '<div class="flash" role="status">job 1 cancelled</div>' in flash


def test_a_post_without_the_sessions_csrf_token_changes_nothing(harness):
    h = harness
    h.as_user(ALICE)
    jid = h.submit(time_limit=60)["job_id"]
    alice = logged_in(h, ALICE)
    other_session = csrf_of(logged_in(h, ALICE).get("/ui/").text)
    assert act(alice, jid, "cancel", csrf="").status_code == 403
    assert act(alice, jid, "cancel", csrf=other_session).status_code == 403
    assert h.job(jid)["state"] == "PENDING"


def test_another_users_job_has_no_buttons_and_a_forged_post_is_refused(harness):
    h = harness
    h.as_user(ALICE)
    jid = h.submit(time_limit=60)["job_id"]
    bob = logged_in(h, BOB)
    assert 'name="action"' not in bob.get(f"/ui/jobs/{jid}").text
    token = csrf_of(bob.get("/ui/").text)
    assert act(bob, jid, "cancel", csrf=token) == f"job {jid}: Access/permission denied"
    assert act(bob, jid, "hold", csrf=token) == f"job {jid}: Invalid user id"
    assert h.job(jid)["state"] == "PENDING" and h.job(jid)["reason"] != "JobHeldUser"
    bad = bob.post(f"/ui/jobs/{jid}/action", data={"csrf": token, "action": "explode"})
    assert bad.status_code == 400


def test_operators_drain_and_resume_nodes_and_users_may_not(harness):
    h = harness
    root = logged_in(h, ROOT)
    token = csrf_of(root.get("/ui/nodes").text)

    def node(browser, action: str, reason: str = ""):  # type: ignore[no-untyped-def]
        r = browser.post(
            "/ui/nodes/n2/action",
            data={"csrf": csrf_of(browser.get("/ui/").text), "action": action, "reason": reason},
            follow_redirects=False,
        )
        return unquote(r.headers["location"].split("flash=", 1)[1])

    assert "You must specify a reason" in node(root, "drain")
    assert node(root, "drain", "fan noise") == "n2 drained"
    assert 'data-node="n2" data-state="IDLE+DRAIN"' in root.get("/ui/nodes").text
    alice = logged_in(h, ALICE)
    assert node(alice, "resume") == "n2: Invalid user id"
    assert node(root, "resume") == "n2 resumed"
    assert 'data-node="n2" data-state="IDLE"' in root.get("/ui/nodes").text
    unknown = root.post(
        "/ui/nodes/n9/action", data={"csrf": token, "action": "drain", "reason": "x"}
    )
    assert unknown.status_code == 200 and "n9: Invalid node name specified" in unknown.text
