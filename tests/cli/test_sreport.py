"""sreport through a real controller: the three reports, every ``-t`` unit, ``--tres``,
``-p``/``-P``/``-n``, ``TopCount``/``group``, PrivateData, and Slurm's refusals.

No golden capture of sreport exists: the layouts are Slurm 22.05's as its
source prints them (``cli/sreport_format.py`` lists the rules).

The cluster: n1, n2 with 2 CPUs and 2 GPUs each -> 4 CPUs, 4 GPUs; the day
2026-11-01 (local time), 86400 s: reported 4 x 86400 = 345600 s = 5760 min.

    job  user/account  held                        ran (hours of the day)  in the day
    1    alice/lab     2 CPUs, 1 GPU (n1)          10 .. 12                2 h
    2    bob/lab       1 CPU                       -1 .. 1                 1 h (clipped)
    3    alice/ml      4 CPUs, --gpus=4 (n1,n2)    20 .. 26                4 h (clipped)

CPU: 2 x 7200 = 14400 (240 min) + 3600 (60) + 4 x 14400 = 57600 (960) = 75600 s
(1260 min, 21 h, 21.875 %); idle 345600 - 75600 = 270000 s (4500 min).
GPU: 7200 (120 min) + 4 x 14400 = 57600 (960) = 64800 s (1080 min); idle 4680 min.
Accounts: root -> physics -> lab, root -> ml (and the bootstrap's unused default).
"""

from __future__ import annotations

import time

import pytest

from cli import sreport, sreport_reports
from controller.store.models import AssocRow
from tests.api.conftest import ALICE, CONF, register
from tests.cli.harness import ROOT, install
from tests.report_jobs import a_job, put_jobs

H = 3600.0
DAY = time.mktime((2026, 11, 1, 0, 0, 0, 0, 0, -1))
PERIOD = ["start=2026-11-01", "end=2026-11-02"]
DASHES = "-" * 80


@pytest.fixture
def lab(live_controller, monkeypatch):
    live = live_controller(CONF)
    register(live.ctl, "n1")
    register(live.ctl, "n2")
    with live.ctl.db.write() as s:
        s.add(AssocRow(account="physics", user="", parent="root"))
        s.add(AssocRow(account="lab", user="", parent="physics"))
        s.add(AssocRow(account="ml", user="", parent="root"))
    put_jobs(
        live.ctl.db,
        [
            a_job(1, "alice", start=DAY + 10 * H, end=DAY + 12 * H, cpus=2, gpus_per_node=1),
            a_job(2, "bob", start=DAY - H, end=DAY + H),
            a_job(3, "alice", account="ml", start=DAY + 20 * H, end=DAY + 26 * H, cpus=4,
                  gpus_total=4, nodes="n1,n2"),
        ],
    )  # fmt: skip
    monkeypatch.setattr(sreport_reports, "_names", {"alice": "Alice Liddell", "bob": None})
    install(monkeypatch, live)
    return live


def out_of(capsys, *argv: str) -> tuple[int, str, str]:
    code = sreport.run(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cluster_utilization_in_cpu_minutes(lab, capsys):
    code, out, err = out_of(capsys, "cluster", "utilization", *PERIOD)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        DASHES,
        "Cluster Utilization 2026-11-01T00:00:00 - 2026-11-01T23:59:59",
        "Usage reported in CPU Minutes",
        DASHES,
        "  Cluster Allocate     Down PLND Dow     Idle  Planned Reported ",
        "--------- -------- -------- -------- -------- -------- -------- ",
        "   anchor     1260        0        0     4500        0     5760 ",
    ]


