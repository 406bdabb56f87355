"""``GET /v1/jobs/{job_id}/explain`` through the app, on the in-process controller.

Cluster of ``conftest.CONF``: n1, n2 with 2 CPUs, 4000 MiB and 2 GPUs each,
DefMemPerCPU=1000; the clock is fake (1.8e9 s), so a 60-minute job that starts
now ends at exactly now + 3600.
"""

from __future__ import annotations

import json

from tests.api.conftest import ALICE, BOB, ROOT


def _all_gpus_taken(h) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Alice's job holds both GPUs of both nodes for 60 min; Bob's wants one GPU."""
    big = h.submit(nodes_min=2, gpus_per_node=2, time_limit=60)["job_id"]
    h.tick()
    assert h.job(big)["state"] == "RUNNING"
    h.as_user(BOB)
    small = h.submit(gpus_per_node=1, time_limit=30)["job_id"]
    h.tick()
    assert h.job(small)["state"] == "PENDING"
    return big, small


def test_pending_gpu_job_is_explained_with_the_running_job_that_blocks_it(harness):
    h = harness
    big, small = _all_gpus_taken(h)
    r = h.client.get(f"/v1/jobs/{small}/explain")
    assert r.status_code == 200, r.text
    out = r.json()
    assert (out["job_id"], out["state"], out["user"]) == (small, "PENDING", "bob")
    assert out["reason"] == "Resources" and out["starts_now"] is False
    # every GPU of n1 and n2 is held by the big job: each node lacks one GPU
    for node in out["nodes"]:
        assert node["fits_now"] is False and node["gpus_free"] == []
        assert [g["job_id"] for g in node["gpus_busy"]] == [big, big]
    assert [(b["job_id"], b["kind"]) for b in out["blockers"]] == [(big, "running")]
    assert out["suggestions"] == []  # nothing Bob could change frees a GPU sooner
    # the backfill estimate: when the big job's 60 minutes are up (1.8e9 is a whole
    # minute, so bf_resolution's rounding changes nothing)
    assert out["estimated_start"] == h.clock() + 3600


def test_running_job_gets_a_message_not_an_explanation(harness):
    h = harness
    big, _small = _all_gpus_taken(h)
    out = h.client.get(f"/v1/jobs/{big}/explain").json()
    assert out["state"] == "RUNNING"
    assert out["message"].startswith(f"job {big} is RUNNING since ")
    assert out["message"].endswith(" on n[1-2]")
    assert out["nodes"] == [] and out["suggestions"] == []


def test_held_job_is_explained_as_held(harness):
    h = harness
    held = h.submit(hold=True)["job_id"]
    out = h.client.get(f"/v1/jobs/{held}/explain").json()
    assert out["reason"] == "JobHeldUser"
    assert any(f"scontrol release {held}" in note for note in out["notes"])


def test_unknown_job_is_invalid_job_id(harness):
    r = harness.client.get("/v1/jobs/4242/explain")
    assert r.status_code == 404
    assert r.json()["error"] == "Invalid job id specified"


def test_private_data_hides_other_users_jobs_as_if_unknown(harness):
    h = harness
    _big, small = _all_gpus_taken(h)  # small is Bob's
    h.as_user(ALICE)
    assert h.client.get(f"/v1/jobs/{small}/explain").status_code == 200  # default: all visible
    h.ctl.cfg.private_data = ["jobs"]
    r = h.client.get(f"/v1/jobs/{small}/explain")
    assert (r.status_code, r.json()["error"]) == (404, "Invalid job id specified")
    h.as_user(BOB)  # the owner
    assert h.client.get(f"/v1/jobs/{small}/explain").status_code == 200
    h.as_user(ROOT)  # an operator
    assert h.client.get(f"/v1/jobs/{small}/explain").status_code == 200


def test_less_memory_is_suggested_with_the_start_the_pass_gives_and_rendered(harness):
    # Alice's job holds 3000 of the 4000 MiB of n1 and of n2 for 60 min; Bob's asks
    # --mem=2000: 1000 MiB free on each node is too little.  With --mem=1000M the
    # re-run pass starts it now (h.clock()).
    from cli.slurmlite_explain import render

    h = harness
    big = h.submit(nodes_min=2, mem_per_node=3000, time_limit=60)["job_id"]
    h.tick()
    h.as_user(BOB)
    small = h.submit(mem_per_node=2000, time_limit=30)["job_id"]
    out = h.client.get(f"/v1/jobs/{small}/explain").json()
    assert [n["problems"] for n in out["nodes"]] == [
        ["memory: needs 2000 MiB, 1000 of 4000 free"]
    ] * 2
    mem = [s for s in out["suggestions"] if s["option"] == "mem"]
    assert [(s["flag"], s["start"]) for s in mem] == [("--mem=1000M", h.clock())]
    report = render(out)
    assert f"Job {small} (bob, partition debug) is PENDING, reason Resources:" in report
    assert "  n1: memory: needs 2000 MiB, 1000 of 4000 free" in report
    assert f"  job {big} (alice) running on n1" in report
    assert "with --mem=1000M it would start at " in report and "(now) instead of" in report


def test_the_command_prints_the_report_the_json_and_slurms_error(harness, monkeypatch):
    # `slurmlite explain` with its client answered by this app (no socket needed)
    from click.testing import CliRunner

    import cli.client
    from cli.slurmlite import main

    h = harness
    _big, small = _all_gpus_taken(h)

    class Proxy:
        def request(self, method: str, path: str):  # type: ignore[no-untyped-def]
            r = h.client.request(method, path)
            if r.status_code >= 400:
                raise cli.client._error_from(r.status_code, r.json())
            return r.json()

    monkeypatch.setattr(cli.client.ControllerClient, "from_env", lambda *a: Proxy())
    r = CliRunner().invoke(main, ["explain", str(small)])
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"Job {small} (bob, partition debug) is PENDING, reason Resources:")
    r = CliRunner().invoke(main, ["explain", "--json", str(small)])
    assert r.exit_code == 0 and json.loads(r.output)["job_id"] == small
    r = CliRunner().invoke(main, ["explain", "4242"])
    # ESLURM_INVALID_JOB_ID = 2017; a command exits with code & 0xff = 225
    assert (r.exit_code, r.output) == (225, "slurmlite: error: Invalid job id specified\n")


def test_a_dependent_job_says_what_it_waits_for(harness):
    # the running target's end is its start plus its 30-minute limit
    from cli.slurmlite_explain import render
    from slurmlite.timefmt import fmt_timestamp

    h = harness
    first = h.submit(time_limit=30)["job_id"]
    h.tick()
    started = h.job(first)["start_time"]
    later = h.submit(dependency=f"afterok:{first},afterany:4242", begin_time=h.clock() + 600)
    h.tick()
    out = h.client.get(f"/v1/jobs/{later['job_id']}/explain").json()
    assert out["reason"] == "BeginTime"  # as Slurm, the begin time is checked first
    end = fmt_timestamp(started + 1800)
    begin = fmt_timestamp(h.clock() + 600)
    assert out["waits_for"] == [
        f"afterok:{first} — job {first} is RUNNING, expected to end by {end}",
        f"begin time {begin} (--begin)",
    ]  # afterany:4242 (an unknown job) counted as ended and was dropped by the pass
    assert f"Waits for:\n  afterok:{first} — job {first} is RUNNING" in render(out)


def test_a_never_satisfied_dependency_says_so(harness):
    from slurmlite.protocol import JobCompletion

    h = harness
    first = h.submit()["job_id"]
    h.tick()
    second = h.submit(dependency=f"afterok:{first}")["job_id"]
    msg = JobCompletion(node="n1", job_id=first, restarts=0, step_id="batch", exit_code=1)
    h.ctl.jobs.complete(h.job(first)["batch_host"], msg)
    h.tick()
    out = h.client.get(f"/v1/jobs/{second}/explain").json()
    assert out["reason"] == "DependencyNeverSatisfied"
    assert out["waits_for"] == [
        f"afterok:{first} — (failed: can never be met) job {first} is FAILED"
    ]


def test_a_job_waiting_for_a_dependency_is_not_ahead_and_reserves_nothing(harness):
    # Alice's first job holds every GPU for 60 min; her second, above Bob's job in the
    # queue, waits for the first to succeed.  It cannot run before then, so Bob's 30-min
    # job starts when the first ends, not after the dependent job's reservation.
    h = harness
    first = h.submit(nodes_min=2, gpus_per_node=2, time_limit=60)["job_id"]
    h.tick()
    then = h.submit(nodes_min=2, gpus_per_node=2, time_limit=60, dependency=f"afterok:{first}")
    h.as_user(BOB)
    small = h.submit(gpus_per_node=1, time_limit=30)["job_id"]
    h.tick()
    assert h.job(then["job_id"])["reason"] == "Dependency"
    out = h.client.get(f"/v1/jobs/{small}/explain").json()
    assert out["queue"]["ahead_on_nodes"] == 0
    assert [(b["job_id"], b["kind"]) for b in out["blockers"]] == [(first, "running")]
    assert out["estimated_start"] == h.clock() + 3600


def test_a_job_that_can_never_run_says_never_and_the_request_that_fits(harness):
    from cli.slurmlite_explain import render

    h = harness
    job = h.submit(nodes_min=3, time_limit=10)["job_id"]
    h.tick()
    out = h.client.get(f"/v1/jobs/{job}/explain").json()
    assert out["reason"] == "PartitionNodeLimit"
    assert out["never"] == ["partition debug has 2 nodes; ask for -N 2 or fewer"]
    text = render(out)
    assert "Estimated start: never, as asked\n" in text
    assert "Blocked by:\n  partition debug has 2 nodes; ask for -N 2 or fewer\n" in text
