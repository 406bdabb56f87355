"""sacctmgr against an in-process controller: words, columns, output forms, refusals.

The client's ``request`` goes to the controller app through FastAPI's test
client (SQLite store in a temporary directory), so every command crosses the
real routes and ``controller.accounting.accounts``; the caller is root unless a test
says otherwise.  Stdin is not a terminal under pytest, so changes commit
without asking, as with ``-i``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli import sacctmgr
from cli import sacctmgr_format as fmt
from cli.sacctmgr_args import parse_words
from controller.auth.callers import Caller
from slurmlite.errors import CommandLineError
from tests.cli.harness import install

ROOT = Caller(uid=0, gid=0, user="root", admin=True)
ALICE = Caller(uid=1001, gid=1001, user="alice")
CONF = """
ClusterName=anchor
SlurmctldHost=localhost(127.0.0.1)
StateSaveLocation={dir}/state
NodeName=n1 NodeAddr=127.0.0.1 CPUs=2 RealMemory=4000
PartitionName=debug Nodes=n1 Default=YES MaxTime=UNLIMITED State=UP
"""


@pytest.fixture
def ctl(live_controller, monkeypatch):
    live = install(monkeypatch, live_controller(CONF, key=b"k" * 64))
    live.ctl.who = live.who  # type: ignore[attr-defined]
    return live.ctl


def run(capsys, line: str) -> tuple[str, str, int]:
    code = sacctmgr.main(line.split())
    out, err = capsys.readouterr()
    return out, err, code


def lab(capsys) -> None:
    for line in ("-i add account vision,nlp fairshare=3", "-i add user alice account=vision",
                 "-i add user bob account=nlp,vision"):  # fmt: skip
        assert run(capsys, line)[2] == 0, line


# ---------------------------------------------------------------- units


def test_words_split_into_names_conditions_and_settings():
    p = parse_words("user", "alice set fairshare=10 where account=vision".split())
    assert (p.names, p.conds, p.sets) == (["alice"], {"accounts": ["vision"]}, {"fairshare": 10})
    p = parse_words("qos", "normal set MaxTRESPerUser=gres/gpu=4 MaxWall=1-00:00:00".split())
    assert p.sets == {"max_tres_pu": "gres/gpu=4", "max_wall": 1440}  # 1 day = 1440 minutes
    assert parse_words("user", ["alice", "set", "qos+=high"]).sets == {"qos_add": ["high"]}
    with pytest.raises(CommandLineError, match=" Bad FairShare value: x"):
        parse_words("account", ["vision", "set", "FairShare=x"])
    with pytest.raises(CommandLineError, match=" Unknown option: bogus=1"):
        parse_words("account", ["vision", "set", "bogus=1"])


def test_format_names_widths_and_forms():
    cols = fmt.parse_format(["acc%12,Share,fairshare,Des,DefaultA"])
    assert [(c.name, c.width) for c in cols] == [
        ("Account", 12), ("Share", 9), ("Share", 9), ("Descr", 20), ("Def Acct", 10)
    ]  # fmt: skip
    with pytest.raises(CommandLineError, match="Unknown field 'Par'"):
        fmt.parse_format(["Par"])
    cols = fmt.parse_format(["Account,User"])
    rows = [{"Account": "averyverylongname", "User": None}]
    # fixed width: right-justified in 10, cut with '+'; a missing value is blank
    assert fmt.render(cols, rows) == (
        "   Account       User \n---------- ---------- \naveryvery+            \n"
    )
    assert fmt.render(cols, rows, "P") == "Account|User\naveryverylongname|\n"
    assert fmt.render(cols, rows, "p", header=False) == "averyverylongname||\n"


# ------------------------------------------------------------- commands


def test_snakemake_probe_lists_one_account_per_line(ctl, capsys):
    lab(capsys)
    out, err, code = run(capsys, "-n -s list user bob format=account%256")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert [line.strip() for line in lines] == ["nlp", "vision"]
    assert all(len(line) == 257 for line in lines)  # 256 columns and the separator
    assert run(capsys, "-n -s list user nobody format=account%256")[0] == ""


def test_show_user_account_assoc_and_qos(ctl, capsys):
    lab(capsys)
    out = run(capsys, "show user alice")[0]
    assert out == (
        "      User   Def Acct     Admin \n"
        "---------- ---------- --------- \n"
        "     alice     vision      None \n"
    )
    out = run(capsys, "-P show assoc format=account,user,share,qos")[0]
    assert out.splitlines() == [
        "Account|User|Share|QOS",
        "root||1|normal",
        "default||1|normal",
        "nlp||3|normal",
        "nlp|bob|1|normal",
        "vision||3|normal",
        "vision|alice|1|normal",
        "vision|bob|1|normal",
    ]
    out = run(capsys, "-p -n show account where parent=root format=account,descr")[0]
    assert out.splitlines() == ["default|default account|", "nlp|nlp|", "vision|vision|"]
    out = run(capsys, "-P show qos format=name,priority,maxwall,maxtrespu")[0]
    assert out.splitlines() == ["Name|Priority|MaxWall|MaxTRESPU", "normal|0||"]


def test_modify_where_set_and_the_lab_gpu_limit(ctl, capsys):
    lab(capsys)
    out, _, code = run(capsys, "-i modify user bob set fairshare=10 where account=vision")
    assert code == 0 and out == " Modified user associations...\n  bob\n"
    out = run(capsys, "-n -P show assoc where user=bob format=account,share")[0]
    assert out.splitlines() == ["nlp|1", "vision|10"]
    out, _, code = run(capsys, "-i modify qos normal set MaxTRESPerUser=gres/gpu=4 MaxWall=2:00:00")
    assert code == 0 and out == " Modified qos...\n  normal\n"
    out = run(capsys, "-n -P show qos normal format=name,maxtrespu,maxwall")[0]
    assert out == "normal|gres/gpu=4|02:00:00\n"


def test_add_reports_and_nothing_new(ctl, capsys):
    out, _, code = run(capsys, "-i add account vision")
    assert code == 0 and out.startswith(" Adding Account(s)\n  vision\n")
    assert "  A = vision     C = anchor    \n" in out
    out, _, code = run(capsys, "-i add account vision")
    assert (out, code) == (" Nothing new added.\n", 1)
    out, err, code = run(capsys, "-i add user carol account=nosuch")
    assert code == 1 and err.startswith(" This account 'nosuch' doesn't exist.")


def test_delete_and_its_refusals(ctl, capsys):
    lab(capsys)
    out, err, code = run(capsys, "-i delete account root")
    assert code == 1 and " You are not allowed to remove the root account." in err
    out, err, code = run(capsys, "-i delete user bob where account=nlp")
    assert code == 1 and err.startswith(" Error with request: You can not remove the default")
    out, _, code = run(capsys, "-i delete user alice")
    assert (out, code) == (" Deleting users...\n  alice\n", 0)
    assert run(capsys, "-i delete qos nosuch")[:3:2] == (" Nothing deleted\n", 1)


def test_non_admin_gets_slurmdbds_refusal(ctl, capsys):
    ctl.who[0] = ALICE
    out, err, code = run(capsys, "-i add account mine")
    assert code == 1
    assert err == (
        "sacctmgr: error: Your user doesn't have privilege to perform this action\n"
        " Problem adding accounts: Access/permission denied\n"
    )
    err, code = run(capsys, "-i modify qos normal set priority=5")[1:]
    assert code == 1 and err.endswith(" Error with request: Access/permission denied\n")
    assert run(capsys, "show qos")[2] == 0  # reading is for everyone


def test_bad_words_exit_1(ctl, capsys):
    assert run(capsys, "show nosuch")[1].startswith("No valid entity in list command")
    assert run(capsys, "bogus")[1:] == ("invalid keyword: bogus\n", 1)
    assert run(capsys, "show user format=Par")[1:] == ("Unknown field 'Par'\n", 1)
    assert run(capsys, "modify user alice")[1:] == (" You didn't give me anything to set\n", 1)
    assert run(capsys, "-r add account x")[2] == 1
    assert run(capsys, "show cluster")[1] == "sacctmgr: error: show cluster is not supported yet\n"


def test_submission_uses_the_new_accounts(ctl, capsys):
    """sacctmgr's changes reach sbatch at once (the submission cache is dropped)."""
    lab(capsys)
    assert ctl.accounts.resolve("alice", None, None, "debug") == ("vision", "normal")
    run(capsys, "-i add qos high")
    run(capsys, "-i modify user alice set qos+=high defaultqos=high")
    assert ctl.accounts.resolve("alice", None, None, "debug") == ("vision", "high")


