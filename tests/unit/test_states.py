"""Job/node states, reasons, exit codes, counts, signals (spec §1, §5.4, §6.8)."""

from __future__ import annotations

import signal

import pytest

from slurmlite.states import (
    DEFAULT_SQUEUE_STATES,
    JOB_STATES,
    REASONS,
    check_reason,
    compress_counts,
    exit_code_str,
    is_finished,
    job_matches_states,
    job_state_compact,
    job_state_long,
    node_state_long,
    node_state_sinfo,
    parse_job_states,
    parse_signal,
    signal_description,
)

# ---------------------------------------------------------------- job states


def test_job_states_in_numeric_order() -> None:
    assert JOB_STATES.index("PENDING") == 0
    assert JOB_STATES.index("COMPLETED") == 3
    assert JOB_STATES.index("OUT_OF_MEMORY") == 11
    assert len(JOB_STATES) == 12


@pytest.mark.parametrize(
    ("base", "compact", "finished"),
    [
        ("PENDING", "PD", False),
        ("RUNNING", "R", False),
        ("SUSPENDED", "S", False),
        ("COMPLETED", "CD", True),
        ("CANCELLED", "CA", True),
        ("FAILED", "F", True),
        ("TIMEOUT", "TO", True),
        ("NODE_FAIL", "NF", True),
        ("PREEMPTED", "PR", True),
        ("BOOT_FAIL", "BF", True),
        ("DEADLINE", "DL", True),
        ("OUT_OF_MEMORY", "OOM", True),
    ],
)
def test_base_states(base: str, compact: str, finished: bool) -> None:
    assert job_state_long(base, []) == base
    assert job_state_compact(base, []) == compact
    assert is_finished(base) is finished


def test_completing_beats_base() -> None:
    # a cancelled job still cleaning up shows CG / COMPLETING (spec §1.3)
    assert job_state_long("CANCELLED", ["COMPLETING"]) == "COMPLETING"
    assert job_state_compact("CANCELLED", ["COMPLETING"]) == "CG"


@pytest.mark.parametrize(
    ("flags", "long", "compact"),
    [
        (["CONFIGURING"], "CONFIGURING", "CF"),
        (["REQUEUE"], "REQUEUED", "RQ"),
        (["REQUEUE_HOLD"], "REQUEUE_HOLD", "RH"),
        (["SIGNALING"], "SIGNALING", "SI"),
        (["SIGNALING", "COMPLETING"], "COMPLETING", "CG"),  # order 1 beats order 13
        (["REQUEUE", "CONFIGURING"], "CONFIGURING", "CF"),  # 3 beats 6
        (["STAGE_OUT", "CONFIGURING"], "STAGE_OUT", "SO"),
        (["EXPEDITING"], "EXPEDITING", "R"),  # no compact code: falls through to base
    ],
)
def test_flag_precedence(flags: list[str], long: str, compact: str) -> None:
    assert job_state_long("RUNNING", flags) == long
    assert job_state_compact("RUNNING", flags) == compact


def test_unknown_base_rejected() -> None:
    with pytest.raises(ValueError):
        job_state_long("RUNNIN", [])


def test_parse_job_states_long_compact_any_case() -> None:
    assert parse_job_states("pd,R,cg") == {"PENDING", "RUNNING", "COMPLETING"}
    assert parse_job_states("Running,TIMEOUT,oom") == {"RUNNING", "TIMEOUT", "OUT_OF_MEMORY"}
    assert parse_job_states("requeued,RQ,requeue") == {"REQUEUE"}
    assert parse_job_states("all") is None
    assert parse_job_states("R,ALL") is None


def test_parse_job_states_error_text() -> None:
    with pytest.raises(ValueError, match="^Invalid job state specified: bogus$"):
        parse_job_states("pd,bogus")


def test_job_matches_states() -> None:
    wanted = parse_job_states("R,CG")
    assert job_matches_states("RUNNING", [], wanted)
    assert job_matches_states("CANCELLED", ["COMPLETING"], wanted)  # via the flag
    assert not job_matches_states("PENDING", [], wanted)
    # a completing job no longer counts as its base state (it shows as CG)
    assert not job_matches_states("CANCELLED", ["COMPLETING"], {"CANCELLED"})


def test_default_squeue_filter() -> None:
    assert {"PENDING", "RUNNING", "SUSPENDED", "COMPLETING"} <= DEFAULT_SQUEUE_STATES
    assert job_matches_states("PENDING", [], DEFAULT_SQUEUE_STATES)
    assert job_matches_states("RUNNING", ["CONFIGURING"], DEFAULT_SQUEUE_STATES)
    assert job_matches_states("RUNNING", ["SIGNALING"], DEFAULT_SQUEUE_STATES)
    assert job_matches_states("COMPLETED", ["COMPLETING"], DEFAULT_SQUEUE_STATES)
    assert not job_matches_states("COMPLETED", [], DEFAULT_SQUEUE_STATES)
    assert not job_matches_states("FAILED", [], DEFAULT_SQUEUE_STATES)


# ---------------------------------------------------------------- reasons


def test_reasons_seen_in_golden_files() -> None:
    # 50_squeue_all_states.txt, 41_sbatch_N3_pending_reason.txt, 51_scontrol_hold_admin.txt
    seen = {
        "None", "Resources", "Priority", "BeginTime", "Dependency", "JobHeldUser",
        "JobHeldAdmin", "BadConstraints", "JobLaunchFailure", "TimeLimit",
        "PartitionNodeLimit",
    }  # fmt: skip
    assert seen <= REASONS


