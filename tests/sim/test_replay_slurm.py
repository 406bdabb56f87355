"""``--policy slurm``: multifactor priority and fair-share on the trace's clock."""

from __future__ import annotations

from slurmlite.config import parse_config
from slurmlite.scheduler.multifactor import PriorityParams
from slurmlite.scheduler.replay import Replay
from slurmlite.scheduler.replay_setup import DEFAULT_SLURM_CONF, setup_for
from slurmlite.scheduler.replay_slurm import TraceMultifactor
from slurmlite.scheduler.swf import convert
from tests.sim.test_replay import Recorder, starts


def job(i, submit, run, procs, user, group):
    fields = [i, submit, -1, run, procs, -1, -1, procs, run, -1, 1, user, group, -1, 1, -1, -1, -1]
    return convert([float(f) for f in fields], 4, "user")


FAIRSHARE_ONLY = """\
SchedulerType=sched/builtin
PriorityType=priority/multifactor
PriorityWeightFairshare=10000
PriorityDecayHalfLife=0
PriorityCalcPeriod=1
"""


def test_the_lighter_user_goes_first_once_usage_is_counted():
    # user 1 (group 1) holds all 4 CPUs from 0 to 1000: 4,000 CPU-seconds.  It queues B at
    # 100; user 2 (group 2) queues C at 200.  At 1000 a recalculation is due (1 min period):
    # user 2 has used nothing, so its account ranks first (factor 1.0 -> priority 10000)
    # and C starts before B, although B came first.
    jobs = [job(1, 0, 1000, 4, 1, 1), job(2, 100, 100, 4, 1, 1), job(3, 200, 100, 4, 2, 2)]
    config = parse_config(FAIRSHARE_ONLY)
    rec = Recorder()
    Replay(4, setup_for("slurm", 4, config=config), rec).run(jobs)
    assert starts(rec.records) == {1: 0, 2: 1100, 3: 1000}
    fifo = Recorder()
    Replay(4, setup_for("fcfs", 4), fifo).run(jobs)
    assert starts(fifo.records) == {1: 0, 2: 1000, 3: 1100}


def test_worked_example_of_the_module_doc():
    # u1 and u2 in g1; u1 used 3,000 CPU-seconds, u2 1,000: Fair Tree ranks u2 above u1
    model = TraceMultifactor(PriorityParams(fairshare=10000), 4, half_life=0, period=60)
    a, b = job(1, 0, 1000, 3, 1, 1), job(2, 0, 1000, 1, 2, 1)
    for j in (a, b):
        model._know("g1", f"u{j.user}")
        model.started(j, 0.0)
    model.ended(a, 0.0, 1000.0)
    model.ended(b, 0.0, 1000.0)
    assert model.usage == {("g1", "u1"): 3000.0, ("g1", "u2"): 1000.0}
    from slurmlite.scheduler.replay import pending_job

    waiting = [pending_job(a, 0), pending_job(b, 0)]
    assert model.recalc(1000.0, waiting) == {1: 5000, 2: 10000}
    assert model.recalc(1030.0, waiting) is None  # the next one is due at 1060


def test_usage_decays_with_the_half_life():
    model = TraceMultifactor(PriorityParams(fairshare=1), 4, half_life=3600, period=60)
    a = job(1, 0, 3600, 1, 1, 1)
    model._know("g1", "u1")
    model.started(a, 0.0)
    model.recalc(0.0, [])
    model.recalc(3600.0, [])  # 3,600 s charged at the recalculation, not yet decayed
    assert model.usage[("g1", "u1")] == 3600.0
    model.ended(a, 0.0, 3600.0)
    model.recalc(7200.0, [])  # one half-life later: about half (Slurm's linearised decay)
    assert 1799 < model.usage[("g1", "u1")] < 1801


def test_the_default_policy_is_printed():
    setup = setup_for("slurm", 128)
    assert setup.backfill is not None and setup.interval == 30.0
    text = " ".join(setup.settings)
    assert "weights age=1000,fairshare=10000,jobsize=1000" in text
    assert "PriorityWeightFairshare=10000" in DEFAULT_SLURM_CONF
