"""The dashboard's pages show what the commands show, to whom the commands show it."""

from __future__ import annotations

import os
import re

from controller.accounting.usage import store_usage
from controller.auth.callers import Caller
from slurmlite.usage import GpuUsage, UsageSummary
from tests.api.conftest import ALICE, BOB, ROOT
from tests.api.ui_client import logged_in


def gpu_state(html: str, gpu: str) -> tuple[str, str]:
    """(data-gpu-state, title) of the overview's cell ``node:index``."""
    found = re.search(rf'data-gpu="{gpu}" data-gpu-state="([^"]+)" title="([^"]*)"', html)
    assert found, f"no cell {gpu}"
    return found.group(1), found.group(2)


def test_the_overview_grid_tells_each_gpus_state_and_holder(harness):
    h = harness
    h.as_user(ALICE)
    busy = h.submit(gpus_per_node=1, time_limit=60)["job_id"]  # n1:0
    idle = h.submit(gpus_per_node=1, time_limit=30)["job_id"]  # n1:1
    h.tick()
    h.submit(gpus_per_node=2, nodes_min=2)  # 4 GPUs: only 2 free -> pending (Resources)
    h.tick()
    # agents' usage: job busy at 80 % over 10 samples, job idle at 0.5 %
    store_usage(
        h.ctl.db,
        "n1",
        [
            UsageSummary(busy, 0, 10, gpus=[GpuUsage(0, 10, 800.0, 90.0)]),
            UsageSummary(idle, 0, 10, gpus=[GpuUsage(1, 10, 5.0, 1.0)]),
        ],
    )
    h.ctl.nodes.heartbeat("n2", outside={1: "gpu 1 in use outside Slurm: pid 42 (carol: python)"})
    page = logged_in(h, BOB).get("/ui/").text
    assert gpu_state(page, "n1:0") == ("allocated", f"n1:0: job {busy} (alice), 80 % busy")
    assert gpu_state(page, "n1:1")[0] == "allocated-idle"
    assert gpu_state(page, "n2:0") == ("idle", "n2:0: idle")
    assert gpu_state(page, "n2:1")[0] == "unavailable"
    assert '<strong id="gpus-free">1</strong>' in page  # n2:0 only
    assert '<tr data-reason="Resources"><td>Resources</td><td class="num">1</td></tr>' in page
    # the 30-minute job frees its GPU first: submitted at the harness's clock, start = now
    assert f'(job <a href="/ui/jobs/{idle}"' in page


def test_a_drained_nodes_free_gpus_are_down(harness):
    h = harness
    h.as_user(ROOT)
    h.client.post("/v1/nodes/update", json={"names": ["n2"], "state": "DRAIN", "reason": "fan"})
    page = logged_in(h, ALICE).get("/ui/").text
    assert gpu_state(page, "n2:0") == ("down", "n2:0: node IDLE+DRAIN (fan)")


def test_with_private_data_another_users_job_is_hidden_everywhere(harness):
    h = harness
    h.as_user(ALICE)
    jid = h.submit(gpus_per_node=1, time_limit=60)["job_id"]
    h.tick()
    h.ctl.cfg.private_data.append("jobs")
    bob = logged_in(h, BOB)
    assert gpu_state(bob.get("/ui/").text, "n1:0") == ("allocated", "n1:0: allocated")
    assert f'data-job-id="{jid}"' not in bob.get("/ui/queue").text
    assert bob.get(f"/ui/jobs/{jid}").status_code == 404
    hidden = bob.get(f"/ui/jobs/{jid}/explain")
    assert (hidden.status_code, hidden.text) == (404, "Invalid job id specified")
    root = logged_in(h, ROOT)
    assert root.get(f"/ui/jobs/{jid}").status_code == 200


