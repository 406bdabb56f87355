"""The job page's output tail when the file is on the batch host only (``output_tail``).

The harness controller's agents are the recording client
(``tests/recording_agents.py``): what a node "holds" is put in its
``files``, and every tail order the page sends is recorded, so each test
says exactly what went to which node.  The job's output path names a
directory that does not exist on this (the controller's) host, as on a lab
without a shared file system.
"""

from __future__ import annotations

import asyncio
import os

import controller.api.ui.output_tail as output_tail
from controller.auth.callers import Caller
from tests.api.conftest import BOB
from tests.api.ui_client import logged_in
from tests.recording_agents import RecordingAgentClient

ME = Caller(uid=os.getuid(), gid=os.getgid(), user="me")
ELSEWHERE = "/nonexistent-on-the-controller/run"  # the batch host's disk only


def started_job(h, **opts) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """A job of ME started on n1 (the pass's launch order taken); (its id, its stdout)."""
    h.as_user(ME)
    jid = h.submit(work_dir=ELSEWHERE, std_out="o-%j.txt", **opts)["job_id"]
    h.tick()
    [launch] = h.agents.take("launch", 1)
    assert launch.node == "n1"
    return jid, f"{ELSEWHERE}/o-{jid}.txt"


def test_the_page_asks_the_batch_host_for_output_it_cannot_read_here(harness):
    h = harness
    jid, out = started_job(h, std_err="e-%j.txt")
    err = f"{ELSEWHERE}/e-{jid}.txt"
    h.agents.files[("n1", out)] = "epoch 9 loss 0.1\n"
    h.agents.files[("n1", err)] = "warning: lr high\n"
    page = logged_in(h, ME).get(f"/ui/jobs/{jid}").text
    assert "epoch 9 loss 0.1" in page and "warning: lr high" in page
    [ask] = h.agents.take("tail", 1)
    assert ask.node == "n1"  # the batch host, asked for stdout then the separate stderr
    spec = ask.spec
    assert (spec.job_id, spec.uid, spec.gid, spec.paths) == (jid, ME.uid, ME.gid, [out, err])
    assert spec.limit == 16 * 1024 and spec.credential  # signed, like every order
    h.agents.assert_nothing_else()


def test_nobody_but_the_owner_makes_the_page_ask(harness):
    h = harness
    jid, out = started_job(h)
    h.agents.files[("n1", out)] = "private results\n"
    page = logged_in(h, BOB).get(f"/ui/jobs/{jid}").text
    assert "private results" not in page and 'id="output' not in page
    h.agents.assert_nothing_else()  # no tail order for another user's view


def test_an_unreachable_batch_host_is_said_so_never_a_500(harness):
    h = harness
    jid, out = started_job(h)
    h.agents.files[("n1", out)] = "not shown\n"
    h.agents.fail_nodes.add("n1")
    r = logged_in(h, ME).get(f"/ui/jobs/{jid}")
    assert r.status_code == 200
    assert "output not available (node unreachable)" in r.text and "not shown" not in r.text


class StalledAgents(RecordingAgentClient):
    """Agents whose tail answer never comes (a node hung on a dead NFS mount)."""

    async def tail(self, to, spec):  # type: ignore[no-untyped-def]
        await asyncio.sleep(60)
        raise AssertionError("the page should have stopped waiting")


def test_a_stalled_batch_host_costs_the_page_a_short_timeout_only(harness, monkeypatch):
    h = harness
    jid, _ = started_job(h)
    h.ctl.agents = StalledAgents()
    monkeypatch.setattr(output_tail, "AGENT_TIMEOUT_S", 0.2)
    r = logged_in(h, ME).get(f"/ui/jobs/{jid}")
    assert r.status_code == 200 and "output not available (node unreachable)" in r.text


def test_a_file_readable_here_is_read_here(harness, tmp_path):
    h = harness
    h.as_user(ME)
    jid = h.submit(work_dir=str(tmp_path), std_out="o-%j.txt")["job_id"]
    h.tick()
    h.agents.take("launch", 1)
    (tmp_path / f"o-{jid}.txt").write_text("local line\n")
    assert "local line" in logged_in(h, ME).get(f"/ui/jobs/{jid}").text
    h.agents.assert_nothing_else()  # one host: the agent is not asked


def test_output_read_here_stays_shown_when_the_batch_host_is_down(harness, tmp_path):
    h = harness
    h.as_user(ME)
    # stdout in a directory the controller sees, stderr on the batch host's disk only
    jid = h.submit(work_dir=str(tmp_path), std_out="o-%j.txt", std_err=f"{ELSEWHERE}/e-%j.txt")
    h.tick()
    h.agents.take("launch", 1)
    (tmp_path / f"o-{jid['job_id']}.txt").write_text("local line\n")
    h.agents.fail_nodes.add("n1")
    page = logged_in(h, ME).get(f"/ui/jobs/{jid['job_id']}").text
    assert "local line" in page and "output not available (node unreachable)" in page
