"""Reading SWF traces: the job conversion rules of the traces' README, streaming, errors."""

from __future__ import annotations

import gzip

import pytest

from slurmlite.scheduler.swf import TraceError, TraceStream, read_trace
from tests.sim.traces import swf_text

# The swf module's worked example: job 1 asks 60 s but ran 100 s on 2 of 4 CPUs; job 2
# never ran (run -1, 0 processors): a 1 s placeholder on 1 CPU.
EXAMPLE = """; MaxProcs: 4
; Note: a comment without much in it
1  0  -1  100  2  -1  -1  -1   60  -1 1 7 3 -1 -1 -1 -1 -1
2  5  -1   -1  0  -1  -1  -1   -1  -1 5 7 3 -1 -1 -1 -1 -1
"""


def write(tmp_path, text: str, name: str = "t.swf"):
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize(
    "mode, run, estimate, killed",
    [
        ("user", 60.0, 100.0, True),  # estimate max(60, 100); killed at the 60 s asked
        ("nokill", 100.0, 100.0, False),  # max(requested, run); runs its 100 s
        ("exact", 100.0, 100.0, False),  # the run time itself
    ],
)
def test_estimate_modes(tmp_path, mode, run, estimate, killed):
    trace = read_trace(write(tmp_path, EXAMPLE), mode)
    job = trace.jobs[0]
    assert (job.run, job.estimate, job.killed, job.procs) == (run, estimate, killed, 2)
    assert (job.user, job.group) == (7, 3)


def test_a_job_that_never_ran_is_a_one_second_placeholder(tmp_path):
    job = read_trace(write(tmp_path, EXAMPLE), "user").jobs[1]
    assert (job.run, job.estimate, job.procs, job.placeholder) == (1.0, 1.0, 1, True)
    assert job.submit == 5.0


def test_submit_zero_placeholder_moves_to_second_one(tmp_path):
    text = swf_text(4, [(1, 0, -1, 2, -1)])
    job = read_trace(write(tmp_path, text), "user").jobs[0]
    assert (job.submit, job.procs, job.placeholder) == (1.0, 2, True)


def test_processors_are_the_allocated_count_clipped_to_the_machine(tmp_path):
    text = swf_text(4, [(1, 0, 10, 9, 10)])
    assert read_trace(write(tmp_path, text), "user").jobs[0].procs == 4


def test_no_requested_time_means_the_run_time(tmp_path):
    text = swf_text(4, [(1, 0, 50, 2, -1)])
    job = read_trace(write(tmp_path, text), "user").jobs[0]
    assert (job.run, job.estimate, job.killed) == (50.0, 50.0, False)


def test_machine_size_falls_back_to_maxnodes_and_can_be_given(tmp_path):
    text = "; MaxNodes: 16\n" + swf_text(4, [(1, 0, 10, 2, 10)]).split("\n", 1)[1]
    assert read_trace(write(tmp_path, text)).procs == 16
    assert read_trace(write(tmp_path, text), procs=8).procs == 8


def test_gzip_and_streaming(tmp_path):
    path = write(tmp_path, EXAMPLE, "t.swf.gz")
    stream = TraceStream(path, "exact")
    assert stream.procs == 4 and stream.header["MaxProcs"] == "4"
    jobs = stream.jobs()
    assert next(jobs).job_id == 1
    assert [j.job_id for j in jobs] == [2]
    assert stream.fraction == 1.0


@pytest.mark.parametrize(
    "text, words",
    [
        ("; MaxProcs: 4\n1 0 -1 10 2\n", "line 2: 5 fields, SWF has 18"),
        ("; MaxProcs: 4\n" + "1 0 x 10 2" + " -1" * 13 + "\n", "line 2: 'x' is not a number"),
        ("1 0 -1 10 2" + " -1" * 13 + "\n", "no MaxProcs or MaxNodes in the header"),
    ],
)
def test_a_file_that_is_not_swf_is_refused_naming_the_line(tmp_path, text, words):
    with pytest.raises(TraceError, match=words):
        read_trace(write(tmp_path, text))


def test_missing_file_and_bad_mode(tmp_path):
    with pytest.raises(TraceError, match="cannot read"):
        read_trace(tmp_path / "nope.swf")
    with pytest.raises(TraceError, match="unknown estimate mode 'guess'"):
        read_trace(write(tmp_path, EXAMPLE), "guess")