def test_the_queue_shows_squeue_columns_priority_and_the_explanation(harness):
    h = harness
    h.as_user(ALICE)
    run = h.submit(gpus_per_node=2, nodes_min=2, time_limit=60)["job_id"]
    h.tick()
    wait = h.submit(gpus_per_node=1, time_limit=30, name="waiter")["job_id"]
    h.tick()
    alice = logged_in(h, ALICE)
    page = alice.get("/ui/queue").text
    assert "<th>JOBID</th><th>PARTITION</th><th>NAME</th><th>USER</th><th>ST</th>" in page
    row = page[page.index(f'<tr data-job-id="{wait}"') :]
    assert "<td>waiter</td><td>alice</td><td>PD</td>" in row
    assert "<td>(Resources)</td>" in row
    # the row opens onto the explanation: loaded by explain.js, or the job page's (no script)
    details = row[row.index("<details") : row.index("</details>")]
    assert f'data-explain="/ui/jobs/{wait}/explain"' in details
    assert f'href="/ui/jobs/{wait}#explanation"' in details
    for text in (alice.get(f"/ui/jobs/{wait}/explain").text, alice.get(f"/ui/jobs/{wait}").text):
        assert f"Job {wait} (alice, partition debug) is PENDING, reason Resources" in text
        assert f"job {run} (alice) running on n1, holding GPUs n1:0,n1:1" in text
    running = page[page.index(f'<tr data-job-id="{run}"') :]
    assert "<td>R</td>" in running and "n[1-2]" in running


def test_the_job_page_shows_output_and_actions_to_the_owner_only(harness, tmp_path):
    h = harness
    me = Caller(uid=os.getuid(), gid=os.getgid(), user="me")  # owns the output file
    h.as_user(me)
    jid = h.submit(gpus_per_node=1, time_limit=60, work_dir=str(tmp_path), std_out="o-%j.txt")[
        "job_id"
    ]
    h.tick()
    (tmp_path / f"o-{jid}.txt").write_text("epoch 1 loss 0.9\nepoch 2 loss 0.5\n")
    store_usage(h.ctl.db, "n1", [UsageSummary(jid, 0, 4, gpus=[GpuUsage(0, 4, 200.0, 70.0)])])
    owner = logged_in(h, me).get(f"/ui/jobs/{jid}").text
    assert "epoch 2 loss 0.5" in owner
    assert '<button type="submit" name="action" value="cancel">' in owner
    assert "<tr><th>Started</th>" in owner and "<tr><th>Time limit ends</th>" in owner
    assert 'data-gpu="n1:0"' in owner and "<svg" in owner and "50 %" in owner  # 200/4
    other = logged_in(h, BOB).get(f"/ui/jobs/{jid}").text
    assert "epoch" not in other and 'name="action"' not in other and 'id="output' not in other


def test_output_behind_a_symbolic_link_is_not_shown(harness, tmp_path):
    h = harness
    me = Caller(uid=os.getuid(), gid=os.getgid(), user="me")
    h.as_user(me)
    secret = tmp_path / "secret"
    secret.write_text("not for the page\n")
    jid = h.submit(work_dir=str(tmp_path), std_out="link.out")["job_id"]
    h.tick()
    (tmp_path / "link.out").symlink_to(secret)
    page = logged_in(h, me).get(f"/ui/jobs/{jid}").text
    assert "not for the page" not in page and 'id="output-missing"' in page


def test_a_pending_jobs_page_explains_it_with_its_priority_factors(harness):
    h = harness
    h.as_user(ALICE)
    h.submit(gpus_per_node=2, nodes_min=2, time_limit=60)
    h.tick()
    jid = h.submit(gpus_per_node=1)["job_id"]
    h.tick()
    page = logged_in(h, ALICE).get(f"/ui/jobs/{jid}").text
    assert 'id="factors"' in page and '<th class="num">fairshare</th>' in page
    assert f"Job {jid} (alice, partition debug) is PENDING" in page
    assert '<button type="submit" name="action" value="hold">' in page


def test_nodes_page_offers_drain_to_operators_only(harness):
    h = harness
    root = logged_in(h, ROOT).get("/ui/nodes").text
    assert '<tr id="n1" data-node="n1" data-state="IDLE">' in root
    assert 'value="drain"' in root
    assert 'value="drain"' not in logged_in(h, ALICE).get("/ui/nodes").text


def test_fair_share_lists_the_tree_as_sshare_does(harness):
    h = harness
    h.as_user(ALICE)
    h.submit()
    page = logged_in(h, ALICE).get("/ui/fairshare").text
    assert "<th>Account</th><th>User</th><th>RawShares</th>" in page
    assert 'data-account="root"' in page
