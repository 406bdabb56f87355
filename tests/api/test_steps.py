"""Job steps through the API: srun's ``POST /v1/jobs/{id}/steps`` and the nodes' reports.

The harness cluster: n1 and n2, 2 CPUs and GPUs 0-1 each, DefMemPerCPU=1000.
``two_node_job`` takes all of it: -N2 --ntasks-per-node=2 --gres=gpu:2, so
the job holds 2 CPUs, 2000 MiB and GPUs [0, 1] on each node.
"""

from __future__ import annotations

import hashlib

from controller.context import Controller
from controller.steps.create import create_step
from controller.steps.ends import report_grace
from controller.store.db import Database
from slurmlite import errors
from slurmlite.credential import canonical_body, node_key, orders_key, verify_credential
from slurmlite.protocol import JobCompletion, StepRequest
from tests.api.conftest import ALICE, BOB, KEY, ROOT, register
from tests.recording_agents import RecordingAgentClient


def two_node_job(h) -> int:  # type: ignore[no-untyped-def]
    jid = h.submit(nodes_min=2, ntasks_per_node=2, gpus_per_node=2)["job_id"]
    h.tick()
    assert h.job(jid)["state"] == "RUNNING"
    return jid


def srun(h, jid: int, *argv: str, **fields):  # type: ignore[no-untyped-def]
    """POST a step request (``hostname`` by default); the raw response."""
    body = {"argv": list(argv) or ["/bin/hostname"], "work_dir": "/tmp", **fields}
    return h.client.post(f"/v1/jobs/{jid}/steps", json=body)


def report(h, jid: int, step: int, node: str, status: int = 0) -> bool:  # type: ignore[no-untyped-def]
    msg = JobCompletion(node=node, job_id=jid, restarts=0, step_id=str(step), exit_code=status)
    return h.ctl.jobs.complete(node, msg)


def step_rows(h, jid: int) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    return {s["step_id"]: s for s in h.job(jid)["steps"]}


def test_a_two_node_step_gets_its_layout_environment_and_one_signed_order_per_node(harness):
    h = harness
    jid = two_node_job(h)
    h.agents.take("launch", 1)  # the batch script's
    env = {"PATH": "/usr/bin", "SLURM_JOB_ID": str(jid)}  # srun inside the batch script
    r = srun(h, jid, "/usr/bin/python3", "train.py", ntasks=4, environment=env)
    assert r.status_code == 200, r.text
    grant = r.json()
    # 4 tasks, block, 2 CPUs per node: n1 runs ranks 0-1, n2 ranks 2-3
    assert (grant["job_id"], grant["step_id"], grant["ntasks"]) == (jid, 0, 4)
    assert [(n["node"], n["addr"], n["port"], n["tasks"]) for n in grant["nodes"]] == [
        ("n1", "127.0.0.1", 6818, [0, 1]),
        ("n2", "127.0.0.1", 6818, [2, 3]),
    ]
    n1, n2 = grant["launches"]
    assert (n1["node"], n1["node_index"], n2["node"], n2["node_index"]) == ("n1", 0, "n2", 1)
    assert n1["argv"] == ["/usr/bin/python3", "train.py"] and n1["tasks"] == [0, 1]
    assert (n1["uid"], n1["gid"], n1["user"], n1["num_nodes"]) == (1001, 1001, "alice", 2)
    assert n1["gpus"] == [0, 1]  # no GPU option: the job's GPUs on the node
    port = 20000 + jid % 20000
    assert (n1["master_addr"], n1["master_port"]) == ("127.0.0.1", port)
    e1, e2 = n1["environment"], n2["environment"]
    for e in (e1, e2):
        assert e["SLURM_STEP_ID"] == e["SLURM_STEPID"] == "0"
        assert e["SLURM_STEP_NODELIST"] == "n[1-2]" and e["SLURM_STEP_NUM_TASKS"] == "4"
        assert e["SLURM_STEP_TASKS_PER_NODE"] == "2(x2)"
        assert (e["MASTER_ADDR"], e["MASTER_PORT"], e["WORLD_SIZE"]) == (
            "127.0.0.1",
            str(port),
            "4",
        )
    assert (e1["SLURMD_NODENAME"], e1["NODE_RANK"], e2["NODE_RANK"]) == ("n1", "0", "1")
    # each order is signed for its node only; the claims cover the whole order
    for launch in (n1, n2):
        key = orders_key(node_key(KEY, launch["node"]))
        claims = verify_credential(key, launch["credential"], now=h.clock())
        assert (claims["op"], claims["job"], claims["step"]) == ("step", jid, 0)
        assert (claims["node"], claims["nodes"]) == (launch["node"], ["n1", "n2"])
        assert (claims["uid"], claims["gid"], claims["restarts"]) == (1001, 1001, 0)
        assert claims["body"] == hashlib.sha256(canonical_body(launch)).hexdigest()
    wrong = orders_key(node_key(KEY, "n2"))
    try:
        verify_credential(wrong, n1["credential"], now=h.clock())
        raise AssertionError("n2's key accepted n1's order")
    except Exception as e:  # CredentialError
        assert "signature" in str(e)
    h.agents.assert_nothing_else()  # srun carries the orders; the controller sent nothing
    step = step_rows(h, jid)["0"]
    assert (step["name"], step["state"], step["nodes"]) == ("python3", "RUNNING", ["n1", "n2"])
    assert (step["ntasks"], step["cpus"]) == (4, 4)  # 4 tasks x 1 CPU


