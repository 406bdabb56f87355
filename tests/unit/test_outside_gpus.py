"""GPUs used outside the scheduler: the policy's syntax and the controller's settle rule."""

from __future__ import annotations

import pytest

from controller.nodes.outside_gpus import OutsideGpu, OutsideGpus, shown
from slurmlite.clock import FakeClock
from slurmlite.config import ConfigError, parse_config
from slurmlite.config_show import config_items
from slurmlite.gpu_outside import GpuOutsideUse, outside_reason, parse_policy
from slurmlite.protocol import NodeInfo

ALICE = outside_reason(1, 4242, "alice", "python")
SETTLE_60 = GpuOutsideUse(settle=60.0)


def test_policy_syntax_defaults_and_ignore():
    assert parse_policy("") == GpuOutsideUse(True, 60.0, 15.0)
    assert parse_policy("settle=5, interval=0.5") == GpuOutsideUse(True, 5.0, 0.5)
    assert parse_policy("settle=0") == GpuOutsideUse(True, 0.0, 15.0)
    assert not parse_policy("IGNORE").enabled
    for bad in ("settle", "settle=-1", "interval=0", "settle=soon", "wait=3", "settle=nan"):
        with pytest.raises(ValueError):
            parse_policy(bad)


def test_the_config_key_is_read_checked_and_shown():
    assert parse_config("").gpu_outside_use == GpuOutsideUse()
    cfg = parse_config("SlurmliteGpuOutsideUse=settle=2,interval=1\n")
    assert cfg.gpu_outside_use == GpuOutsideUse(True, 2.0, 1.0)
    assert ("SlurmliteGpuOutsideUse", "settle=2,interval=1") in config_items(cfg)
    assert not parse_config("SlurmliteGpuOutsideUse=ignore\n").gpu_outside_use.enabled
    with pytest.raises(ConfigError, match="invalid value 'settle=x' for SlurmliteGpuOutsideUse"):
        parse_config("SlurmliteGpuOutsideUse=settle=x\n", "/etc/slurm/slurm.conf")


def test_a_gpu_stays_blocked_until_free_for_the_settle_time():
    clock, ledger = FakeClock(1000.0), OutsideGpus()
    assert ledger.report("n1", {1: ALICE}, 2, clock(), SETTLE_60)
    assert ledger.blocked("n1", clock(), SETTLE_60) == {1}
    assert ledger.reason("n1", clock(), SETTLE_60) == (ALICE, 1000.0)
    clock.advance(30)  # t=1030: still there; the same report changes nothing
    assert not ledger.report("n1", {1: ALICE}, 2, clock(), SETTLE_60)
    clock.advance(10)  # t=1040: gone -> freed now, free for jobs at 1040 + 60 = 1100
    assert ledger.report("n1", {}, 2, clock(), SETTLE_60)
    assert ledger.blocked("n1", clock.advance(59.9), SETTLE_60) == {1}  # t=1099.9
    text, since = ledger.reason("n1", clock(), SETTLE_60)
    assert text.startswith(ALICE + ", ended, free for jobs at ") and since == 1000.0
    assert ledger.blocked("n1", clock.advance(0.1), SETTLE_60) == frozenset()  # t=1100
    assert ledger.reason("n1", clock(), SETTLE_60) is None
    assert ledger.report("n1", {}, 2, clock(), SETTLE_60)  # the next report drops the record
    assert ledger.nodes == {}


def test_use_again_before_it_settled_starts_over():
    clock, ledger = FakeClock(0.0), OutsideGpus()
    ledger.report("n1", {0: "a"}, 1, clock(), SETTLE_60)
    ledger.report("n1", {}, 1, clock.advance(10), SETTLE_60)  # freed at 10
    ledger.report("n1", {0: "b"}, 1, clock.advance(20), SETTLE_60)  # back at 30: a new use
    assert ledger.entries("n1") == {0: OutsideGpu("b", 30.0)}
    ledger.report("n1", {}, 1, clock.advance(5), SETTLE_60)  # freed at 35 -> free at 95
    assert ledger.blocked("n1", 94.0, SETTLE_60) == {0}
    assert ledger.blocked("n1", 95.0, SETTLE_60) == frozenset()


def test_reports_cannot_break_the_controller_and_none_changes_nothing():
    ledger = OutsideGpus()
    assert not ledger.report("n1", {-1: "x", 2: "y", 99: "z"}, 2, 0.0, SETTLE_60)
    assert ledger.nodes == {}
    ledger.report("n1", {0: "w" * 5000}, 2, 0.0, SETTLE_60)
    assert len(ledger.entries("n1")[0].reason) == 200  # REASON_MAX
    assert not ledger.report("n1", None, 2, 1.0, SETTLE_60)  # the agent did not look
    assert ledger.blocked("n1", 1.0, SETTLE_60) == {0}


def test_ignore_disregards_reports_and_blocks_nothing():
    ignore, ledger = GpuOutsideUse(enabled=False), OutsideGpus()
    assert not ledger.report("n1", {0: "x"}, 1, 0.0, ignore)
    ledger.report("n1", {0: "x"}, 1, 0.0, SETTLE_60)  # recorded before a reconfigure to ignore
    assert ledger.blocked("n1", 1.0, ignore) == frozenset()
    assert ledger.reason("n1", 1.0, ignore) is None


def test_the_record_survives_a_dump_and_load():
    ledger = OutsideGpus()
    ledger.report("n1", {1: ALICE}, 2, 100.0, SETTLE_60)
    ledger.report("n2", {0: "b"}, 1, 100.0, SETTLE_60)
    ledger.report("n2", {}, 1, 120.0, SETTLE_60)
    again = OutsideGpus()
    again.load(ledger.dump())
    assert again.nodes == ledger.nodes
    again.load("not json")
    assert again.nodes == {}


def _node(name: str, gpus: int, state: str = "IDLE", reason: str | None = None) -> NodeInfo:
    gres = f"gpu:{gpus}" if gpus else "(null)"
    return NodeInfo(name, "127.0.0.1", name, 6818, 4, 1000, gres, gpus, state, [], reason=reason)


def test_what_users_see_reason_gresused_state():
    ledger = OutsideGpus()
    ledger.report("n1", {1: ALICE}, 2, 100.0, SETTLE_60)  # one of two GPUs
    ledger.report("n2", {0: "gpu 0 ..."}, 1, 100.0, SETTLE_60)  # its only GPU
    ledger.report("n3", {0: "gpu 0 ..."}, 1, 100.0, SETTLE_60)  # drained by an admin too
    infos = [_node("n1", 2), _node("n2", 1), _node("n3", 1, reason="bad fan"), _node("n4", 2)]
    n1, n2, n3, n4 = shown(ledger, infos, 110.0, SETTLE_60)
    assert (n1.state, n1.outside_gpus, n1.reason, n1.reason_user, n1.reason_time) == (
        "IDLE",  # CPU jobs and GPU 0 are still there to take
        [1],
        ALICE,
        "root",
        100.0,
    )
    assert (n2.state, n2.outside_gpus) == ("MIXED", [0])  # no GPU left for jobs
    assert (n3.reason, n3.outside_gpus) == ("bad fan", [0])  # the admin's reason stays
    assert (n4.state, n4.outside_gpus, n4.reason) == ("IDLE", [], None)
