"""scontrol end to end against a fake controller (golden outputs of Slurm 22.05)."""

from __future__ import annotations

import calendar
import io
import os
import shlex
import time

import pytest

from cli import scontrol
from cli.client import Record
from cli.common import version_line
from slurmlite.conftext import ClientSettings
from slurmlite.errors import ESLURM_ACCESS_DENIED, SlurmError
from slurmlite.protocol import JobInfo, NodeAlloc, NodeInfo, PartitionInfo, to_dict
from tests.cli.harness import FakeClient, install
from tests.golden_path import GOLDEN

VERSION_OUT = version_line() + "\n"  # slurm-wlm 22.05.8 (slurmlite X)


def at(hms: str) -> float:
    h, m, s = map(int, hms.split(":"))
    return float(calendar.timegm((2026, 11, 30, h, m, s)))


def running_job() -> JobInfo:
    """Job 50 of the golden capture: 2 nodes, 4 CPUs, exclusive, running 9 s."""
    info = JobInfo(
        job_id=50, name="big-running", user="alice", uid=1001, gid=1001, group="alice",
        account="acct_a", qos="normal", partition="debug", state="RUNNING", flags=[],
        reason="None", priority=5350, submit_time=at("02:29:09"), eligible_time=at("02:29:09"),
        work_dir="/home/alice/work", submit_dir="/home/alice/work", num_nodes=2, num_cpus=4,
        num_tasks=2, cpus_per_task=1, time_limit=None, mem_per_cpu=1000, exclusive=True,
        start_time=at("02:29:10"), last_sched_eval=at("02:29:10"), nodes=["n1", "n2"],
        batch_host="n1", alloc=[NodeAlloc("n1", 2, 2000, [0, 1]), NodeAlloc("n2", 2, 2000, [0, 1])],
    )  # fmt: skip
    info.alloc_node, info.alloc_sid = "localhost", 2327  # type: ignore[attr-defined]
    return info


def array_job() -> JobInfo:
    info = JobInfo(
        job_id=57, name="arr", user="alice", uid=1001, gid=1001, group="alice", account="acct_a",
        qos="normal", partition="debug", state="PENDING", flags=[], reason="Priority", priority=4725,
        submit_time=at("02:29:10"), work_dir="/home/alice/work", submit_dir="/home/alice/work",
        num_nodes=1, num_cpus=1, num_tasks=1, cpus_per_task=1, time_limit=None, array_job_id=57,
    )  # fmt: skip
    info.array_task_str = "0-9%2"  # type: ignore[attr-defined]
    return info


def node(name: str, port: int, boot: str, start: str, busy: str) -> NodeInfo:
    return NodeInfo(
        name=name, addr="127.0.0.1", hostname=name, port=port, cpus=2, real_memory=4000,
        gres="gpu:2", gpus=2, state="ALLOCATED", flags=[], alloc_cpus=2, alloc_mem=2000,
        alloc_gpus=[0, 1], partitions=["debug", "long"], boot_time=at(boot),
        slurmd_start_time=at(start), last_busy_time=at(busy), version="22.05.8", arch="x86_64",
        os="Linux 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0", cpu_load=1.68, free_mem=23494,
    )  # fmt: skip


def golden_client() -> FakeClient:
    """The controller as the golden capture saw it: jobs 50 and 57, nodes n1 and n2."""
    return FakeClient(
        get_jobs=[running_job(), array_job()],
        get_nodes=[
            node("n1", 6818, "01:52:11", "02:17:43", "02:29:04"),
            node("n2", 6922, "01:52:12", "02:17:44", "02:28:43"),
        ],
        get_partitions=[
            PartitionInfo("debug", ["n1", "n2"], True, None, None, "UP", 1, 1, 4, 2, 8000, 4),
            PartitionInfo("long", ["n1", "n2"], False, None, None, "UP", 10, 1, 4, 2, 8000, 4),
        ],
        get_config_items=[("ClusterName", "anchor"), ("MinJobAge", "300 sec")],
        update_nodes=None,
        reconfigure=[],
    )


