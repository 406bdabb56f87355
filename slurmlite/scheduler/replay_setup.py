"""The named policies of a trace replay, as slurm.conf settings.

Each name is a ``Policy`` for the production pass (``replay.py`` runs it):

* ``fcfs`` — ``SchedulerType=sched/builtin``: the main pass alone, strict
  first come, first served;
* ``easy`` — ``SchedulerType=sched/backfill`` with one reservation
  (``bf_job_part_count_reserve=1``): EASY backfilling;
* both with ``bf_resolution=1`` (second-grained estimates), ``bf_window`` at
  its largest (30 days: no reservation of these traces lies further ahead,
  since every running estimate ends sooner), ``bf_max_job_test`` unbounded
  and a pass after every event — the settings under which the classic
  definitions hold, printed with every result;
* ``slurm`` — the policy of a slurm.conf (``--conf``) or, without one,
  ``DEFAULT_SLURM_CONF`` below: multifactor priority with fair-share by the
  trace's users and groups (``replay_slurm.py``), the main pass after every
  event and a backfill cycle every ``bf_interval`` seconds, as slurmctld
  does (with Slurm's defaults: conservative backfill, 60 s resolution, one
  day ahead, 500 jobs a cycle).

``--order`` picks the queue order of ``fcfs`` and ``easy`` from the priority
plugins of ``registry.PRIORITY_TYPES`` (``orders.py``): fcfs = submit order
(``priority/basic``), sjf, ljf, smallest, largest.

Example::

    >>> s = setup_for("easy", 128, order="sjf")
    >>> s.policy.priority_type, s.policy.scheduler_parameters["bf_job_part_count_reserve"]
    ('priority/sjf', '1')
"""

from __future__ import annotations

import dataclasses

from slurmlite.config import Config, parse_config
from slurmlite.scheduler.backfill import BackfillParams
from slurmlite.scheduler.multifactor import PriorityParams
from slurmlite.scheduler.registry import PRIORITY_TYPES, backfills, is_multifactor
from slurmlite.scheduler.replay import ReplaySetup
from slurmlite.scheduler.replay_slurm import TraceMultifactor
from slurmlite.scheduler.snapshot import Policy

POLICIES = ("fcfs", "easy", "slurm")
ORDERS = {
    "fcfs": "priority/basic",
    "sjf": "priority/sjf",
    "ljf": "priority/ljf",
    "smallest": "priority/smallest",
    "largest": "priority/largest",
}
assert all(name in PRIORITY_TYPES for name in ORDERS.values())

CLASSIC = {
    "bf_resolution": "1",
    "bf_window": "43200",  # minutes: 30 days, the most Slurm accepts
    "bf_max_job_test": "1000000",
    "bf_job_part_count_reserve": "1",
    "bf_estimates": "no",  # starts only: no expected start for jobs that reserve nothing
}

#: ``--policy slurm`` without ``--conf``: a lab's typical multifactor setup.
DEFAULT_SLURM_CONF = """\
SchedulerType=sched/backfill
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=10000
PriorityWeightJobSize=1000
PriorityMaxAge=7-0
PriorityDecayHalfLife=7-0
PriorityCalcPeriod=5
"""


class SetupError(ValueError):
    """A policy, order or configuration the replay cannot use."""


def setup_for(
    name: str, procs: int, *, order: str = "fcfs", config: Config | None = None
) -> ReplaySetup:
    """The ``ReplaySetup`` of policy ``name`` on a machine of ``procs`` CPUs."""
    if order not in ORDERS:
        raise SetupError(f"unknown order {order!r} (use one of {', '.join(ORDERS)})")
    if name in ("fcfs", "easy"):
        if config is not None:
            raise SetupError(f"--conf is for --policy slurm; {name} is defined by its name")
        return _classic(name, ORDERS[order])
    if name == "slurm":
        if order != "fcfs":
            raise SetupError("--order is for fcfs and easy; slurm orders by its PriorityType")
        return _slurm(config or parse_config(DEFAULT_SLURM_CONF, "<default>"), procs)
    raise SetupError(f"unknown policy {name!r} (use one of {', '.join(POLICIES)})")


def _classic(name: str, priority_type: str) -> ReplaySetup:
    easy = name == "easy"
    params = dict(CLASSIC) if easy else {}
    policy = Policy(
        def_mem_per_cpu=1,  # memory is not modelled: 1 MiB per CPU on a node of procs MiB
        scheduler_type="sched/backfill" if easy else "sched/builtin",
        priority_type=priority_type,
        scheduler_parameters=params,
    )
    settings = [
        f"SchedulerType={policy.scheduler_type}",
        f"PriorityType={priority_type}",
        "SchedulerParameters="
        + ",".join(f"{k}={v}" for k, v in (CLASSIC if easy else {"bf_resolution": "1"}).items()),
        "a pass after every submission and every termination",
    ]
    if not easy:
        settings[2] = "SchedulerParameters=(none: no backfill)"
    return ReplaySetup(name, policy, prune="fits" if easy else "head", settings=tuple(settings))


def _slurm(config: Config, procs: int) -> ReplaySetup:
    full = dataclasses.replace(Policy.from_config(config), def_mem_per_cpu=1)
    main = dataclasses.replace(full, scheduler_type="sched/builtin")
    params = BackfillParams.from_policy(full)
    model = None
    if is_multifactor(full.priority_type):
        model = TraceMultifactor(
            PriorityParams.from_config(config),
            procs,
            half_life=float(config.priority_decay_half_life or 0) * 60,
            period=float(config.priority_calc_period or 5) * 60,
            dampening=float(config.fairshare_dampening_factor),
        )
    elif full.priority_type not in PRIORITY_TYPES:
        raise SetupError(f"unknown PriorityType {full.priority_type!r}")
    weights = ",".join(f"{k}={v}" for k, v in sorted(full.priority_weights.items()) if v)
    backfill = backfills(full.scheduler_type) and params.bf_interval >= 0
    settings = (
        f"SchedulerType={full.scheduler_type}",
        f"PriorityType={full.priority_type} weights {weights or 'none (FIFO)'}",
        f"PriorityDecayHalfLife={config.priority_decay_half_life} min "
        f"PriorityCalcPeriod={config.priority_calc_period} min "
        f"PriorityMaxAge={config.priority_max_age} min",
        f"backfill every {params.bf_interval} s: bf_resolution={params.bf_resolution} "
        f"bf_window={params.bf_window} bf_max_job_test={params.bf_max_job_test} "
        f"bf_job_part_count_reserve={params.bf_job_part_count_reserve}"
        if backfill
        else "no backfill",
        "main pass after every submission and every termination",
    )
    return ReplaySetup(
        "slurm",
        main,
        prune="head",
        backfill=full if backfill else None,
        interval=float(max(1, params.bf_interval)),
        priorities=model,
        settings=settings,
    )
