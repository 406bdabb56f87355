"""sshare: the golden tables byte for byte from share rows, row selection, -o, and
``GET /v1/shares`` on a controller with a running job.

The golden cluster (``50_sshare*``): root -> root (user), acct_a, acct_b (1 share
each), each account with users alice and root; alice's job 50 (4 CPUs, 4000 MB,
2 nodes, 4 GPUs, no time limit) running under acct_a.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shlex

import pytest

from cli import sshare
from cli import sshare_format as sf
from cli.common import version_line
from controller.accounting.shares import INFINITE_MINUTES, RunningCharge, share_rows
from controller.store.models import AssocRow
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.protocol import to_dict
from slurmlite.protocol_policy import SharesAnswer
from slurmlite.scheduler.fairshare import account, compute_fairshare, root, user
from tests.api.conftest import ALICE, CONF, KEY, register
from tests.cli.harness import install
from tests.golden_path import golden_path
from tests.unit.test_fairshare import golden_tree

VERSION_OUT = version_line() + "\n"  # slurm-wlm 22.05.8 (slurmlite X)

TRES = ["cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages", "gres/gpu"]
BIG_RUNNING = RunningCharge(
    ("acct_a", "alice"),
    {"cpu": 4, "mem": 4000, "node": 2, "gres/gpu": 4},
    billing=4.0,
    uncharged=0.0,
    minutes_left=INFINITE_MINUTES,
)


def read_golden(name: str) -> tuple[list[str], str, int]:
    """(argv after the program name, stdout text, exit status)."""
    path = golden_path(name)
    lines = path.read_text().splitlines()
    argv = shlex.split(lines[0][2:])[1:]
    end = next(i for i, line in enumerate(lines) if line.startswith(("[stderr]", "[exit")))
    status = int(lines[-1].removeprefix("[exit ").rstrip("]"))
    return argv, "".join(line + "\n" for line in lines[1:end]), status


def golden_answer() -> SharesAnswer:
    """The golden's rows.  Its RawUsage of alice (68) and root (78) in acct_a was charged
    at job ends after the last fair-share calculation, whose EffectvUsage the file shows
    (tests/unit/test_fairshare.golden_tree); so those two usages are set afterwards:
    68.5 + 78.5 = 147, acct_a's and root's RawUsage."""
    rows = share_rows(compute_fairshare(golden_tree()), [BIG_RUNNING], TRES)
    later = {("acct_a", "alice"): 68.5, ("acct_a", "root"): 78.5}
    rows = [
        dataclasses.replace(r, raw_usage=later.get((r.account, r.user), r.raw_usage)) for r in rows
    ]
    return SharesAnswer(fair_tree=True, now=1796005759.0, rows=rows)


class Config:
    cluster_name = "anchor"


class FakeClient:
    """Answers ``GET /v1/shares`` with the JSON of ``answer`` (or raises ``error``)."""

    def __init__(self, answer: SharesAnswer) -> None:
        self.answer = answer
        self.error: SlurmError | None = None
        self.calls: list[tuple[str, str]] = []
        self.config = Config()

    def request(self, method: str, path: str, body: object = None, query: object = None) -> dict:
        self.calls.append((method, path))
        if self.error is not None:
            raise self.error
        return to_dict(self.answer)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    fake = FakeClient(golden_answer())
    install(monkeypatch, fake)
    monkeypatch.setattr(sshare, "_caller", lambda: "alice")  # the golden ran as alice
    return fake


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str, int]:
    with pytest.raises(SystemExit) as exc:
        sshare.main(argv)
    out, err = capsys.readouterr()
    return out, err, int(exc.value.code or 0)


# ------------------------------------------------------------------ goldens


@pytest.mark.parametrize("golden", ["50_sshare.txt", "50_sshare_a_l.txt", "50_sshare_parsable.txt"])
def test_golden_commands(golden: str, fake: FakeClient, capsys: pytest.CaptureFixture[str]):
    argv, stdout, status = read_golden(golden)
    assert run(argv, capsys) == (stdout, "", status)
    assert fake.calls == [("GET", "/v1/shares")]


def test_the_header_and_dashes_lines_end_with_a_space(fake, capsys):
    out, _, _ = run([], capsys)
    header, dashes = out.splitlines()[:2]
    # Account 20 (left) + User 10 + RawShares 10 + NormShares 11 + RawUsage 11
    # + EffectvUsage 13 + FairShare 10, each followed by a space: 85 + 7 = 92
    assert len(header) == len(dashes) == 92 and header.endswith("FairShare ")
    assert dashes == "-" * 20 + " " + "-" * 10 + " " + "-" * 10 + " " + "-" * 11 + " " + (
        "-" * 11 + " " + "-" * 13 + " " + "-" * 10 + " "
    )


def test_tres_run_mins_counts_the_unlimited_job_as_infinite_minutes():
    rows = {(r.account, r.user): r for r in golden_answer().rows}
    # 4 CPUs x 4294967295 min = 17179869180; 4000 MB x ... = 17179869180000
    assert rows[("root", None)].tres_run_mins["cpu"] == 17179869180
    assert rows[("acct_a", None)].tres_run_mins["mem"] == 17179869180000
    assert rows[("acct_a", "alice")].tres_run_mins["gres/gpu"] == 4 * INFINITE_MINUTES
    assert set(rows[("acct_b", None)].tres_run_mins.values()) == {0}
    assert rows[("acct_a", "root")].tres_run_mins["cpu"] == 0


# -------------------------------------------------------- which rows, which columns


def lines_of(out: str) -> list[str]:
    return [line.rstrip() for line in out.splitlines()]


def test_users_only_keeps_the_user_rows(fake, capsys):
    out, _, code = run(["-a", "-U", "-P", "-n"], capsys)
    assert code == 0
    assert [x.split("|")[:2] for x in out.splitlines()] == [
        [" root", "root"],
        ["  acct_a", "alice"],
        ["  acct_a", "root"],
        ["  acct_b", "alice"],
        ["  acct_b", "root"],
    ]


def test_users_and_accounts_select_rows(fake, capsys):
    out, _, _ = run(["-u", "root", "-A", "acct_b", "-P", "-n"], capsys)
    # acct_b's own row and root's row under it; alice's and other accounts' are gone
    assert [x.split("|")[:2] for x in out.splitlines()] == [[" acct_b", ""], ["  acct_b", "root"]]
    out, _, _ = run(["-u", "-1", "-P", "-n", "-o", "User"], capsys)
    assert out.splitlines() == ["", "root", "", "alice", "root", "", "alice", "root"]


def test_snakemakes_account_query(fake, capsys):
    # sshare -U --format Account%256 --noheader: the width is right-justified
    out, _, code = run(["-U", "--format", "Account%256", "--noheader"], capsys)
    assert code == 0
    assert out.splitlines() == [" " * 248 + "  acct_a ", " " * 248 + "  acct_b "]
    assert [x.strip() for x in out.splitlines()] == ["acct_a", "acct_b"]


def test_format_names_are_case_insensitive_prefixes_with_widths(fake, capsys):
    out, _, _ = run(["-o", "acc%-8,fair,levelfs%4", "-u", "alice"], capsys)
    assert lines_of(out) == [
        "Account   FairShare Leve",
        "-------- ---------- ----",
        "root",
        " acct_a             0.333333",  # numbers are never cut
        "  acct_a   0.400000 4.867477",
        " acct_b              inf",
        "  acct_b   1.000000  inf",
    ]


def test_an_unknown_field_is_refused_before_asking_the_controller(fake, capsys):
    out, err, code = run(["-o", "Account,Bogus"], capsys)
    assert (out, err, code, fake.calls) == ("", "Unknown field 'Bogus'\n", 1, [])


def test_parsable_ends_every_field_with_a_bar(fake, capsys):
    out, _, _ = run(["-p", "-a", "-o", "Account,RawShares", "-A", "root"], capsys)
    # root's RawShares is blank; its user root has 1 share
    assert out.splitlines() == ["Account|RawShares|", "root||", " root|1|"]


def test_a_long_account_is_cut_with_a_plus_but_not_when_parsable():
    tree = root(account("computer_vision_lab", 2, user("alice", 1, 10)), usage=0)
    answer = share_rows(compute_fairshare(tree), [], TRES)
    cols = sf.parse_fields(["Account,RawShares"])
    # depth 1: " computer_vision_lab" is 20 characters and fits; its user row's 21
    # become the first 19 and a +
    assert sf.render(cols, answer, header=False) == [
        "root                            ",
        " computer_vision_lab          2 ",
        "  computer_vision_l+          1 ",
    ]
    assert sf.render(cols, answer, "P", header=False)[2] == "  computer_vision_lab|1"


def test_classic_long_has_no_levelfs_and_a_fairshare_on_every_row():
    tree = root(account("vision", 3, user("alice", 1, 600)), account("nlp", None, user("c", 1)))
    rows = share_rows(compute_fairshare(tree, fair_tree=False), [], TRES)
    cols = sf.default_columns(long=True, fair_tree=False)
    assert [c.name for c in cols] == [
        "Account", "User", "RawShares", "NormShares", "RawUsage", "NormUsage",
        "EffectvUsage", "FairShare", "GrpTRESMins", "TRESRunMins",
    ]  # fmt: skip
    parsed = [x.split("|") for x in sf.render(cols, rows, "P")[1:]]
    assert all(x[7] for x in parsed)  # FairShare everywhere
    # nlp is FairShare=parent: RawShares "parent"
    assert [x[2] for x in parsed if x[0].strip() == "nlp" and not x[1]] == ["parent"]


def test_the_controller_unreachable(fake, capsys):
    fake.error = SlurmError(errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR)
    out, err, code = run([], capsys)
    assert (out, code) == ("", 1)
    assert err.startswith("sshare: error: Unable to contact slurm controller")


def test_version_and_help_do_not_ask_the_controller(fake, capsys):
    out, _, code = run(["-V"], capsys)
    assert (out, code, fake.calls) == (VERSION_OUT, 0, [])
    out, _, code = run(["--help"], capsys)
    assert code == 0 and "--Users" in out and fake.calls == []


# ---------------------------------------------------- GET /v1/shares, live controller


@pytest.fixture
def live(live_controller):
    live = live_controller(CONF, key=KEY, who=ALICE)
    ctl = live.ctl
    register(ctl, "n1")
    register(ctl, "n2")
    with ctl.db.write() as s:  # the golden cluster's associations
        s.merge(AssocRow(account="root", user="", parent=None, shares=1))
        s.merge(AssocRow(account="root", user="root", shares=1))
        for acct in ("acct_a", "acct_b"):
            s.merge(AssocRow(account=acct, user="", parent="root", shares=1))
            for who in ("alice", "root"):
                s.merge(AssocRow(account=acct, user=who, shares=1))
        s.merge(AssocRow(account="acct_a", user="root", shares=1, raw_usage=100.0))
    return live


def test_the_route_charges_a_running_job_and_counts_its_minutes_left(live):
    ctl, http = live.ctl, live.http
    body = {"script": "#!/bin/sh\ntrue\n", "name": "j", "work_dir": "/tmp", "submit_dir": "/tmp",
            "submit_host": "vm", "account": "acct_a", "ntasks": 2, "time_limit": 10}  # fmt: skip
    job = http.post("/v1/jobs", json=body).json()["job_id"]
    asyncio.run(ctl.loop.tick())
    assert http.get("/v1/jobs", params={"ids": job}).json()["jobs"][0]["state"] == "RUNNING"
    ctl.clock.advance(90)  # type: ignore[attr-defined]
    answer = http.get("/v1/shares").json()
    rows = {(r["account"], r["user"]): r for r in answer["rows"]}
    assert answer["fair_tree"] is True
    # 90 s x 2 CPUs (no billing weights: billing = CPUs) = 180 billing-seconds
    assert rows[("acct_a", "alice")]["raw_usage"] == pytest.approx(180)
    assert rows[("acct_a", None)]["raw_usage"] == pytest.approx(280)  # + root's 100
    # 10 min limit, 1.5 min gone: 8 whole minutes left x 2 CPUs = 16; 2000 MB x 8
    mins = rows[("acct_a", "alice")]["tres_run_mins"]
    assert (mins["cpu"], mins["mem"], mins["node"], mins["billing"]) == (16, 16000, 8, 16)
    assert rows[("root", None)]["tres_run_mins"]["cpu"] == 16
    assert rows[("acct_b", None)]["tres_run_mins"]["cpu"] == 0
    # alice used more of acct_a (180 of 280) than root: root ranks above her there
    assert rows[("acct_a", "root")]["fairshare"] > rows[("acct_a", "alice")]["fairshare"]
    # acct_b has no usage: LevelFS infinite, sent as a flag (JSON has no infinity)
    assert rows[("acct_b", None)]["level_fs"] is None and rows[("acct_b", None)]["level_fs_inf"]


def test_uncharged_usage_goes_to_the_user_else_to_the_account_row():
    from controller.accounting.shares import with_running_usage
    from slurmlite.scheduler.fairshare import AssocRecord

    records = [AssocRecord("lab"), AssocRecord("lab", "alice", usage=10.0)]

    def owed(acct: str, who: str, amount: float) -> RunningCharge:
        return RunningCharge((acct, who), {"cpu": 1}, 1.0, amount, 0)

    runs = [owed("lab", "alice", 5.0), owed("lab", "bob", 7.0), owed("gone", "alice", 3.0)]
    got = {(r.account, r.user): r.usage for r in with_running_usage(records, runs)}
    # alice 10 + 5; bob has no association: lab's own row gets his 7; "gone" is not tracked
    assert got == {("lab", None): 7.0, ("lab", "alice"): 15.0}