def test_step_ids_count_up_survive_a_controller_restart_and_show_in_sacct(harness, store_url):
    h = harness
    jid = two_node_job(h)
    ids = [srun(h, jid, ntasks=1, overlap=True).json()["step_id"] for _ in range(3)]
    assert ids == [0, 1, 2]
    # a new controller on the same store continues the numbering
    agents = RecordingAgentClient()
    again = Controller(h.ctl.cfg, KEY, db=Database(store_url), agents=agents, clock=h.clock)
    try:
        req = StepRequest(argv=["env"], work_dir="/tmp", ntasks=1, overlap=True)
        grant = create_step(again.db, again.cfg, again.signer, again.clock(), ALICE, jid, req)
        assert grant.step_id == 3
        agents.assert_nothing_else()  # srun carries a step's orders, not the controller
    finally:
        again.db.close()
    [job] = h.client.get("/v1/accounting", params={"ids": jid}).json()["jobs"]
    shown = [(s["step_id"], s["name"], s["state"]) for s in job["steps"]]
    assert sorted(shown) == [
        ("0", "hostname", "RUNNING"),
        ("1", "hostname", "RUNNING"),
        ("2", "hostname", "RUNNING"),
        ("3", "env", "RUNNING"),
        ("batch", "batch", "RUNNING"),
    ]
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_step_needing_busy_cpus_waits_with_nodes_busy_and_fits_once_the_other_ended(harness):
    h = harness
    jid = two_node_job(h)
    assert srun(h, jid, ntasks=4).status_code == 200  # step 0: all 4 CPUs
    r = srun(h, jid, ntasks=1)
    assert r.status_code == 409 and r.json()["errno"] == errors.ESLURM_NODES_BUSY
    assert r.json()["error"] == "Requested nodes are busy"
    assert report(h, jid, 0, "n1") is True
    assert srun(h, jid, ntasks=1).status_code == 409  # n2 has not reported: still running
    assert report(h, jid, 0, "n2") is True
    r = srun(h, jid, ntasks=1)
    assert r.status_code == 200 and r.json()["step_id"] == 1
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_step_fits_beside_another_on_the_cpus_left_free(harness):
    h = harness
    jid = two_node_job(h)
    assert srun(h, jid, ntasks=1).json()["nodes"][0]["node"] == "n1"  # 1 of n1's 2 CPUs
    # 3 tasks: free CPUs are n1: 1, n2: 2 -> rank 0 on n1, ranks 1-2 on n2
    grant = srun(h, jid, ntasks=3).json()
    assert [(n["node"], n["tasks"]) for n in grant["nodes"]] == [("n1", [0]), ("n2", [1, 2])]
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_overlap_steps_share_the_cpus_of_running_steps(harness):
    h = harness
    jid = two_node_job(h)
    assert srun(h, jid, ntasks=4).status_code == 200
    r = srun(h, jid, "/bin/bash", ntasks=1, overlap=True, pty=True)
    assert r.status_code == 200, r.text
    assert r.json()["launches"][0]["pty"] is True
    # an --overlap step holds nothing: a third plain step is refused by step 0 alone
    assert report(h, jid, 0, "n1") and report(h, jid, 0, "n2")
    assert srun(h, jid, ntasks=4).status_code == 200
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_gpus_per_task_take_distinct_free_gpus_and_hold_them(harness):
    h = harness
    jid = two_node_job(h)
    a = srun(h, jid, ntasks=1, nodelist=["n1"], gpus_per_task=1).json()
    assert a["launches"][0]["gpus"] == [0] and a["launches"][0]["gpus_per_task"] == 1
    assert a["launches"][0]["environment"]["CUDA_VISIBLE_DEVICES"] == "0"
    # GPU 0 is held: the next one on n1 gets GPU 1
    b = srun(h, jid, ntasks=1, nodelist=["n1"], gpus_per_node=1).json()
    assert b["launches"][0]["gpus"] == [1]
    # two tasks x one GPU on n2: both of its GPUs
    c = srun(h, jid, ntasks=2, nodelist=["n2"], gpus_per_task=1).json()
    assert c["launches"][0]["gpus"] == [0, 1]
    # 3 GPUs on one node: the job has 2 there -> never
    r = srun(h, jid, ntasks=1, overlap=True, nodelist=["n1"], gpus_per_node=3)
    assert r.status_code == 400 and r.json()["errno"] == errors.ESLURM_INVALID_GRES
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_gpu_held_by_a_step_makes_the_next_gpu_step_wait(harness):
    h = harness
    jid = two_node_job(h)
    assert srun(h, jid, ntasks=1, nodelist=["n1"], gpus_per_node=2).status_code == 200
    r = srun(h, jid, ntasks=1, nodelist=["n1"], gpus_per_node=1)  # a CPU is free, no GPU
    assert r.status_code == 409 and r.json()["errno"] == errors.ESLURM_NODES_BUSY
    # a step asking for no GPU runs beside it and sees the job's GPUs
    r = srun(h, jid, ntasks=1, nodelist=["n1"])
    assert r.status_code == 200 and r.json()["launches"][0]["gpus"] == [0, 1]
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_only_the_owner_or_an_operator_starts_steps(harness):
    h = harness
    jid = two_node_job(h)
    h.as_user(BOB)
    r = srun(h, jid)
    assert r.status_code == 403 and r.json()["errno"] == errors.ESLURM_ACCESS_DENIED
    assert r.json()["error"] == "Access/permission denied"
    h.as_user(ROOT)
    assert srun(h, jid, overlap=True).status_code == 200
    h.as_user(ALICE)
    assert [s["step_id"] for s in h.job(jid)["steps"] if s["step_id"] != "batch"] == ["0"]
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_pending_ended_and_unknown_jobs_get_slurms_answers(harness):
    h = harness
    held = h.submit(hold=True)["job_id"]
    h.tick()
    r = srun(h, held)
    assert (r.status_code, r.json()["errno"]) == (409, errors.ESLURM_JOB_PENDING)
    assert r.json()["error"] == "Job is pending execution"
    done = two_node_job(h)
    h.ctl.jobs.complete(
        "n1", JobCompletion(node="n1", job_id=done, restarts=0, step_id="batch", exit_code=0)
    )
    r = srun(h, done)
    assert (r.status_code, r.json()["errno"]) == (409, errors.ESLURM_ALREADY_DONE)
    assert r.json()["error"] == "Job/step already completing or completed"
    r = srun(h, 99999)
    assert (r.status_code, r.json()["errno"]) == (404, errors.ESLURM_INVALID_JOB_ID)
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_requests_that_can_never_fit_the_job_are_refused(harness):
    h = harness
    jid = two_node_job(h)
    r = srun(h, jid, ntasks=5)  # 5 tasks, the job has 4 CPUs
    assert r.json()["errno"] == errors.ESLURM_TOO_MANY_REQUESTED_CPUS
    r = srun(h, jid, nodes=3)  # the job has 2 nodes
    assert r.json()["errno"] == errors.ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE
    r = srun(h, jid, nodelist=["n3"])
    assert r.json()["errno"] == errors.ESLURM_INVALID_NODE_NAME
    r = srun(h, jid, distribution="plane=2")
    assert r.json()["errno"] == errors.ESLURM_BAD_DIST
    assert all(s["step_id"] == "batch" for s in h.job(jid)["steps"])  # nothing recorded
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_step_ends_when_every_node_reported_with_the_highest_status(harness):
    h = harness
    jid = two_node_job(h)
    srun(h, jid, "false", ntasks=2)
    assert report(h, jid, 0, "n1", 0) is True
    assert report(h, jid, 0, "n1", 0) is False  # a duplicate changes nothing
    assert step_rows(h, jid)["0"]["state"] == "RUNNING"
    assert report(h, jid, 0, "n2", 1 << 8) is True
    step = step_rows(h, jid)["0"]
    # max(0, 256) = 256: exit code 1 -> FAILED, as sacct's "69.0 false FAILED 1:0"
    assert (step["state"], step["exit_code"]) == ("FAILED", 256)
    assert step["end_time"] == h.clock()
    job = h.job(jid)
    assert (job["state"], job["derived_exit_code"]) == ("RUNNING", 256)  # steps leave it
    # a step killed by a signal on one node ends CANCELLED with that status
    srun(h, jid, ntasks=2)
    assert report(h, jid, 1, "n1", 9) and report(h, jid, 1, "n2", 0)
    assert (step_rows(h, jid)["1"]["state"], step_rows(h, jid)["1"]["exit_code"]) == (
        "CANCELLED",
        9,
    )
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_node_outside_the_step_cannot_report_it(harness):
    h = harness
    jid = two_node_job(h)
    srun(h, jid, ntasks=1, nodelist=["n2"])
    assert report(h, jid, 0, "n1") is False
    assert report(h, jid, 7, "n2") is False  # no such step
    assert step_rows(h, jid)["0"]["state"] == "RUNNING"
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_steps_whose_nodes_never_report_are_closed_after_the_job_ended(harness):
    h = harness
    jid = two_node_job(h)
    srun(h, jid, ntasks=4)
    assert report(h, jid, 0, "n1", 15)
    h.ctl.jobs.complete(
        "n1", JobCompletion(node="n1", job_id=jid, restarts=0, step_id="batch", exit_code=0)
    )
    h.pass_time(report_grace(h.ctl.cfg))  # KillWait 2 + 2 x heartbeat 1 + 10 = 14 s: not past
    h.tick()
    assert step_rows(h, jid)["0"]["state"] == "RUNNING"
    h.pass_time(1)
    h.tick()
    step = step_rows(h, jid)["0"]
    assert (step["state"], step["exit_code"]) == ("CANCELLED", 15)  # what n1 said
    h.agents.take("launch", 1)
    h.agents.assert_nothing_else()