def node_updates(fake: FakeClient) -> list[dict[str, object]]:
    """The NodeUpdate fields of every ``update_nodes`` request, in order."""
    return [args["upd"] for args in fake.sent("update_nodes")]


@pytest.fixture
def fake(monkeypatch):
    client = install(monkeypatch, golden_client())
    monkeypatch.setattr(scontrol, "clock", lambda: at("02:29:19"))
    for var in ("SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_TIME_FORMAT"):
        monkeypatch.delenv(var, raising=False)
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield client
    if old is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = old
    time.tzset()


def golden(name: str) -> tuple[list[str], str, str, int]:
    lines = (GOLDEN / name).read_text().split("\n")
    argv = shlex.split(lines[0][2:])[1:]
    body = lines[1:]
    exit_at = max(i for i, line in enumerate(body) if line.startswith("[exit "))
    status = int(body[exit_at][6:-1])
    body = body[:exit_at]
    cut = body.index("[stderr]") if "[stderr]" in body else len(body)
    join = lambda part: "".join(line + "\n" for line in part)  # noqa: E731
    return argv, join(body[:cut]), join(body[cut + 1 :]), status


def run(capsys, argv: list[str]) -> tuple[str, str, int]:
    try:
        status = scontrol.main(argv)
    except SystemExit as exc:
        status = int(exc.code or 0)
    captured = capsys.readouterr()
    return captured.out, captured.err, status


@pytest.mark.parametrize(
    "name",
    [
        "50_scontrol_show_job_running.txt",
        "50_scontrol_show_job_oneliner.txt",  # "show job -o 50": options after words
        "50_scontrol_show_job_nonexistent.txt",
        "50_scontrol_show_node.txt",  # Port= only on n2 (not SlurmdPort)
        "50_scontrol_show_node_n1_oneliner.txt",
        "50_scontrol_show_partition.txt",
        "30_scontrol_show_hostnames.txt",
        "30_scontrol_show_hostnames_padded.txt",
        "30_scontrol_show_hostlist.txt",
        "30_scontrol_show_hostlistsorted.txt",
    ],
)
def test_matches_golden(fake, capsys, name):
    argv, want_out, want_err, want_status = golden(name)
    assert run(capsys, argv) == (want_out, want_err, want_status)


def test_keywords_are_case_insensitive_prefixes(fake, capsys):
    job50, _, _ = run(capsys, ["show", "job", "50"])
    assert run(capsys, ["SHOW", "JOBS", "50"]) == (job50, "", 0)
    assert run(capsys, ["sho", "j", "50"]) == (job50, "", 0)
    assert run(capsys, ["show", "jobid=50"]) == (job50, "", 0)
    nodes, _, _ = run(capsys, ["show", "node"])
    assert run(capsys, ["show", "nodes"])[0] == nodes
    # "sh" is too short for "show"
    assert run(capsys, ["sh", "node"]) == ("", "invalid keyword: sh\n", 1)
    assert run(capsys, ["bogus"]) == ("", "invalid keyword: bogus\n", 1)
    assert run(capsys, ["show", "bogus"]) == ("", "invalid entity:bogus for keyword:show \n", 1)


def test_show_all_jobs_and_array_tasks(fake, capsys):
    out, _, status = run(capsys, ["show", "job"])
    records = [line.split()[0] for line in out.splitlines() if line.startswith("JobId=")]
    assert status == 0 and records == ["JobId=50", "JobId=57"]
    out, _, status = run(capsys, ["show", "job", "57_3"])
    assert status == 0
    assert out.startswith("JobId=57 ArrayJobId=57 ArrayTaskId=3 ArrayTaskThrottle=2 JobName=arr\n")
    assert run(capsys, ["show", "job", "57_12"]) == ("Job 57_12 not found\n", "", 1)
    assert run(capsys, ["show", "job", "5x"]) == (
        "",
        "scontrol_print_job error: Invalid job id specified\n",
        1,
    )
    fake.answers["get_jobs"] = []
    assert run(capsys, ["show", "job"]) == ("No jobs in the system\n", "", 0)


