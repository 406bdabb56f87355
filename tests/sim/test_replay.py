"""The trace replay: the classic event rules, exact pruning, agreement with the reference.

Three layers: hand-worked schedules (comments show the arithmetic), random traces
replayed both by the production pass and by the minimal counter-based EASY of
``bench/sim_baseline.py`` (an independent implementation of the same rules: the
starts must agree job for job), and the six reference rows of the traces' README.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import sim_baseline
from slurmlite.scheduler.replay import Cpus, Replay, ReplaySink
from slurmlite.scheduler.replay_metrics import Metrics
from slurmlite.scheduler.replay_setup import setup_for
from slurmlite.scheduler.replayed import JobRecord
from slurmlite.scheduler.swf import Trace, TraceJob, convert, read_trace
from tests.sim.traces import trace_path


class Recorder(ReplaySink):
    def __init__(self) -> None:
        self.records: dict[int, JobRecord] = {}
        self.running: dict[int, JobRecord] = {}
        self.overlaps = 0

    def ended(self, record: JobRecord) -> None:
        self.records[record.job_id] = record


def job(i: int, submit: float, run: float, procs: int, requested: float, machine: int = 4):
    """A TraceJob by the README's rules (``user`` estimates): (job, submit, run, procs, req)."""
    fields = [float(i), submit, -1, run, procs, -1, -1, procs, requested, -1, 1, 1, 1, -1, 1]
    return convert(fields + [-1.0, -1.0, -1.0], machine, "user")


def replay(jobs: list[TraceJob], policy: str, procs: int = 4, **kw) -> dict[int, JobRecord]:
    setup = setup_for(policy, procs, **kw)
    sink = Recorder()
    Replay(procs, setup, sink).run(jobs)
    return sink.records


def starts(records: dict[int, JobRecord]) -> dict[int, float]:
    return {i: r.start for i, r in sorted(records.items())}


def test_worked_example_of_the_module_doc():
    jobs = [job(1, 0, 100, 3, 100), job(2, 10, 100, 4, 100), job(3, 20, 50, 1, 50),
            job(4, 30, 50, 1, 200)]  # fmt: skip
    got = replay(jobs, "easy")
    # 1 runs 0-100 on CPUs 0-2; 2 waits for all 4 (shadow 100, extra 0); 3 ends at 70 <= 100:
    # backfilled on CPU 3; 4 would end at 270 (its 200 s estimate) > 100: waits for 2's end
    assert starts(got) == {1: 0, 2: 100, 3: 20, 4: 200}
    assert [got[i].start - got[i].submit for i in (1, 2, 3, 4)] == [0, 90, 0, 170]
    assert got[1].resources == ((0, 2),) and got[3].resources == ((3, 3),)
    assert got[2].resources == ((0, 3),)
    # 4 ran its 50 s, not its estimate: ends 250
    assert got[4].end == 250


def test_fcfs_never_lets_a_later_job_pass():
    jobs = [job(1, 0, 100, 3, 100), job(2, 10, 100, 4, 100), job(3, 20, 50, 1, 50)]
    # same as above without backfill: 3 fits CPU 3 at 20 but 2 is ahead of it
    assert starts(replay(jobs, "fcfs")) == {1: 0, 2: 100, 3: 200}


def test_a_job_is_killed_at_its_estimate():
    # 1 asked 60 s and ran 100 in the log: in the replay it ends at 60, and 2 starts then
    jobs = [job(1, 0, 100, 4, 60), job(2, 5, 10, 4, 10)]
    got = replay(jobs, "fcfs")
    assert (got[1].end, got[1].killed) == (60, True)
    assert (got[2].start, got[2].killed) == (60, False)


def test_submissions_at_a_second_come_before_its_terminations():
    # 1 (3 CPUs) asked 200 s but ends at 50; 2 (4 CPUs) waits from 10: shadow 200 (1's
    # estimated end), extra 0.  At 50, 3 (1 CPU, 100 s) is submitted *before* 1's end is
    # handled: the free CPU and 50 + 100 <= 200 let it backfill.  Then 1 ends: 3 CPUs are
    # free, 2 needs 4 and starts when 3 ends, at 150.  (Terminations first would have
    # started 2 at 50 and made 3 wait until 150.)
    jobs = [job(1, 0, 50, 3, 200), job(2, 10, 100, 4, 100), job(3, 50, 100, 1, 100)]
    assert starts(replay(jobs, "easy")) == {1: 0, 2: 150, 3: 50}


def test_queue_orders_are_priority_plugins():
    # 1 holds the machine until 100; then 2 (4 CPUs, 300 s), 3 (1 CPU, 50 s), 4 (2, 100 s)
    jobs = [job(1, 0, 100, 4, 100), job(2, 1, 300, 4, 300), job(3, 2, 50, 1, 50),
            job(4, 3, 100, 2, 100)]  # fmt: skip
    # fcfs: 2 at 100, then 3 and 4 together at 400
    assert starts(replay(jobs, "fcfs")) == {1: 0, 2: 100, 3: 400, 4: 400}
    # sjf: 3 (50 s) and 4 (100 s) at 100, 2 (300 s) once both are done at 200
    assert starts(replay(jobs, "fcfs", order="sjf")) == {1: 0, 2: 200, 3: 100, 4: 100}
    # largest: 2 (4 CPUs) first, then 4 (2) and 3 (1) together at 400
    assert starts(replay(jobs, "fcfs", order="largest")) == {1: 0, 2: 100, 3: 400, 4: 400}
    # smallest: 3, then 4 beside it at 100; 2 at 200
    assert starts(replay(jobs, "fcfs", order="smallest")) == {1: 0, 2: 200, 3: 100, 4: 100}
    # ljf: 2 first (300 s), as fcfs here
    assert starts(replay(jobs, "easy", order="ljf")) == {1: 0, 2: 100, 3: 400, 4: 400}