def test_the_command_imports_none_of_the_heavy_modules():
    """Like tests/cli/test_import_budget.py for the other commands (sacctmgr runs in
    scripts: snakemake calls it before every workflow)."""
    heavy = ("dataclasses", "inspect", "typing", "socket", "datetime", "slurmlite.protocol",
             "slurmlite.config", "fastapi", "pydantic", "sqlalchemy", "httpx", "click")  # fmt: skip
    probe = (
        "import sys, json; import cli.sacctmgr; "
        f"print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert json.loads(out.stdout) == []


def test_a_qos_idle_gpu_policy_is_set_shown_and_removed(ctl, capsys):
    # slurmlite's IdleGpuPolicy (docs/idle-gpus.md): checked here, then by the controller
    line = "-i modify qos normal set IdleGpuPolicy=window=1:00:00,action=cancel"
    assert run(capsys, line)[::2] == (" Modified qos...\n  normal\n", 0)
    out = run(capsys, "-n -P show qos normal format=name,idlegpupolicy")[0]
    assert out == "normal|window=1:00:00,action=cancel\n"
    out, err, code = run(capsys, "-i modify qos normal set IdleGpuPolicy=window=soon")
    assert (out, err, code) == ("", " Bad IdleGpuPolicy value: window=soon\n", 1)
    assert run(capsys, "-i modify qos normal set IdleGpuPolicy=-1")[2] == 0
    assert run(capsys, "-n -P show qos normal format=name,idlegpu")[0] == "normal|\n"