def as_wire(record: object) -> Record:
    """What the real client returns: a Record of the JSON answer (extra attributes kept)."""
    return Record({**vars(record), **to_dict(record)})


def test_wire_records_print_like_the_dataclasses(fake, capsys):
    commands = [["show", "job"], ["show", "job", "57_3"], ["show", "job", "-o", "50"],
                ["show", "node"], ["show", "partition"]]  # fmt: skip
    want = [run(capsys, argv) for argv in commands]
    for method in ("get_jobs", "get_nodes", "get_partitions"):
        fake.answers[method] = [as_wire(record) for record in fake.answers[method]]
    jobs = fake.answers["get_jobs"]
    assert isinstance(jobs[0].alloc[0], Record)  # nested lists are Records too
    assert [run(capsys, argv) for argv in commands] == want
    # the task view is a copy: the array's own record still stands for all its tasks
    assert jobs[1].array_task_id is None and jobs[1].array_task_str == "0-9%2"


def test_node_layout_and_host_come_from_slurm_conf(fake, capsys, tmp_path):
    """The real client knows only the socket; show node and ping read slurm.conf itself."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=anchor\nSlurmctldHost=ctl1(10.0.0.1)\nSlurmdPort=6922\n"
        "NodeName=n[1-2] CPUs=2 Sockets=1 CoresPerSocket=2 ThreadsPerCore=1\n"
        "PartitionName=debug Nodes=ALL Default=YES\n"
    )
    fake.config = ClientSettings(str(conf), "anchor", str(tmp_path / "sock"))
    fake.answers["whoami"] = (0, "root")
    out, err, status = run(capsys, ["show", "node", "n1"])
    # 1 socket x 2 cores x 1 thread = 2 CPUs: the configured layout is shown;
    # n1 listens on 6818, not SlurmdPort 6922, so its Port= is shown
    assert (err, status) == ("", 0)
    assert "CoresPerSocket=2 " in out and "Sockets=1 Boards=1" in out
    assert "NodeHostName=n1 Port=6818 Version=" in out
    assert "Port=" not in run(capsys, ["show", "node", "n2"])[0]  # n2 is on 6922
    assert run(capsys, ["ping"]) == ("Slurmctld(primary) at ctl1 is UP\n", "", 0)
    # an unreadable slurm.conf: the plain layout (2 one-core sockets), localhost
    conf.unlink()
    out, _, _ = run(capsys, ["show", "node", "n1"])
    assert "CoresPerSocket=1 " in out and "Sockets=2 Boards=1" in out
    assert run(capsys, ["ping"]) == ("Slurmctld(primary) at localhost is UP\n", "", 0)


def test_unknown_node_and_partition(fake, capsys):
    assert run(capsys, ["show", "node", "n9"]) == ("Node n9 not found\n", "", 1)
    assert run(capsys, ["show", "partition", "gpu"]) == ("Partition gpu not found\n", "", 1)
    out, _, _ = run(capsys, ["show", "partition", "long"])
    assert out.startswith("PartitionName=long\n") and out.count("PartitionName=") == 1


def test_show_config_lists_items_and_pings(fake, capsys):
    out, err, status = run(capsys, ["show", "config"])
    assert (err, status) == ("", 0)
    assert out == (
        "Configuration data as of 2026-11-30T02:29:19\n"
        "ClusterName             = anchor\n"
        "MinJobAge               = 300 sec\n"
        "\n"
        "Slurmctld(primary) at vm is UP\n"
    )


def test_hostnames_from_the_environment(fake, capsys, monkeypatch):
    assert run(capsys, ["show", "hostnames"]) == ("", "scontrol: error: host list is empty\n", 1)
    monkeypatch.setenv("SLURM_NODELIST", "x[1-2]")
    assert run(capsys, ["show", "hostnames"]) == ("x1\nx2\n", "", 0)
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[3,1]")  # the job's variable wins
    assert run(capsys, ["show", "hostnames"]) == ("n3\nn1\n", "", 0)


def test_bad_hostlists_fail(fake, capsys):
    assert run(capsys, ["show", "hostnames", "n[1-"]) == ("", "Invalid hostlist: n[1-\n", 1)
    assert run(capsys, ["show", "hostlist", "n[3-1]"]) == ("", "Invalid hostlist: n[3-1]\n", 1)
    assert run(capsys, ["show", "hostlist"]) == ("", "invalid encode argument\n", 1)


def test_hostlist_from_a_file(fake, capsys, tmp_path):
    names = tmp_path / "hosts"
    names.write_text("n1\nn2\n\nn3\n")
    assert run(capsys, ["show", "hostlist", str(names)]) == ("n[1-3]\n", "", 0)


def test_node_update_sends_the_request(fake, capsys):
    argv = ["update", "NodeName=n[1-2]", "State=drain", 'Reason="disk full"']
    assert run(capsys, argv) == ("", "", 0)
    assert node_updates(fake) == [{"names": ["n1", "n2"], "state": "DRAIN", "reason": "disk full"}]
    assert run(capsys, ["update", "nodename=n1", "state=RESUME"]) == ("", "", 0)
    assert node_updates(fake)[-1] == {"names": ["n1"], "state": "RESUME", "reason": None}


def test_node_update_refusals(fake, capsys):
    denied = "You must specify a reason when DOWNING or DRAINING a node. Request denied\n"
    assert run(capsys, ["update", "nodename=n1", "state=down"]) == ("", denied, 1)
    out, err, status = run(capsys, ["update", "nodename=n1", "state=sleepy"])
    assert status == 1 and err.splitlines()[:2] == [
        "Invalid input: state=sleepy",
        "Request aborted",
    ]
    assert run(capsys, ["update", "nodename=n1", "weight=5"])[1].startswith(
        "Update of this parameter is not supported: weight=5\n"
    )
    assert run(capsys, ["update"]) == ("", "too few arguments for update keyword\n", 1)
    assert node_updates(fake) == []
    fake.answers["update_nodes"] = SlurmError(ESLURM_ACCESS_DENIED)
    argv = ["update", "nodename=n1", "state=drain", "reason=x"]
    assert run(capsys, argv) == ("", "slurm_update error: Access/permission denied\n", 1)


@pytest.mark.parametrize(
    ("argv", "verb"),
    [
        (["suspend", "50"], "suspend"),
        (["resume", "50"], "resume"),
        (["top", "50"], "top"),
    ],
)
def test_suspend_resume_and_top_are_not_supported_yet(fake, capsys, argv, verb):
    assert run(capsys, argv) == ("", f"scontrol: error: {verb} is not supported yet\n", 1)


def test_reconfigure_asks_the_controller_and_reports_refusals(fake, capsys):
    assert run(capsys, ["reconfigure"]) == ("", "", 0)
    assert fake.names().count("reconfigure") == 1
    fake.answers["reconfigure"] = SlurmError(ESLURM_ACCESS_DENIED)
    assert run(capsys, ["reconfigure"]) == (
        "",
        "slurm_reconfigure error: Access/permission denied\n",
        1,
    )


def test_interactive_mode_reads_commands_until_exit(fake, capsys, monkeypatch):
    monkeypatch.setattr(
        "sys.stdin", io.StringIO("show hostnames n[1-2]\nbogus\nexit\nshow hostnames x1\n")
    )
    out, err, status = run(capsys, [])
    assert out == "scontrol: n1\nn2\nscontrol: scontrol: "
    assert (err, status) == ("invalid keyword: bogus\n", 1)


def test_version(fake, capsys):
    assert run(capsys, ["-V"]) == (VERSION_OUT, "", 0)
    assert run(capsys, ["version"]) == (VERSION_OUT, "", 0)


@pytest.mark.parametrize(
    "argv",
    [["hold", "1_2"], ["requeue", "1"], ["update", "JobId=1", "TimeLimit=5"], ["release", "3"]],
)
def test_an_unreadable_slurm_conf_is_one_error_line(capsys, monkeypatch, tmp_path, argv):
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "missing.conf"))
    assert scontrol.main(argv) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", "scontrol: error: Invalid configuration file\n")