def test_reasons_are_a_closed_vocabulary() -> None:
    assert check_reason("ReqNodeNotAvail") == "ReqNodeNotAvail"
    with pytest.raises(ValueError):
        check_reason("WaitingForGodot")
    with pytest.raises(ValueError):
        check_reason("priority")  # names are case-sensitive, as printed


# ---------------------------------------------------------------- exit codes


@pytest.mark.parametrize(
    ("status", "text"),
    [
        (None, "0:0"),  # cancelled while pending: no status
        (0, "0:0"),
        (1 << 8, "1:0"),  # exit 1
        (3 << 8, "3:0"),  # exit 3 (60_sacct_X_states: fail3 FAILED 3:0)
        (9, "0:9"),  # SIGKILL (killed9 FAILED 0:9)
        (15, "0:15"),  # SIGTERM (.batch of a cancelled job)
        (53, "0:53"),  # launch failure status recorded by golden 0:53
        (0x80 | 11, "0:11"),  # SIGSEGV with core dump bit
        (255 << 8, "255:0"),
    ],
)
def test_exit_code_str(status: int | None, text: str) -> None:
    assert exit_code_str(status) == text


# ---------------------------------------------------------------- node states


@pytest.mark.parametrize(
    ("base", "flags", "scontrol", "sinfo_long", "sinfo_short"),
    [
        # golden: scontrol State=ALLOCATED, sinfo -N -l "allocated", sinfo "alloc"
        ("ALLOCATED", [], "ALLOCATED", "allocated", "alloc"),
        ("IDLE", [], "IDLE", "idle", "idle"),  # 60_sinfo_N_l_idle.txt
        ("MIXED", [], "MIXED", "mixed", "mix"),
        ("IDLE", ["DRAIN"], "IDLE+DRAIN", "drained", "drain"),
        ("MIXED", ["DRAIN"], "MIXED+DRAIN", "draining", "drng"),
        ("ALLOCATED", ["DRAIN"], "ALLOCATED+DRAIN", "draining", "drng"),
        ("IDLE", ["COMPLETING", "DRAIN"], "IDLE+COMPLETING+DRAIN", "draining", "drng"),
        ("IDLE", ["DRAIN", "NOT_RESPONDING"], "IDLE+DRAIN+NOT_RESPONDING", "drained*", "drain*"),
        ("DOWN", [], "DOWN", "down", "down"),
        ("DOWN", ["NOT_RESPONDING"], "DOWN+NOT_RESPONDING", "down*", "down*"),
        ("DOWN", ["DRAIN"], "DOWN+DRAIN", "drained", "drain"),
        ("IDLE", ["NOT_RESPONDING"], "IDLE+NOT_RESPONDING", "idle*", "idle*"),
        ("ALLOCATED", ["COMPLETING"], "ALLOCATED+COMPLETING", "allocated+", "alloc+"),
        ("IDLE", ["COMPLETING"], "IDLE+COMPLETING", "completing", "comp"),
        ("UNKNOWN", [], "UNKNOWN", "unknown", "unk"),
        ("IDLE", ["INVALID_REG"], "IDLE+INVALID_REG", "inval", "inval"),
        ("IDLE", ["PLANNED"], "IDLE+PLANNED", "planned", "plnd"),
        ("MIXED", ["PLANNED"], "MIXED+PLANNED", "mixed-", "mix-"),
        ("IDLE", ["FAIL", "NOT_RESPONDING"], "IDLE+FAIL+NOT_RESPONDING", "fail*", "fail*"),
        ("FUTURE", [], "FUTURE", "future", "futr"),
    ],
)
def test_node_states(
    base: str, flags: list[str], scontrol: str, sinfo_long: str, sinfo_short: str
) -> None:
    assert node_state_long(base, flags) == scontrol
    assert node_state_sinfo(base, flags, long=True) == sinfo_long
    assert node_state_sinfo(base, flags, long=False) == sinfo_short


def test_completing_sent_as_node_base() -> None:
    # protocol.NodeInfo may carry COMPLETING as the base: treat as idle + flag
    assert node_state_long("COMPLETING", []) == "IDLE+COMPLETING"
    assert node_state_sinfo("COMPLETING", [], long=False) == "comp"


def test_unknown_node_base_rejected() -> None:
    with pytest.raises(ValueError):
        node_state_long("BUSY", [])


# ---------------------------------------------------------------- counts


@pytest.mark.parametrize(
    ("values", "text"),
    [
        ([2, 2, 2, 1], "2(x3),1"),
        ([4], "4"),
        ([4, 4], "4(x2)"),
        ([1, 2, 1], "1,2,1"),
        ([1, 1], "1(x2)"),  # golden SLURM_JOB_CPUS_PER_NODE=1(x2)
        ([], ""),
    ],
)
def test_compress_counts(values: list[int], text: str) -> None:
    assert compress_counts(values) == text


# ---------------------------------------------------------------- signals


@pytest.mark.parametrize("text", ["USR1", "SIGUSR1", "usr1", "sigusr1", str(int(signal.SIGUSR1))])
def test_parse_signal_usr1(text: str) -> None:
    assert parse_signal(text) == signal.SIGUSR1


def test_parse_signal_common_names() -> None:
    assert parse_signal("KILL") == 9
    assert parse_signal("TERM") == 15
    assert parse_signal("INT") == 2
    assert parse_signal("9") == 9


@pytest.mark.parametrize("text", ["", "0", "999", "BOGUS", "SIG", "-9", "1.5"])
def test_parse_signal_invalid(text: str) -> None:
    with pytest.raises(ValueError):
        parse_signal(text)


def test_signal_description_for_raised_signal_reason() -> None:
    # squeue shows RaisedSignal:9(Killed)
    assert signal_description(9) == "Killed"
