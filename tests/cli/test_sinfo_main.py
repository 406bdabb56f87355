"""The sinfo command end to end, with a fake controller client.

Each golden file's own command line is parsed and run; stdout and the exit
status must match real Slurm 22.05 byte for byte (TZ=UTC and a fixed clock
for the date line of ``-l``).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator

import pytest

from cli import sinfo
from cli.common import version_line
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.protocol import NodeInfo, PartitionInfo
from tests.cli.harness import FakeClient, install, unreachable
from tests.golden_path import golden_path

VERSION_OUT = version_line() + "\n"  # slurm-wlm 22.05.8 (slurmlite X)


def read_golden(name: str) -> tuple[list[str], str, int]:
    """(argv after the program name, stdout text, exit status)."""
    path = golden_path(name)
    lines = path.read_text().splitlines()
    argv = shlex.split(lines[0][2:])[1:]
    end = next(i for i, line in enumerate(lines) if line.startswith(("[stderr]", "[exit")))
    status = int(lines[-1].removeprefix("[exit ").rstrip("]"))
    return argv, "".join(line + "\n" for line in lines[1:end]), status


def golden_nodes(state: str) -> list[NodeInfo]:
    alloc = 2 if state == "ALLOCATED" else 0
    return [
        NodeInfo(
            name=n,
            addr="127.0.0.1",
            hostname="vm",
            port=6818,
            cpus=2,
            real_memory=4000,
            gres="gpu:2",
            gpus=2,
            state=state,
            flags=[],
            alloc_cpus=alloc,
        )  # fmt: skip
        for n in ("n1", "n2")
    ]


def golden_partitions() -> list[PartitionInfo]:
    return [
        PartitionInfo("debug", ["n1", "n2"], True, None, None, "UP"),
        PartitionInfo("long", ["n1", "n2"], False, None, None, "UP"),
    ]


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeClient:
    fake = FakeClient(get_partitions=golden_partitions(), get_nodes=golden_nodes("ALLOCATED"))
    install(monkeypatch, fake)
    for var in ("SINFO_FORMAT", "SINFO_SORT", "SINFO_PARTITION", "SINFO_ALL", "SLURM_CLUSTERS"):
        monkeypatch.delenv(var, raising=False)
    return fake


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str, int]:
    with pytest.raises(SystemExit) as exc:
        sinfo.main(argv)
    out, err = capsys.readouterr()
    return out, err, int(exc.value.code or 0)


@pytest.mark.parametrize(
    ("golden", "state", "clock"),
    [
        ("50_sinfo_default.txt", "ALLOCATED", None),
        ("50_sinfo_o_P.txt", "ALLOCATED", None),
        ("50_sinfo_P_m_noconvert.txt", "ALLOCATED", None),
        ("50_sinfo_s.txt", "ALLOCATED", None),
        ("50_sinfo_Node_gres.txt", "ALLOCATED", None),
        # "Mon Nov 30 02:29:19 2026" in UTC
        ("50_sinfo_N_l.txt", "ALLOCATED", 1796005759.0),
        ("60_sinfo_N_l_idle.txt", "IDLE", 1796005782.0),
    ],
)
def test_golden_commands(
    golden: str,
    state: str,
    clock: float | None,
    fake: FakeClient,
    utc: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv, stdout, status = read_golden(golden)
    fake.answers["get_nodes"] = golden_nodes(state)
    if clock is not None:
        monkeypatch.setattr(sinfo.time, "time", lambda: clock)
    out, err, code = run(argv, capsys)
    assert (out, err, code) == (stdout, "", status)


def test_version_does_not_contact_the_controller(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _, code = run(["-V"], capsys)
    assert (out, code, fake.calls) == (VERSION_OUT, 0, [])
    # the golden's line, then slurmlite's version in parentheses (cli.common.version_line)
    argv, stdout, status = read_golden("00_sinfo_version.txt")
    assert run(argv, capsys)[0].startswith(stdout.rstrip("\n") + " (slurmlite ")


def test_format_and_long_are_mutually_exclusive(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    out, err, code = run(["-l", "-o", "%P"], capsys)
    assert code == 1 and out == ""
    assert err == ("sinfo: fatal: Options -o(--format) and -l(--long) are mutually exclusive. "
                   "Please remove one and retry.\n")  # fmt: skip


def test_bad_state_lists_valid_states(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    out, err, code = run(["-t", "sleepy"], capsys)
    lines = err.splitlines()
    assert (out, code) == ("", 1)
    assert lines[0] == 'sinfo: error: Bad state string: "sleepy"'
    assert lines[1].startswith("sinfo: error: valid states: unknown,down,idle,allocated,")


def test_bad_option_is_getopt_message(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    out, err, code = run(["-x"], capsys)
    assert (out, err, code) == (
        "",
        "sinfo: invalid option -- 'x'\nTry \"sinfo --help\" for more information\n",
        1,
    )


def test_noheader_drops_header_and_date(
    fake: FakeClient, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _, code = run(["-h", "-N", "-l", "-p", "long"], capsys)
    assert code == 0
    assert [line.split()[:4] for line in out.splitlines()] == [
        ["n1", "1", "long", "allocated"],
        ["n2", "1", "long", "allocated"],
    ]


def test_sinfo_format_env_is_used_but_not_with_N(
    fake: FakeClient, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SINFO_FORMAT", "%R %D")
    assert run([], capsys)[0] == "PARTITION NODES\ndebug 2\nlong 2\n"
    assert run(["-h", "-N", "-o", "%N"], capsys)[0] == "n1\nn1\nn2\nn2\n"
    out = run(["-N"], capsys)[0]
    assert out.splitlines()[0] == "NODELIST   NODES PARTITION STATE "


def test_cpu_summary_for_dask(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    # dask's tests read the 4th number of line 2: total CPUs of the cluster
    n2 = fake.answers["get_nodes"][1]
    n2.alloc_cpus = 0
    n2.state = "IDLE"
    out, _, _ = run(["-o", "%C"], capsys)
    assert out == "CPUS(A/I/O/T)\n2/2/0/4\n"


def test_unreachable_controller(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    unreachable(monkeypatch, SlurmError(errors.SLURM_COMMUNICATIONS_CONNECTION_ERROR))
    out, err, code = run([], capsys)
    assert (out, code) == ("", 1)
    assert err.startswith("slurm_load_partitions: ")


def test_single_unknown_node(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    out, err, code = run(["-n", "n9"], capsys)
    assert (out, err, code) == ("", "slurm_load_node: Invalid node name specified\n", 1)


def test_all_and_partition_conflict(fake: FakeClient, capsys: pytest.CaptureFixture[str]) -> None:
    out, err, code = run(["-a", "-p", "debug"], capsys)
    assert (out, code) == ("", 1)
    assert (
        err
        == "sinfo: error: Conflicting options, -a and -p, specified. Please choose one or the other.\n"
    )


def test_list_reasons_shows_only_down_drained_failing_nodes(
    fake: FakeClient, utc: None, capsys: pytest.CaptureFixture[str]
) -> None:
    n2 = fake.answers["get_nodes"][1]
    n2.flags = ["DRAIN"]
    n2.reason, n2.reason_user = "bad gpu", "root"
    n2.reason_time = 1796005759.0
    out, _, code = run(["-R"], capsys)
    assert code == 0
    # one line for n2 although it sits in two partitions: -R ignores partitions
    assert out == (
        "REASON               USER      TIMESTAMP           NODELIST\n"
        "bad gpu              root      2026-11-30T02:29:19 n2\n"
    )
