"""Site-script environments (``slurmlite.scriptenv``), restart causes and the script runner."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from cli import sacct_format as af
from slurmlite.restarts import KEEP, NODE_FAIL, PROLOG, REQUEUE, add_cause, launch_failures
from slurmlite.scriptenv import (
    EPILOG,
    EPILOG_SLURMCTLD,
    PROLOG_SLURMCTLD,
    ScriptJob,
    script_environment,
)
from slurmlite.scriptenv import (
    PROLOG as PROLOG_CTX,
)
from slurmlite.sitescript import run_site_script

JOB = ScriptJob(42, "train", 1001, 1002, "alice", "gpu", "lab", "n[1-2]", "/home/alice",
                group="staff", gpus="0,1")  # fmt: skip
COMMON = {
    "SLURM_CLUSTER_NAME": "c",
    "SLURM_JOB_ID": "42",
    "SLURM_JOB_UID": "1001",
    "SLURM_JOB_GID": "1002",
    "SLURM_JOB_USER": "alice",
    "SLURM_JOB_NAME": "train",
    "SLURM_JOB_NODELIST": "n[1-2]",
    "SLURM_JOB_PARTITION": "gpu",
    "SLURM_JOB_ACCOUNT": "lab",
    "SLURM_JOB_WORK_DIR": "/home/alice",
}


def test_the_agent_scripts_get_the_node_and_its_gpus_but_no_path() -> None:
    env = script_environment(PROLOG_CTX, JOB, cluster="c", conf_path="/etc/s.conf", node="n1")
    assert env == {
        **COMMON,
        "SLURM_SCRIPT_CONTEXT": "prolog_slurmd",
        "SLURMD_NODENAME": "n1",
        "SLURM_CONF": "/etc/s.conf",
        "SLURM_JOB_GPUS": "0,1",
        "CUDA_VISIBLE_DEVICES": "0,1",
    }
    assert script_environment(EPILOG, JOB, cluster="c", node="n1")["SLURM_SCRIPT_CONTEXT"] == (
        "epilog_slurmd"
    )


def test_the_controller_scripts_get_the_group_and_at_the_end_the_exit_codes() -> None:
    env = script_environment(PROLOG_SLURMCTLD, JOB, cluster="c")
    assert env == {**COMMON, "SLURM_SCRIPT_CONTEXT": "prolog_slurmctld", "SLURM_JOB_GROUP": "staff"}
    # exit 3 -> raw wait status 3 << 8 = 768 -> "3:0"; a step that died of signal 9: 9
    env = script_environment(EPILOG_SLURMCTLD, JOB, cluster="c", exit_code=768, derived_exit_code=9)
    assert (env["SLURM_JOB_EXIT_CODE"], env["SLURM_JOB_EXIT_CODE2"]) == ("768", "3:0")
    assert env["SLURM_JOB_DERIVED_EC"] == "9" and "SLURMD_NODENAME" not in env


def test_array_tasks_and_constraints_appear_only_when_the_job_has_them() -> None:
    plain = script_environment(PROLOG_SLURMCTLD, JOB, cluster="c")
    assert "SLURM_ARRAY_JOB_ID" not in plain and "SLURM_JOB_CONSTRAINTS" not in plain
    task = ScriptJob(**{**JOB.__dict__, "array_job_id": 40, "array_task_id": 2,
                        "constraints": "a100"})  # fmt: skip
    env = script_environment(PROLOG_SLURMCTLD, task, cluster="c")
    assert (env["SLURM_ARRAY_JOB_ID"], env["SLURM_ARRAY_TASK_ID"]) == ("40", "2")
    assert env["SLURM_JOB_CONSTRAINTS"] == "a100"
    with pytest.raises(ValueError):
        script_environment("task_prolog", JOB, cluster="c")


def test_restart_causes_are_kept_in_order_and_counted() -> None:
    text = add_cause(add_cause(add_cause("", NODE_FAIL, "n1+n2"), REQUEUE, "alice"), PROLOG, "n3")
    assert text == "node_fail:n1+n2,requeue:alice,prolog:n3"
    assert launch_failures(text) == 1 and launch_failures("") == 0
    many = ""
    for _ in range(KEEP + 5):
        many = add_cause(many, PROLOG, "n1")
    assert len(many.split(",")) == KEEP  # the latest only
    assert add_cause("", REQUEUE, "a,b") == "requeue:a_b"  # a comma never splits a cause
    with pytest.raises(ValueError):
        add_cause("", "Bored")


def test_sacct_names_the_restart_fields_but_does_not_list_them_as_22_05_fields() -> None:
    cols = af.parse_fields("restarts,restartc%20,")
    assert [(c.name, c.width) for c in cols] == [("Restarts", 8), ("RestartCauses", 20)]
    assert "Restart" not in af.helpformat_text()
    assert "Restarts" not in [c.name for c in af.parse_fields("ALL,")]
    # "res" still means Reservation, the first 22.05 field it begins
    assert af.parse_fields("res,")[0].name == "Reservation"


def test_the_runner_says_why_a_script_failed(tmp_path: Path) -> None:
    ok, bad, slow = (tmp_path / n for n in ("ok", "bad", "slow"))
    ok.write_text('#!/bin/sh\n[ "$X" = 1 ] && [ -z "$HOME" ]\n')
    bad.write_text("#!/bin/sh\nexit 4\n")
    slow.write_text("#!/bin/sh\nsleep 30\n")
    for p in (ok, bad, slow):
        p.chmod(0o755)
    run = lambda path, timeout=5: asyncio.run(run_site_script(str(path), {"X": "1"}, timeout))  # noqa: E731
    assert run(ok) is None  # exactly the environment given: no HOME
    assert run(bad) == "exit status 4"
    assert run(slow, 0.3) == "timed out after 0.3 s"
    assert run(tmp_path / "missing").startswith("cannot run ")