def test_cpus_take_the_lowest_free_ranges():
    cpus = Cpus(8)
    assert cpus.take(3) == ((0, 2),) and cpus.take(2) == ((3, 4),)
    cpus.give(((0, 2),))
    assert cpus.take(4) == ((0, 2), (5, 5))
    cpus.give(((0, 2), (5, 5)))
    cpus.give(((3, 4),))
    assert cpus.free == [(0, 7)]


# -- random traces: production pass == minimal reference, pruned == unpruned ----------------

rows = st.lists(
    st.tuples(
        st.integers(0, 40),  # gap to the previous submission (0: same second)
        st.integers(1, 120),  # run time in the log
        st.integers(1, 8),  # processors
        st.one_of(st.just(-1), st.integers(1, 150)),  # requested time (-1: none)
    ),
    min_size=1,
    max_size=40,
)


def trace_of(data, machine: int = 8) -> Trace:
    jobs, t = [], 0
    for i, (gap, run, procs, req) in enumerate(data, 1):
        t += gap
        jobs.append(job(i, t, run, procs, req, machine))
    return Trace(machine, tuple(jobs), {})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows, st.sampled_from(["fcfs", "easy"]))
def test_random_traces_agree_with_the_minimal_reference_job_for_job(data, policy):
    trace = trace_of(data)
    got = starts(replay(list(trace.jobs), policy, procs=trace.procs))
    assert got == dict(sorted(sim_baseline.replay(trace, policy).items()))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows, st.sampled_from(["fcfs", "easy"]), st.sampled_from(["fcfs", "sjf", "largest"]))
def test_pruning_hands_the_pass_what_changes_nothing(data, policy, order):
    trace = trace_of(data)
    setup = setup_for(policy, trace.procs, order=order)
    full = dataclasses.replace(setup, prune="none")
    a, b = Recorder(), Recorder()
    Replay(trace.procs, setup, a).run(trace.jobs)
    Replay(trace.procs, full, b).run(trace.jobs)
    assert a.records == b.records


class Overlaps(ReplaySink):
    """Fails if two jobs ever hold one CPU at once (checked when each ends)."""

    def __init__(self) -> None:
        self.done: list[JobRecord] = []

    def ended(self, record: JobRecord) -> None:
        for other in self.done:
            if other.start < record.end and record.start < other.end:
                mine = {c for lo, hi in record.resources for c in range(lo, hi + 1)}
                theirs = {c for lo, hi in other.resources for c in range(lo, hi + 1)}
                assert not mine & theirs, (record, other)
        assert sum(hi - lo + 1 for lo, hi in record.resources) == record.procs
        self.done.append(record)


@settings(max_examples=60, deadline=None)
@given(rows, st.sampled_from(["fcfs", "easy", "slurm"]))
def test_no_cpu_is_ever_given_twice(data, policy):
    trace = trace_of(data)
    sink = Overlaps()
    replay_ = Replay(trace.procs, setup_for(policy, trace.procs), sink)
    replay_.run(trace.jobs)
    assert len(sink.done) == len(trace.jobs)
    assert not replay_.live and not replay_.pending  # nothing kept once the trace is done


# -- the reference values of the traces' README -----------------------------------------

REFERENCE = [
    # trace, estimates, policy, mean wait, mean bsld, utilization, makespan (as printed there)
    ("NASA-iPSC-1993-3.1-cln.swf.gz", "exact", "fcfs", "8.0047", "1.0260", "0.4661", 7949022),
    ("NASA-iPSC-1993-3.1-cln.swf.gz", "exact", "easy", "4.0281", "1.0118", "0.4661", 7949022),
    ("lublin_256.swf.gz", "exact", "fcfs", "2388443.8", "66502.48", "0.6549", 12482549),
    ("lublin_256.swf.gz", "exact", "easy", "97156.0", "590.05", "0.9363", 8730698),
    ("lublin_256_new2.swf.gz", "exact", "fcfs", "1172120.1", "54575.25", "0.4119", 6886877),
    ("lublin_256_new2.swf.gz", "exact", "easy", "9703.6", "256.63", "0.6026", 4707047),
]


@pytest.mark.parametrize("name, mode, policy, wait, bsld, util, makespan", REFERENCE)
def test_reference_values_to_the_digits_printed(name, mode, policy, wait, bsld, util, makespan):
    trace = read_trace(trace_path(name), mode)
    metrics = Metrics(trace.procs)
    Replay(trace.procs, setup_for(policy, trace.procs), metrics).run(trace.jobs)
    got = metrics.summary()
    decimals = lambda text: len(text.partition(".")[2])  # noqa: E731
    assert got["jobs"] == len(trace.jobs)
    assert f"{got['mean_wait']:.{decimals(wait)}f}" == wait
    assert f"{got['mean_bsld']:.{decimals(bsld)}f}" == bsld
    assert f"{got['utilization']:.4f}" == util
    assert round(got["makespan"]) == makespan


def test_the_benchmark_runs_and_agrees_with_its_baseline(capsys):
    from bench import sim_replay

    folder = trace_path("lublin_256.swf.gz").parent
    sim_replay.main(["--quick", "--no-slurm", "--traces", str(folder)])
    rows = [line for line in capsys.readouterr().out.splitlines() if "lublin" in line]
    assert len(rows) == 4 and all(row.endswith("yes") for row in rows)
