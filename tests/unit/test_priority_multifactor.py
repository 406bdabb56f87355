"""Multifactor priority (slurmlite/scheduler/multifactor.py, priority.py): the
numbers sprio shows and the queue order they give, as in Slurm (spec §2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmlite.config import parse_config
from slurmlite.protocol import JobSubmit
from slurmlite.scheduler.billing import job_tres
from slurmlite.scheduler.fairshare import account, compute_fairshare, root, user
from slurmlite.scheduler.multifactor import AgeOnly, multifactor_many
from slurmlite.scheduler.passes import queue_order
from slurmlite.scheduler.priority import (
    ClusterFacts,
    JobFacts,
    PartitionFacts,
    PriorityParams,
    initial_priority,
    multifactor,
)
from tests.builders import a_job, a_node, a_policy, a_snapshot

DAY = 86400.0
NOW = 1_000_000.0
ONE_PART = PartitionFacts("p")  # PriorityJobFactor 1 of at most 1: factor 1


def spec_params(**kw: object) -> PriorityParams:
    """Spec §2.2 worked example: Age=1000, Fairshare=10000, JobSize=1000, Partition=1000."""
    base: dict[str, object] = dict(age=1000, fairshare=10000, jobsize=1000, partition=1000)
    return PriorityParams(**{**base, **kw})  # type: ignore[arg-type]


def prio(job: JobFacts, params: PriorityParams, **kw: object):
    kw.setdefault("now", NOW)
    kw.setdefault("cluster", ClusterFacts(nodes=4, cpus=64))
    kw.setdefault("partition", ONE_PART)
    return multifactor(job, params, **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the formula


def test_spec_worked_example_gives_8416_and_keeps_its_parts():
    # 1 node / 16 CPUs of 4 / 64, eligible 3.5 of 7 days, fair-share 2/3, one partition:
    # 1000 x 0.5 + 10000 x 2/3 + 1000 x (1/4 + 16/64)/2 + 1000 x 1 = 8416.67 -> 8416
    job = JobFacts(min_nodes=1, cpus=16, accrue_time=NOW - 3.5 * DAY)
    p = prio(job, spec_params(), fairshare=2 / 3)
    assert p.value == 8416
    assert (p.factors.age, p.factors.jobsize, p.factors.partition) == (0.5, 0.25, 1.0)
    assert p.weighted.fairshare == pytest.approx(6666.67, abs=0.01)
    assert (p.weighted.age, p.weighted.jobsize, p.weighted.partition) == (500, 250, 1000)
    assert not p.direct and not p.held


def test_favor_small_turns_the_job_size_factor_around():
    # ((4-1)/4 + (64-16)/64) / 2 = (0.75 + 0.75) / 2 = 0.75
    job = JobFacts(min_nodes=1, cpus=16)
    assert prio(job, spec_params(favor_small=True)).factors.jobsize == 0.75
    # a job as big as the cluster: 0 (favour small) and 1 (favour large)
    whole = JobFacts(min_nodes=4, cpus=64)
    assert prio(whole, spec_params(favor_small=True)).factors.jobsize == 0.0
    assert prio(whole, spec_params()).factors.jobsize == 1.0


def test_small_relative_to_time_divides_size_by_the_time_limit():
    # max(1 node x 64/4, 8 CPUs) = 16 CPUs per 60 minutes over 64 CPUs = 16/60/64
    job = JobFacts(min_nodes=1, cpus=8, time_limit=60)
    flags = frozenset({"SMALL_RELATIVE_TO_TIME"})
    assert prio(job, spec_params(flags=flags)).factors.jobsize == pytest.approx(16 / 60 / 64)
    small = spec_params(flags=flags, favor_small=True)
    assert prio(job, small).factors.jobsize == pytest.approx(1 - 16 / 60 / 64)


def test_all_weights_zero_gives_every_job_1_so_the_queue_is_fifo():
    # Wildly different jobs (age, size, fair-share, partition) all get 1 ...
    none = PriorityParams()
    jobs = [
        JobFacts(min_nodes=4, cpus=64, accrue_time=NOW - 30 * DAY),
        JobFacts(min_nodes=1, cpus=1, accrue_time=NOW),
        JobFacts(min_nodes=2, cpus=3, tres={"cpu": 3}),
    ]
    values = [prio(j, none, fairshare=f).value for j, f in zip(jobs, (0.0, 1.0, 0.5), strict=True)]
    assert values == [1, 1, 1]
    # ... so the queue falls back to submit time, then job id: 9 (t=10), 5 and 7 (t=50).
    pending = [
        a_job(7, priority=values[0], submit_time=50.0),
        a_job(5, priority=values[1], submit_time=50.0),
        a_job(9, priority=values[2], submit_time=10.0),
    ]
    order = queue_order(a_snapshot([a_node("n1")], pending))
    assert [j.job_id for j in order] == [9, 5, 7]


def test_priority_is_truncated_and_clamped_to_1_and_2_to_the_32_minus_1():
    # fair-share 0.9999 x 1000 = 999.9 -> 999 (truncated, not rounded)
    assert prio(JobFacts(), PriorityParams(fairshare=1000), fairshare=0.9999).value == 999
    # weights of 2**32 - 1 on three full factors overflow: 2**32 - 1
    big = PriorityParams(age=2**32 - 1, jobsize=2**32 - 1, partition=2**32 - 1)
    old_big = JobFacts(min_nodes=4, cpus=64, accrue_time=NOW - 8 * DAY)
    assert prio(old_big, big).value == 2**32 - 1
    # 1000 - nice 5000 = -4000: never below 1 (0 means held)
    assert prio(JobFacts(nice=5000), PriorityParams(partition=1000)).value == 1


def test_nice_is_subtracted_and_a_negative_nice_raises_priority():
    # partition 1000 x 1 = 1000; --nice=100 -> 900; nice -50 (admins) -> 1050
    params = PriorityParams(partition=1000)
    assert prio(JobFacts(nice=100), params).value == 900
    assert prio(JobFacts(nice=-50), params).value == 1050
    assert prio(JobFacts(nice=100), params).weighted.nice == 100  # sprio -l NICE


def test_site_factor_is_added():
    assert prio(JobFacts(site_factor=7), PriorityParams(partition=1000)).value == 1007


def test_a_held_job_gets_0_but_keeps_its_factors():
    p = prio(JobFacts(held=True, cpus=16), spec_params(), fairshare=1.0)
    assert p.value == 0 and p.held
    assert p.weighted.fairshare == 10000  # what it would weigh once released


def test_an_admin_set_priority_replaces_the_formula():
    p = prio(JobFacts(admin_priority=42, cpus=16, nice=10), spec_params(), fairshare=1.0)
    assert (p.value, p.direct) == (42, True)
    assert p.weighted.fairshare == 0 and p.weighted.jobsize == 0
    # held wins over an admin-set value
    assert prio(JobFacts(admin_priority=42, held=True), spec_params()).value == 0


# ------------------------------------------------------------------ the factors


def test_age_counts_whole_seconds_from_eligibility_up_to_max_age():
    params = PriorityParams(age=1000, max_age=100.0)
    assert prio(JobFacts(accrue_time=None), params).factors.age == 0.0  # not eligible yet
    assert prio(JobFacts(accrue_time=NOW - 25.9), params).factors.age == 0.25  # 25 s / 100
    assert prio(JobFacts(accrue_time=NOW - 500), params).factors.age == 1.0
    assert prio(JobFacts(accrue_time=NOW + 10), params).factors.age == 0.0  # begins later
    # ACCRUE_ALWAYS counts from submission even for a job not yet eligible
    always = PriorityParams(age=1000, max_age=100.0, flags=frozenset({"ACCRUE_ALWAYS"}))
    assert prio(JobFacts(accrue_time=None, submit_time=NOW - 50), always).factors.age == 0.5


def test_partition_factor_is_job_factor_over_the_largest():
    # golden cluster: debug PriorityJobFactor=1, long=10 -> debug 0.1, long 1.0
    cluster = ClusterFacts(nodes=2, cpus=4, max_job_factor=10)
    params = PriorityParams(partition=1000)
    debug, long = PartitionFacts("debug", 1), PartitionFacts("long", 10)
    assert prio(JobFacts(), params, cluster=cluster, partition=debug).weighted.partition == 100
    assert prio(JobFacts(), params, cluster=cluster, partition=long).weighted.partition == 1000
    raw = PriorityParams(partition=1000, flags=frozenset({"NO_NORMAL_PART"}))
    assert prio(JobFacts(), raw, cluster=cluster, partition=long).factors.partition == 10.0
    zero = PartitionFacts("z", 0)
    assert prio(JobFacts(), params, cluster=cluster, partition=zero).factors.partition == 0.0


def test_qos_and_association_factors_are_normalised_to_the_largest():
    cluster = ClusterFacts(nodes=4, cpus=64, max_qos_priority=200, max_assoc_priority=10)
    params = PriorityParams(qos=1000, assoc=100)
    p = prio(JobFacts(), params, cluster=cluster, qos_priority=50, assoc_priority=5)
    # qos 50/200 x 1000 = 250; assoc 5/10 x 100 = 50
    assert (p.weighted.qos, p.weighted.assoc, p.value) == (250, 50, 300)
    assert prio(JobFacts(), params, cluster=cluster).value == 1  # QOS priority 0


def test_tres_factor_is_the_jobs_share_of_the_partition():
    # PriorityWeightTRES=CPU=1000,GRES/gpu=2000; partition of 4 CPUs and 4 GPUs;
    # job 1 CPU, 2 GPUs: cpu 1/4 x 1000 = 250, gpu 2/4 x 2000 = 1000
    params = PriorityParams.from_config(
        parse_config("PriorityWeightTRES=CPU=1000,Mem=0,GRES/gpu=2000\n")
    )
    part = PartitionFacts("debug", tres_total={"cpu": 4, "mem": 8000, "gres/gpu": 4})
    job = JobFacts(cpus=1, tres=job_tres(cpus=1, mem=1000, gpus=2))
    p = prio(job, params, partition=part)
    assert p.weighted.tres == {"cpu": 250.0, "mem": 0.0, "gres/gpu": 1000.0}
    assert p.value == 1250
    assert p.weighted.tres_text() == "cpu=250,gres/gpu=1000"  # mem=0 left out, as sprio
    assert p.factors.tres_text(2, shown=p.weighted.tres) == "cpu=0.25,gres/gpu=0.50"  # sprio -n
    raw = PriorityParams(tres={"cpu": 10.0}, flags=frozenset({"NO_NORMAL_TRES"}))
    assert prio(job, raw, partition=part).weighted.tres == {"cpu": 10.0}  # 1 CPU x 10


# ------------------------------------------------------- golden: sprio on 22.05


def test_golden_sprio_rows_are_reproduced():
    # 50_sprio*.txt / 50_scontrol_show_*.txt: nodes n1, n2 with 2 CPUs, 4000 MB, 2 GPUs;
    # partitions debug (PriorityJobFactor=1) and long (10); sprio -w weights
    # Age=1000 Fairshare=10000 JobSize=1000 Partition=1000 QOS=1000
    # TRES=CPU=1000,Mem=0,GRES/gpu=2000 (the GPU weight is cut off in -w; job 56's
    # 5725 - 4725 = 1000 = 2/4 GPUs x W gives W = 2000).  Jobs are alice's in acct_a,
    # whose fair-share factor is 0.4 in 50_sshare.txt (computed below from that tree).
    conf = parse_config(
        "PriorityWeightAge=1000\nPriorityWeightFairshare=10000\nPriorityWeightJobSize=1000\n"
        "PriorityWeightPartition=1000\nPriorityWeightQOS=1000\n"
        "PriorityWeightTRES=CPU=1000,Mem=0,GRES/gpu=2000\n"
    )
    params = PriorityParams.from_config(conf)
    u = 0.5 / 4.867477  # alice's EffectvUsage in acct_a (see test_fairshare.py)
    tree = root(
        user("root"),
        account("acct_a", 1, user("alice", 1, u), user("root", 1, 1 - u)),
        account("acct_b", 1, user("alice"), user("root")),
    )
    fairshare = compute_fairshare(tree).factor("acct_a", "alice")
    cluster = ClusterFacts(nodes=2, cpus=4, max_job_factor=10)
    debug = PartitionFacts("debug", 1, {"cpu": 4, "mem": 8000, "node": 2, "gres/gpu": 4})
    submitted = 1_796_005_750.0  # 2026-11-30T02:29:10; sprio ran ~9 s later
    rows = {
        51: (2, 2, 0),  # wants-2nodes: -N2 -n2
        52: (1, 1, 0),  # small-one
        56: (1, 1, 2),  # gpu-job: --gres=gpu:2
    }
    shown = {}
    for job_id, (nodes, cpus, gpus) in rows.items():
        job = JobFacts(
            min_nodes=nodes,
            cpus=cpus,
            tres=job_tres(cpus=cpus, mem=1000 * cpus, nodes=nodes, gpus=gpus),
            accrue_time=submitted,
            submit_time=submitted,
        )
        p = multifactor(
            job, params, now=submitted + 9, cluster=cluster, partition=debug, fairshare=fairshare
        )
        w = p.weighted
        cols = (w.age, w.fairshare, w.jobsize, w.partition, w.qos)
        shown[job_id] = (p.value, *(f"{c:.0f}" for c in cols), w.tres_text()[:20])
    # sprio: PRIORITY AGE FAIRSHARE JOBSIZE PARTITION QOS TRES (TRES is cut at 20 chars)
    assert shown == {
        51: (5350, "0", "4000", "750", "100", "0", "cpu=500"),
        52: (4725, "0", "4000", "375", "100", "0", "cpu=250"),
        56: (5725, "0", "4000", "375", "100", "0", "cpu=250,gres/gpu=100"),
    }


# ------------------------------------------------------- plugins and config


def test_basic_priority_counts_down_and_nice_moves_it():
    basic = a_policy(priority_type="priority/basic")
    assert initial_priority(a_job(1), basic, sequence=1) == 4294901758
    where = dict(name="j", work_dir="/tmp", submit_dir="/tmp", submit_host="h")
    nice = JobSubmit(script="#!/bin/sh\n", nice=100, **where)
    assert initial_priority(nice, basic, sequence=1) == 4294901758 - 100
    # a nice that would take it to 0 or below is ignored: the job whose turn gives
    # 4294901759 - seq = 1,000,000 keeps that, whatever nice 2,000,000,000 says ...
    late = JobSubmit(script="#!/bin/sh\n", nice=2_000_000_000, **where)
    seq = 4294901759 - 1_000_000
    assert initial_priority(late, basic, sequence=seq) == 1_000_000
    # ... and a negative one (admins only) raises it
    eager = JobSubmit(script="#!/bin/sh\n", nice=-5, **where)
    assert initial_priority(eager, basic, sequence=1) == 4294901758 + 5


def test_params_come_from_slurm_conf():
    cfg = parse_config(
        "PriorityWeightAge=5\nPriorityMaxAge=1-0\nPriorityFavorSmall=YES\n"
        "PriorityFlags=no_fair_tree,MAX_TRES\n"
    )
    p = PriorityParams.from_config(cfg)
    assert (p.age, p.max_age, p.favor_small) == (5, DAY, True)
    assert p.flags == {"NO_FAIR_TREE", "MAX_TRES"} and not p.fair_tree
    defaults = PriorityParams.from_config(parse_config(""))
    assert defaults == PriorityParams()  # all weights 0, 7 days, Fair Tree
    assert defaults.fair_tree


# ------------------------------------------------------------------ properties


factor = st.floats(min_value=0.0, max_value=1.0)
weight = st.integers(min_value=0, max_value=100_000)


@given(fs_low=factor, fs_high=factor, w=weight, age=weight, cpus=st.integers(1, 64))
def test_more_fairshare_never_lowers_priority(fs_low, fs_high, w, age, cpus):
    low, high = sorted((fs_low, fs_high))
    params = PriorityParams(fairshare=w, age=age, jobsize=age)
    job = JobFacts(cpus=cpus, accrue_time=NOW - 3600)
    assert prio(job, params, fairshare=low).value <= prio(job, params, fairshare=high).value


@given(
    weights=st.tuples(weight, weight, weight, weight),
    nice=st.integers(-(2**31) + 3, 2**31 - 3),
    nodes=st.integers(1, 8),
    cpus=st.integers(0, 128),
    waited=st.floats(0, 30 * DAY),
    fs=factor,
)
def test_unheld_priority_stays_within_1_and_2_to_the_32_minus_1(
    weights, nice, nodes, cpus, waited, fs
):
    params = PriorityParams(*weights)  # age, assoc, fairshare, jobsize
    job = JobFacts(min_nodes=nodes, cpus=cpus, accrue_time=NOW - waited, nice=nice)
    p = prio(job, params, fairshare=fs)
    assert 1 <= p.value <= 2**32 - 1
    for name in ("age", "fairshare", "jobsize"):
        assert 0.0 <= getattr(p.factors, name) <= 1.0


# ------------------------------------------------------------------ many at once

a_job_facts = st.builds(
    JobFacts,
    min_nodes=st.integers(1, 8),
    cpus=st.integers(0, 128),
    tres=st.fixed_dictionaries({"cpu": st.integers(0, 128), "gres/gpu": st.integers(0, 16)}),
    accrue_time=st.one_of(st.none(), st.floats(NOW - 30 * DAY, NOW + DAY)),
    submit_time=st.floats(NOW - 30 * DAY, NOW),
    time_limit=st.one_of(st.none(), st.integers(1, 10_000)),
    nice=st.integers(-10_000, 10_000),
    site_factor=st.integers(0, 1000),
    admin_priority=st.one_of(st.none(), st.integers(1, 10**6)),
    held=st.booleans(),
)
some_flags = st.frozensets(
    st.sampled_from(["ACCRUE_ALWAYS", "SMALL_RELATIVE_TO_TIME", "NO_NORMAL_PART", "NO_NORMAL_QOS"])
)


@given(
    jobs=st.lists(
        st.tuples(a_job_facts, factor, st.integers(0, 3), st.integers(0, 50), st.booleans()),
        max_size=12,
    ),
    weights=st.tuples(weight, weight, weight, weight, weight, weight),
    tres=st.sampled_from([{}, {"cpu": 1000.0}, {"cpu": 0.5, "gres/gpu": 2000.0}]),
    flags=some_flags,
    favor_small=st.booleans(),
)
def test_many_at_once_gives_exactly_what_each_job_gets_alone(
    jobs, weights, tres, flags, favor_small
):
    # multifactor_many is the fast path of a full pass: it must agree to the last unit
    params = PriorityParams(*weights, tres=tres, flags=flags, favor_small=favor_small)
    cluster = ClusterFacts(8, 256, max_job_factor=3, max_qos_priority=50, max_assoc_priority=3)
    parts = [
        PartitionFacts("a", job_factor=1, tres_total={"cpu": 256, "gres/gpu": 32}),
        PartitionFacts("b", job_factor=3, tres_total={"cpu": 64}, max_time=240),
    ]
    facts = [j for j, *_ in jobs]
    part_of = [parts[short] for *_, short in jobs]
    many = multifactor_many(
        facts,
        params,
        now=NOW,
        cluster=cluster,
        partitions=part_of,
        fairshares=[fs for _, fs, *_ in jobs],
        qos_priorities=[q for _, _, _, q, _ in jobs],
        assoc_priorities=[a for _, _, a, *_ in jobs],
    )
    alone = [
        multifactor(
            job,
            params,
            now=NOW,
            cluster=cluster,
            partition=part,
            fairshare=fs,
            qos_priority=q,
            assoc_priority=a,
        ).value
        for (job, fs, a, q, _), part in zip(jobs, part_of, strict=True)
    ]
    assert many == alone


# ------------------------------------------------------------------ age only


@given(
    job=a_job_facts,
    weights=st.tuples(weight, weight, weight, weight, weight, weight),
    tres=st.sampled_from([{}, {"cpu": 1000.0}, {"cpu": 0.5, "gres/gpu": 2000.0}]),
    fs=factor,
    waited=st.integers(0, 40 * 86400),
)
def test_age_only_gives_exactly_what_multifactor_gives_later(job, weights, tres, fs, waited):
    # the controller keeps a job's shape (multifactor at age 0) and puts each new age into
    # it; value and breakdown must be multifactor's own, to the last bit
    params = PriorityParams(*weights, tres=tres, max_age=7 * DAY)
    common = {
        "cluster": ClusterFacts(8, 256, max_qos_priority=50, max_assoc_priority=3),
        "partition": PartitionFacts("a", tres_total={"cpu": 256, "gres/gpu": 32}),
        "fairshare": fs,
        "qos_priority": 7,
        "assoc_priority": 2,
    }
    shape = JobFacts(**{**job.__dict__, "accrue_time": None, "admin_priority": None,
                        "held": False})  # fmt: skip
    ageing = AgeOnly(multifactor(shape, params, now=0.0, **common), params.age)
    aged = JobFacts(**{**shape.__dict__, "accrue_time": NOW - waited})
    want = multifactor(aged, params, now=NOW, **common)
    age = want.factors.age
    assert ageing.value(age) == want.value
    assert ageing.at(age) == want
    assert ageing.as_dict(age) == want.as_dict()


def test_age_only_adds_the_weighted_age_to_the_shape():
    # Age=1000, JobSize=1000, 4 nodes / 64 CPUs: a 1-node 16-CPU job's size is
    # (1/4 + 16/64) / 2 = 0.25 -> 250; at half of PriorityMaxAge 500 more: 750
    params = PriorityParams(age=1000, jobsize=1000)
    base = prio(JobFacts(cpus=16), params, now=0.0)
    assert base.value == 250
    assert AgeOnly(base, params.age).value(0.5) == 750
    assert AgeOnly(base, params.age).at(0.5).weighted.age == 500.0