def test_a_node_of_a_running_job_that_lists_it_is_not_told_to_terminate(harness):
    h = harness
    jid = two_node_job(h)
    srun(h, jid, ntasks=4)
    h.agents.take("launch", 1)  # the batch script's
    h.agents.assert_nothing_else()
    register(h.ctl, "n2")  # an agent restarted while running step tasks of the job
    h.ctl.nodes.reconcile.report("n2", [jid], h.clock(), 5.0, registering=True)
    h.tick()
    h.agents.take("signal", 0)
    h.agents.assert_nothing_else()


def test_a_requeued_jobs_old_steps_are_closed_and_block_nothing_in_the_new_run(harness):
    h = harness
    jid = two_node_job(h)
    srun(h, jid, ntasks=4)  # step 0 holds every CPU of run 0
    r = h.client.post("/v1/jobs/requeue", json={"job_ids": [jid]})
    assert r.json()["results"][0]["errno"] == 0
    h.pass_time(6)  # requeue_delay=5: eligible again
    h.tick()
    job = h.job(jid)
    assert (job["state"], job["restarts"]) == ("RUNNING", 1)
    assert step_rows(h, jid)["0"]["state"] == "CANCELLED"  # run 0's step will never report
    r = srun(h, jid, ntasks=4)
    assert r.status_code == 200 and r.json()["step_id"] == 1  # ids go on across runs
    launches = h.agents.take("launch", 2)  # the batch script of run 0, then of run 1
    assert [(o.spec.job_id, o.spec.restarts) for o in launches] == [(jid, 0), (jid, 1)]
    # the requeue's terminate orders go from tasks of the route, which the test client's
    # event loop may close before they run: taken whether they went or not
    kills = h.agents.take("signal", sum(o.kind == "signal" for o in h.agents.sent))
    assert len(kills) <= 2 and {o.node for o in kills} <= {"n1", "n2"}
    assert all((o.spec.job_id, o.spec.restarts, o.spec.signal) == (jid, 0, None) for o in kills)
    h.agents.assert_nothing_else()