@pytest.mark.parametrize(
    ("unit", "said", "allocated", "width"),
    [
        ("seconds", "CPU Seconds", "75600", 8),
        ("Minutes", "CPU Minutes", "1260", 8),
        ("HOURS", "CPU Hours", "21", 8),  # 21 h exactly
        ("percent", "Percentage of Total", "21.88%", 8),  # 75600 / 345600 = 21.875 %
        ("SecPer", "CPU Seconds/Percentage of Total", "75600(21.88%)", 17),
        ("minper", "CPU Minutes/Percentage of Total", "1260(21.88%)", 17),
        ("hourper", "CPU Hours/Percentage of Total", "21(21.88%)", 17),
        ("h", "CPU Hours", "21", 8),  # any long-enough prefix
    ],
)
def test_every_time_unit(lab, capsys, unit, said, allocated, width):
    code, out, err = out_of(capsys, "-t", unit, "cluster", "Utilization", *PERIOD)
    lines = out.splitlines()
    assert (code, err, lines[2]) == (0, "", f"Usage reported in {said}")
    assert lines[6].split()[:2] == ["anchor", allocated]
    assert lines[6][10 : 10 + width + 1] == allocated.rjust(width) + " "


def test_gpus_and_cpus_in_one_utilization_report(lab, capsys):
    code, out, _ = out_of(capsys, "--tres=cpu,gres/gpu", "cluster", "utilization", *PERIOD)
    assert out.splitlines()[2:] == [
        "Usage reported in TRES Minutes",
        DASHES,
        "  Cluster      TRES Name Allocate     Down PLND Dow     Idle  Planned Reported ",
        "--------- -------------- -------- -------- -------- -------- -------- -------- ",
        "   anchor            cpu     1260        0        0     4500        0     5760 ",
        "   anchor       gres/gpu     1080        0        0     4680        0     5760 ",
    ]


def test_parsable_outputs_and_no_header(lab, capsys):
    _, out, _ = out_of(capsys, "-P", "cluster", "utilization", *PERIOD)
    assert out.splitlines()[4:] == [
        "Cluster|Allocated|Down|PLND Down|Idle|Planned|Reported",
        "anchor|1260|0|0|4500|0|5760",
    ]
    _, out, _ = out_of(capsys, "-p", "cluster", "utilization", *PERIOD)
    assert out.splitlines()[-1] == "anchor|1260|0|0|4500|0|5760|"
    _, out, _ = out_of(capsys, "-n", "-P", "cluster", "utilization", *PERIOD)
    assert out == "anchor|1260|0|0|4500|0|5760\n"


def test_account_utilization_by_user_follows_the_account_tree(lab, capsys):
    code, out, _ = out_of(capsys, "cluster", "AccountUtilizationByUser", *PERIOD)
    assert code == 0
    assert out.splitlines() == [
        DASHES,
        "Cluster/Account/User Utilization 2026-11-01T00:00:00 - 2026-11-01T23:59:59 (86400 secs)",
        "Usage reported in CPU Minutes",
        DASHES,
        "  Cluster         Account     Login     Proper Name     Used   Energy ",
        "--------- --------------- --------- --------------- -------- -------- ",
        "   anchor            root                               1260        0 ",
        "   anchor              ml                                960        0 ",
        "   anchor              ml     alice   Alice Liddell      960        0 ",
        "   anchor         physics                                300        0 ",
        "   anchor             lab                                300        0 ",
        "   anchor             lab     alice   Alice Liddell      240        0 ",
        "   anchor             lab       bob                       60        0 ",
    ]


def test_top_users(lab, capsys):
    _, out, _ = out_of(capsys, "user", "topusage", *PERIOD)
    assert out.splitlines()[1] == (
        "Top 10 Users 2026-11-01T00:00:00 - 2026-11-01T23:59:59 (86400 secs)"
    )
    assert out.splitlines()[4:] == [
        "  Cluster     Login     Proper Name         Account     Used   Energy ",
        "--------- --------- --------------- --------------- -------- -------- ",
        "   anchor     alice   Alice Liddell              ml      960        0 ",
        "   anchor     alice   Alice Liddell             lab      240        0 ",
        "   anchor       bob                             lab       60        0 ",
    ]


