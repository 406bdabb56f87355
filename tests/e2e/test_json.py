"""``--json`` on a real cluster: each command's document agrees with its own text output.

One job runs on the session cluster (``anchor``: n1 and n2, 2 CPUs and 2
GPUs each) holding a GPU, and one has finished.  For each command the JSON
is parsed and the fields a script reads are checked against what the same
command prints as text: squeue's ``%i %T %N %P``, sacct's ``-P`` columns,
sinfo's node states, and the ``Key=`` values of ``scontrol show``.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.conftest import wait_for


@pytest.fixture
def jobs(cluster, jobdir):
    """(running job holding one GPU, finished job); the running one is cancelled after."""
    done = cluster.submit("-J json-done --wrap true", cwd=jobdir)
    cluster.wait_done(done)
    running = cluster.submit("-J json-run --gres=gpu:1 --wrap 'sleep 60'", cwd=jobdir)
    state = lambda: cluster.run(f"squeue -h -j {running} -o %T").stdout.strip()  # noqa: E731
    wait_for(lambda: state() == "RUNNING", what=f"job {running} to run")
    yield running, done
    cluster.run(f"scancel {running}")
    cluster.wait_done(running)


def as_json(cluster, command: str) -> dict:
    r = cluster.run(command)
    assert (r.stderr, r.returncode) == ("", 0), command
    return json.loads(r.stdout)


def keyed(text: str) -> dict[str, str]:
    """``scontrol show`` text as a dict of its ``Key=value`` words."""
    return dict(m.groups() for m in re.finditer(r"([\w/:]+)=(\S*)", text))


def test_squeue_json_matches_the_text_listing(cluster, jobs):
    running, done = jobs
    text = cluster.run(f"squeue -h -t all -j {running},{done} -o '%i %T %N %P %j'").stdout
    rows = {int(line.split()[0]): line.split()[1:] for line in text.splitlines()}
    shown = as_json(cluster, f"squeue --json -t all -j {running},{done}")["jobs"]
    assert {
        j["job_id"]: [j["job_state"], j["nodes"], j["partition"], j["name"]] for j in shown
    } == rows
    run = next(j for j in shown if j["job_id"] == running)
    assert run["tres_per_node"] == "gres:gpu:1" and len(run["gres_detail"]) == 1
    assert run["job_resources"]["nodes"] == run["nodes"]
    assert as_json(cluster, "squeue --json -u nobody")["jobs"] == []


def test_sacct_json_matches_the_parsable_rows(cluster, jobs):
    _, done = jobs
    text = cluster.run(f"sacct -P -n -j {done} -o JobID,JobName,State,ExitCode,NodeList").stdout
    rows = [line.split("|") for line in text.splitlines()]
    [job] = as_json(cluster, f"sacct --json -j {done}")["jobs"]
    assert [str(job["job_id"]), job["name"], job["state"]["current"]] == rows[0][:3]
    assert job["nodes"] == rows[0][4] and job["exit_code"]["return_code"] == 0
    steps = [f"{done}.{s['step']['id']}" for s in job["steps"]]
    assert steps == [r[0] for r in rows[1:]]


def test_sinfo_json_matches_the_node_listing(cluster, jobs):
    text = cluster.run("sinfo -h -N -p debug -o '%N %C'").stdout
    cpus = {
        line.split()[0]: line.split()[1] for line in text.splitlines()
    }  # alloc/idle/other/total
    doc = as_json(cluster, "sinfo --json -p debug")
    assert [p["name"] for p in doc["partitions"]] == ["debug"]
    for node in doc["nodes"]:
        alloc, idle, _, total = cpus[node["name"]].split("/")
        assert (node["alloc_cpus"], node["idle_cpus"], node["cpus"]) == (
            int(alloc),
            int(idle),
            int(total),
        )


def test_scontrol_json_matches_show_records(cluster, jobs):
    running, _ = jobs
    [job] = as_json(cluster, f"scontrol --json show job {running}")["jobs"]
    text = keyed(cluster.run(f"scontrol show job {running}").stdout)
    assert (job["job_state"], job["nodes"], job["batch_host"]) == (
        text["JobState"],
        text["NodeList"],
        text["BatchHost"],
    )
    assert job["tres_alloc_str"] == text["TRES"]
    [node] = as_json(cluster, f"scontrol show node {job['batch_host']} --json")["nodes"]
    shown = keyed(cluster.run(f"scontrol show node {job['batch_host']}").stdout)
    assert (node["alloc_cpus"], node["real_memory"]) == (
        int(shown["CPUAlloc"]),
        int(shown["RealMemory"]),
    )
    assert node["gres"] == shown["Gres"]
    parts = as_json(cluster, "scontrol --json show partition long")["partitions"]
    shown = keyed(cluster.run("scontrol show partition long").stdout)
    assert [(p["name"], p["total_cpus"]) for p in parts] == [("long", int(shown["TotalCPUs"]))]
