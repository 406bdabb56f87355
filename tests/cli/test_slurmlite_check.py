"""``slurmlite check``: the store's invariants through the controller (a live one in process).

Clean -> nothing printed, exit 0; a violation -> one line for it, exit 1;
``--repair`` -> the violation and its repair, exit 1 (something was found);
then clean again.  A user who is not an operator gets Slurm's words.
"""

from __future__ import annotations

import asyncio

from click.testing import CliRunner

from cli.slurmlite import main
from controller.store.models import JobRow
from slurmlite import errors
from slurmlite.errors import SlurmError
from tests.api.conftest import ALICE, CONF, KEY, register
from tests.cli.harness import ROOT, install, unreachable


def check(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["check", *args])
    return r.exit_code, r.output


def test_clean_then_broken_then_repaired(live_controller, monkeypatch):
    live = install(monkeypatch, live_controller(CONF, key=KEY, who=ROOT))
    ctl = live.ctl
    register(ctl, "n1")
    register(ctl, "n2")
    assert check() == (0, "")
    body = {"script": "#!/bin/sh\ntrue\n", "name": "j", "work_dir": "/tmp", "submit_dir": "/tmp",
            "submit_host": "vm"}  # fmt: skip
    jid = live.http.post("/v1/jobs", json=body).json()["job_id"]
    asyncio.run(ctl.loop.tick())
    with ctl.db.write() as s:  # a requeue that forgot to give back the nodes
        row = s.get(JobRow, jid)
        row.state, row.start_time, row.end_time = "PENDING", None, None
    line = (
        f'rule=idle_job_holds_nodes job={jid} what="PENDING but holds an allocation and nodes n1"'
    )
    assert check() == (1, line + "\n")
    assert check() == (1, line + "\n")  # a check alone mends nothing
    repaired = f'repaired rule=idle_job_holds_nodes job={jid} what="released its allocation"'
    assert check("--repair") == (1, f"{line}\n{repaired}\n")
    assert check() == (0, "")


def test_a_user_who_is_not_an_operator_is_refused(live_controller, monkeypatch):
    install(monkeypatch, live_controller(CONF, key=KEY, who=ALICE))
    refused = (errors.ESLURM_ACCESS_DENIED & 0xFF, "slurmlite: error: Access/permission denied\n")
    assert check() == refused  # exit 210, as Slurm's commands exit on that error
    assert check("--repair") == refused


def test_the_controller_unreachable(monkeypatch):
    unreachable(monkeypatch, SlurmError(errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR))
    code, out = check()
    assert code == errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR & 0xFF  # not 1: no verdict
    assert out.startswith("slurmlite: error: Unable to contact slurm controller")
