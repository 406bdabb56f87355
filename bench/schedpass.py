"""The scheduling pass alone: priorities, main pass and backfill over a big synthetic cluster.

No daemons: the pure functions of ``slurmlite.scheduler`` timed in this
process with ``time.perf_counter``.  The scenario (issue 6) is built from a
seeded ``random.Random``, so every run schedules the same cluster:

* 1,000 nodes ``g0001..g1000`` of 64 CPUs, 512 GiB and 8 GPUs; partition
  ``main`` holds them all, partition ``short`` (PriorityTier 2, MaxTime
  4 h) the first 250.  ``DefMemPerCPU=8192``, so 64 CPUs are the whole memory.
* 2,000 running jobs placed first-fit (25 % whole 8-GPU nodes, 4 % two or
  three whole nodes, 48 % one GPU with 8 CPUs, 23 % 4-32 CPUs), started up
  to 90 % of their time limit ago: most nodes are busy, a few are idle.
* N pending jobs (10,000; also 1,000 and 100,000 to show the growth) of 40
  users in 8 accounts: 40 % one GPU, 20 % a whole 8-GPU node, 10 % two to
  eight whole nodes, 30 % 1-32 CPUs; time limits of 30 min to 2 days; a
  fifth of them in ``short``.

A *full pass* is what the controller runs each backfill interval: the
fair-share table from the association tree, every pending job's multifactor
priority (age, fair-share, job size, partition weights), the snapshot's
pending tuple with those priorities (not timed: the controller builds
those values from its rows anyway), then ``schedule_pass`` under
``SchedulerType=sched/backfill`` (main pass, then backfill with
reservations and estimates for the examined jobs).  Building the node views
from the store is the controller's part and is not timed.  The figure is the
median of several passes over the same snapshot (the pass is pure, so each
run does the same work); the detail line splits it into priorities and the
pass and counts starts and estimates.

Targets (issue 6): 10,000 pending with Slurm's default ``bf_max_job_test=500``
at most 250 ms (real Slurm 22.05's backfill cycle, examining at most 500
jobs, took 325 ms on average on this kind of machine); every job examined
(``bf_max_job_test=10000``) at most 2 s.  1,000 and 100,000 pending (the
latter not with ``--quick``) use ``bf_max_job_test=500`` and have no target.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench.common import Figure, fmt, median
from slurmlite.protocol import NodeAlloc
from slurmlite.scheduler.billing import job_tres
from slurmlite.scheduler.fairshare import AssocRecord, compute_fairshare, tree_from_records
from slurmlite.scheduler.multifactor import (
    ClusterFacts,
    JobFacts,
    PartitionFacts,
    PriorityParams,
    multifactor_many,
)
from slurmlite.scheduler.passes import schedule_pass
from slurmlite.scheduler.registry import scheduler_for
from slurmlite.scheduler.snapshot import (
    NodeView,
    PartitionView,
    PendingJob,
    Plan,
    Policy,
    RunningJob,
    Snapshot,
)

NOW = 1_700_000_000.0
CPUS, MEM, GPUS = 64, 512 * 1024, 8
LIMITS = (30, 60, 120, 240, 480, 720, 1440, 2880)  # minutes
PARAMS = PriorityParams(age=1000, fairshare=10000, jobsize=1000, partition=1000)
SLURM_REF = (
    "reference: real Slurm 22.05's backfill cycle took 325 ms on average on this kind "
    "of machine, examining at most 500 jobs"
)
NO_REF = "reference: no Slurm 22.05 figure quoted"


@dataclass
class Scenario:
    snapshot: Snapshot  # pending jobs carry priority 0 until a full pass computes them
    facts: list[JobFacts]  # parallel to snapshot.pending
    records: list[AssocRecord]
    cluster: ClusterFacts
    partitions: dict[str, PartitionFacts]


def build_scenario(pending: int, nodes: int = 1000, running: int = 2000, seed: int = 6) -> Scenario:
    """The issue's cluster, ``running`` jobs on it and ``pending`` waiting jobs."""
    rnd = random.Random(seed)
    names = [f"g{i + 1:04d}" for i in range(nodes)]
    short = names[: max(1, nodes // 4)]
    parts = (
        PartitionView("main", tuple(names)),
        PartitionView("short", tuple(short), "UP", 240, 2),
    )
    used_cpus = [0] * nodes
    used_gpus = [0] * nodes
    jobs: list[RunningJob] = []
    cursor = 0  # first node that may still have room: first-fit from here
    for job_id in range(1, running + 1):
        kind = rnd.choices(["gpu8", "multi", "gpu1", "cpu"], [25, 4, 48, 23])[0]
        whole = {"gpu8": 1, "multi": rnd.randint(2, 3)}.get(kind, 0)
        cpus, gpus = (8, 1) if kind == "gpu1" else (rnd.randint(4, 32), 0)
        allocs: list[NodeAlloc] = []
        for i in range(cursor, nodes):
            if whole and used_cpus[i] == 0:
                allocs.append(NodeAlloc(names[i], CPUS, MEM, list(range(GPUS))))
                used_cpus[i], used_gpus[i] = CPUS, GPUS
                if len(allocs) == whole:
                    break
            elif not whole and used_cpus[i] + cpus <= CPUS and used_gpus[i] + gpus <= GPUS:
                held = list(range(used_gpus[i], used_gpus[i] + gpus))
                allocs.append(NodeAlloc(names[i], cpus, cpus * 8192, held))
                used_cpus[i] += cpus
                used_gpus[i] += gpus
                break
        if not allocs or (whole and len(allocs) < whole):
            break  # the cluster is full
        while cursor < nodes and used_cpus[cursor] == CPUS:
            cursor += 1
        limit = rnd.choice(LIMITS)
        start = NOW - rnd.uniform(0, 0.9) * limit * 60
        user = f"u{rnd.randrange(40):02d}"
        jobs.append(
            RunningJob(
                job_id,
                user,
                f"a{int(user[1:]) % 8}",
                "normal",
                "main",
                start,
                start + limit * 60,
                tuple(allocs),
            )
        )
    views = tuple(
        NodeView(
            name,
            i,
            CPUS,
            MEM,
            GPUS,
            partitions=("main", "short") if name in short else ("main",),
            alloc_cpus=used_cpus[i],
            alloc_mem=used_cpus[i] * 8192,
            alloc_gpus=frozenset(range(used_gpus[i])),
        )
        for i, name in enumerate(names)
    )
    waiting: list[PendingJob] = []
    facts: list[JobFacts] = []
    for n in range(pending):
        job_id = running + 1 + n
        kind = rnd.choices(["gpu1", "gpu8", "multi", "cpu"], [40, 20, 10, 30])[0]
        kw: dict[str, int] = {
            "gpu1": {"ntasks": 1, "cpus_per_task": 8, "gpus_per_node": 1},
            "gpu8": {"ntasks": 8, "cpus_per_task": 8, "gpus_per_node": 8},
            "multi": {
                "nodes_min": rnd.randint(2, 8),
                "ntasks_per_node": 8,
                "cpus_per_task": 8,
                "gpus_per_node": 8,
            },
            "cpu": {"ntasks": rnd.randint(1, 32)},
        }[kind]
        part = "short" if rnd.random() < 0.2 else "main"
        limit = rnd.choice(LIMITS[:4] if part == "short" else LIMITS)
        user = f"u{rnd.randrange(40):02d}"
        submit = NOW - rnd.uniform(0, 3 * 86400)
        job = PendingJob(
            job_id, 0, submit, part, user, time_limit=limit, account=f"a{int(user[1:]) % 8}", **kw
        )
        node_count = job.nodes_min
        per_node = (job.ntasks_per_node or 1) * node_count
        cpus = (job.ntasks or per_node) * job.cpus_per_task
        gpus = job.gpus_per_node * node_count
        tres = job_tres(cpus=cpus, mem=cpus * 8192, nodes=node_count, gpus=gpus)
        waiting.append(job)
        facts.append(JobFacts(node_count, cpus, tres, submit, submit, limit))
    records = [AssocRecord(f"a{a}", shares=a + 1) for a in range(8)]
    records += [
        AssocRecord(f"a{u % 8}", f"u{u:02d}", shares=1, usage=rnd.uniform(0, 1e7))
        for u in range(40)
    ]
    cluster = ClusterFacts(nodes=nodes, cpus=nodes * CPUS, max_job_factor=1)
    pfacts = {
        p.name: PartitionFacts(p.name, tres_total={"cpu": len(p.nodes) * CPUS}, max_time=p.max_time)
        for p in parts
    }
    snapshot = Snapshot(NOW, views, parts, tuple(waiting), tuple(jobs))
    return Scenario(snapshot, facts, records, cluster, pfacts)


def priorities(scenario: Scenario) -> list[int]:
    """Fair-share from the association tree, then every pending job's multifactor priority
    (``multifactor_many``: the values ``multifactor`` gives, without the breakdowns)."""
    shares = compute_fairshare(tree_from_records(scenario.records))
    pending = scenario.snapshot.pending
    return multifactor_many(
        scenario.facts,
        PARAMS,
        now=scenario.snapshot.now,
        cluster=scenario.cluster,
        partitions=[scenario.partitions[job.partition] for job in pending],
        fairshares=[shares.factor(job.account, job.user) for job in pending],
    )


def full_pass(scenario: Scenario, policy: Policy) -> tuple[Plan, float, float]:
    """Priorities, then the pass on the snapshot carrying them; (plan, priority ms, pass ms).

    Putting the priorities into the snapshot's jobs is the controller's snapshot
    building (it makes the ``PendingJob`` values from its rows anyway): not timed.
    """
    started = time.perf_counter()
    values = priorities(scenario)
    prio_ms = (time.perf_counter() - started) * 1000
    pending = tuple(
        dataclasses.replace(job, priority=value)
        for job, value in zip(scenario.snapshot.pending, values, strict=True)
    )
    snapshot = dataclasses.replace(scenario.snapshot, pending=pending)
    started = time.perf_counter()
    plan = schedule_pass(snapshot, policy)
    return plan, prio_ms, (time.perf_counter() - started) * 1000


def a_policy(max_job_test: int) -> Policy:
    return Policy(
        def_mem_per_cpu=8192,
        scheduler_type="sched/backfill",
        scheduler_parameters={"bf_max_job_test": str(max_job_test)},
    )


def measure(
    key: str,
    pending: int,
    max_job_test: int,
    runs: int,
    target: float | None,
    ref: str,
    quick: bool,
    log: Callable[[str], None],
) -> Figure:
    built = time.perf_counter()
    scenario = build_scenario(pending, **({"nodes": 50, "running": 100} if quick else {}))
    nodes, running = len(scenario.snapshot.nodes), len(scenario.snapshot.running)
    log(
        f"  (built {pending:,} pending, {running:,} running on {nodes:,} nodes in "
        f"{time.perf_counter() - built:.1f} s)"
    )
    totals, prios, passes = [], [], []
    plan = Plan()
    for _ in range(runs):
        plan, prio_ms, pass_ms = full_pass(scenario, a_policy(max_job_test))
        totals.append(prio_ms + pass_ms)
        prios.append(prio_ms)
        passes.append(pass_ms)
    examined = "every job" if max_job_test >= pending else f"bf_max_job_test={max_job_test:,}"
    return Figure(
        key=key,
        label=f"full pass, {pending:,} pending on {nodes:,} nodes, {examined}",
        value=median(totals),
        unit="ms",
        how=(
            f"median of {runs} full passes over the same snapshot in this process "
            f"(perf_counter): fair-share, {pending:,} multifactor priorities, schedule_pass"
        ),
        reference=ref,
        target=target,
        detail=(
            f"best {fmt(min(totals))} ms; priorities {fmt(median(prios))} ms + pass "
            f"{fmt(median(passes))} ms; {len(plan.starts):,} started, "
            f"{len(plan.estimates):,} estimates"
        ),
        stat="median",
    )


def schedpass(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    runs = 2 if quick else 5
    # quick: a twentieth of everything (50 nodes, 100 running, 500 pending, 25 examined)
    scale = 20 if quick else 1
    chosen = scheduler_for("sched/backfill")
    log(f"  (SchedulerType=sched/backfill runs {chosen.__module__}.{chosen.__name__})")
    big = 10_000 // scale
    plans = [
        ("schedpass-500", big, 500 // scale, runs, None if quick else 250.0, SLURM_REF),
        ("schedpass-all", big, big, max(1, runs - 2), None if quick else 2000.0, NO_REF),
        ("schedpass-1k", 1000 // scale, 500 // scale, runs, None, NO_REF),
    ]
    if not quick:
        plans.append(("schedpass-100k", 100_000, 500, 1, None, NO_REF))
    figures = []
    for key, pending, max_job_test, n, target, ref in plans:
        figure = measure(key, pending, max_job_test, n, target, ref, quick, log)
        log(figure.describe())
        figures.append(figure)
    return figures