def test_top_users_grouped_counted_in_gpu_hours_and_percent(lab, capsys):
    _, out, _ = out_of(capsys, "-n", "-P", "user", "top", "TopCount=1", "group", *PERIOD)
    assert out == "anchor|alice|Alice Liddell|lab, ml|1200|0\n"  # 240 + 960 min
    _, out, _ = out_of(capsys, "-t", "hours", "--tres=gres/gpu", "user", "top", *PERIOD)
    assert out.splitlines()[2] == "Usage reported in TRES Hours"
    # GPU-seconds: alice/ml 57600 = 16 h, alice/lab 7200 = 2 h, bob 0
    assert [line.split()[-2:] for line in out.splitlines()[6:]] == [
        ["gres/gpu", "16"], ["gres/gpu", "2"], ["gres/gpu", "0"],
    ]  # fmt: skip
    # percent of the GPUs' reported time: 57600 / 345600 = 16.67 %
    _, out, _ = out_of(capsys, "-n", "-P", "-tpercent", "-T", "gres/gpu", "user", "top", *PERIOD)
    assert out.splitlines()[0] == "anchor|alice|Alice Liddell|ml|gres/gpu|16.67%"


def test_format_and_user_conditions(lab, capsys):
    code, out, _ = out_of(capsys, "-n", "cluster", "a", "users=bob", "format=Login,Used%6", *PERIOD)
    # bob alone: root, physics and lab roll up only his 60 minutes; a usage column's width
    # is sreport's own (8 here), whatever Format= says
    assert (code, out.splitlines()) == (
        0,
        [
            "                60 ",
            "                60 ",
            "                60 ",
            "      bob       60 ",
        ],
    )


def test_private_data_usage_limits_a_user_to_their_own_rows(lab, capsys):
    lab.ctl.cfg.private_data = ["usage"]
    lab.as_user(ALICE)
    _, out, _ = out_of(capsys, "-n", "-P", "user", "top", *PERIOD)
    assert out == "anchor|alice|Alice Liddell|ml|960|0\nanchor|alice|Alice Liddell|lab|240|0\n"
    lab.as_user(ROOT)
    _, out, _ = out_of(capsys, "-n", "-P", "user", "top", *PERIOD)
    assert len(out.splitlines()) == 3


@pytest.mark.parametrize(
    ("argv", "err"),
    [
        (["cluster", "bogus"], 'Not valid report bogus\nValid cluster reports are, '
         '"AccountUtilizationByUser", "UserUtilizationByAccount", "UserUtilizationByWckey", '
         '"Utilization", and "WCKeyUtilizationByUser"\n'),
        (["user", "bottom"], 'Not valid report bottom\nValid user reports are, "Top"\n'),
        (["bogus", "report"], "invalid keyword: bogus\n"),
        (["cluster"], "too few arguments for keyword:cluster\n"),
        (["-t", "fortnights", "cluster", "utilization"], "unknown time format fortnights\n"),
        (["--tres=mem", "cluster", "utilization"], "sreport: fatal: No valid TRES given\n"),
        (["user", "top", "start=someday"],
         "sreport: error: Invalid time specification (pos=0): someday\n"),
        (["user", "top", "TopCount=many"], "sreport: error: Invalid TopCount value: many\n"),
        (["cluster", "UserUtilizationByAccount"],
         "sreport: error: the UserUtilizationByAccount report is not implemented by slurmlite\n"),
    ],
)  # fmt: skip
def test_refusals_use_slurms_words_and_exit_1(lab, capsys, argv, err):
    assert out_of(capsys, *argv) == (1, "", err)


def test_an_unknown_condition_is_reported_and_the_report_still_runs(lab, capsys):
    code, out, err = out_of(capsys, "-n", "-P", "cluster", "utilization", "color=red", *PERIOD)
    assert (code, out) == (1, "anchor|1260|0|0|4500|0|5760\n")
    assert err == " Unknown condition: color=red\nUse keyword set to modify value\n"
