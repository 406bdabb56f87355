"""``slurmlite simulate``: the table, --json, the CSV files, the plot, and every refusal."""

from __future__ import annotations

import csv
import json
import os

import pytest
from click.testing import CliRunner

from cli.slurmlite import main
from slurmlite.scheduler.replay_metrics import BATSIM_COLUMNS
from tests.sim.traces import swf_text

# The replay module's worked example on 4 CPUs (job, submit, run, procs, requested):
# EASY starts 1 at 0, 3 at 20 (backfilled), 2 at 100, 4 at 200 -> waits 0, 90, 0, 170
ROWS = [(1, 0, 100, 3, 100), (2, 10, 100, 4, 100), (3, 20, 50, 1, 50), (4, 30, 50, 1, 200)]


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "tiny.swf"
    path.write_text(swf_text(4, ROWS))
    return path


def simulate(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, ["simulate", *map(str, args)])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.stdout, r.stderr


def test_the_table_has_the_figures_and_the_settings(trace):
    code, out, err = simulate(trace, "--policy", "easy")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "trace tiny.swf: 4 CPUs (MaxProcs), estimates user"
    row = lines[3].split()
    # mean wait (0 + 90 + 0 + 170) / 4 = 65; slowdowns 1, 190/100, 1, 220/50 -> 8.3 / 4;
    # makespan: last end 250 (4: 200 + 50) - first submit 0; utilization
    # (100*3 + 100*4 + 50*1 + 50*1) / (4 * 250) = 0.8
    assert row[:6] == ["easy", "4", "65.0000", "2.0750", "0.8000", "250"]
    assert "SchedulerType=sched/backfill" in out and "bf_job_part_count_reserve=1" in out


def test_compare_gives_one_row_per_policy(trace):
    code, out, _ = simulate(trace, "--compare", "fcfs", "easy", "slurm")
    assert code == 0
    rows = [line.split() for line in out.splitlines()[3:6]]
    assert [r[0] for r in rows] == ["fcfs", "easy", "slurm"]
    # fcfs: 3 waits behind 2 until 200 and 4 until 200 -> (0 + 90 + 180 + 170) / 4 = 110
    assert rows[0][2] == "110.0000"
    assert "mean wait per user" in out  # slurm lists users


def test_json(trace):
    code, out, _ = simulate(trace, "--compare", "fcfs,slurm", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["procs"] == 4 and data["estimates"] == "user"
    fcfs, slurm = data["policies"]
    assert (fcfs["policy"], fcfs["jobs"], fcfs["mean_wait"]) == ("fcfs", 4, 110.0)
    assert fcfs["makespan"] == 250 and fcfs["settings"][0] == "SchedulerType=sched/builtin"
    assert slurm["per_user"] == [{"user": 1, "jobs": 4, "mean_wait": slurm["mean_wait"]}]


def test_csv_files(trace, tmp_path):
    starts, jobs = tmp_path / "starts.csv", tmp_path / "jobs.csv"
    code, _, _ = simulate(trace, "--starts-csv", starts, "--jobs-csv", jobs)
    assert code == 0
    assert starts.read_text() == "job_id,start\n1,0\n3,20\n2,100\n4,200\n"
    rows = list(csv.DictReader(jobs.open()))
    assert tuple(rows[0]) == BATSIM_COLUMNS
    by_id = {r["job_id"]: r for r in rows}
    assert by_id["3"]["allocated_resources"] == "3" and by_id["2"]["allocated_resources"] == "0-3"
    assert by_id["4"]["waiting_time"] == "170" and by_id["4"]["requested_time"] == "200"
    assert by_id["2"]["stretch"] == repr(190 / 100)


def test_compare_writes_a_file_per_policy(trace, tmp_path):
    starts = tmp_path / "s.csv"
    assert simulate(trace, "--compare", "fcfs", "easy", "--starts-csv", starts)[0] == 0
    assert (tmp_path / "s-fcfs.csv").read_text().splitlines()[1:] == ["1,0", "2,100", "3,200",
                                                                        "4,200"]  # fmt: skip
    assert (tmp_path / "s-easy.csv").exists() and not starts.exists()


def test_plot(trace, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "p.png"
    code, _, err = simulate(trace, "--compare", "fcfs", "easy", "--plot", out, "--window", "0:5m")
    assert code == 0 and "plot written" in err
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib(trace, tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    code, _, err = simulate(trace, "--plot", tmp_path / "p.svg")
    assert code == 1
    assert err.strip() == "slurmlite: error: --plot needs matplotlib: pip install 'slurmlite[plot]'"


def test_slurm_policy_reads_a_conf(trace, tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("SchedulerType=sched/builtin\nPriorityType=priority/basic\n")
    code, out, _ = simulate(trace, "--policy", "slurm", "--conf", conf, "--json")
    assert code == 0
    run = json.loads(out)["policies"][0]
    assert run["mean_wait"] == 110.0  # no backfill, FIFO: the fcfs schedule
    assert "no backfill" in run["settings"]


@pytest.mark.parametrize(
    "args, words",
    [
        (["nope.swf"], "cannot read"),
        (["{bad}"], "line 2: 3 fields, SWF has 18"),
        (["{t}", "--compare", "fcfs", "lottery"], "--compare: unknown policy 'lottery'"),
        (["{t}", "easy"], "unexpected argument 'easy'"),
        (["{t}", "--policy", "slurm", "--order", "sjf"], "--order is for fcfs and easy"),
        (["{t}", "--conf", "{conf}"], "--conf is for --policy slurm"),
        (["{t}", "--window", "2d"], "give START:END"),
        (["{t}", "--window", "3d:2d"], "the end must come after the start"),
        (["{t}", "--window", "x:2d"], "'x' is not a time"),
        (["{t}", "--plot", "p.pdf"], "must end in .png or .svg"),
        (["{t}", "--policy", "slurm", "--conf", "{badconf}"], "badconf"),
    ],
)
def test_refusals_are_one_error_line(trace, tmp_path, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.swf").write_text("; MaxProcs: 4\n1 2 3\n")
    (tmp_path / "c.conf").write_text("PriorityType=priority/basic\n")
    (tmp_path / "badconf").write_text("PriorityWeightAge=lots\n")
    subst = {"{t}": str(trace), "{bad}": "bad.swf", "{conf}": "c.conf", "{badconf}": "badconf"}
    code, out, err = simulate(*[subst.get(a, a) for a in args])
    assert code == 1 and out == ""
    assert err.startswith("slurmlite: error: ") and words in err and err.count("\n") == 1


def test_evalys_reads_the_jobs_csv(trace, tmp_path):
    """The real evalys (Batsim's analysis library) loads --jobs-csv as it loads Batsim's."""
    try:
        from evalys.jobset import JobSet
    except ImportError:
        if os.environ.get("SLURMLITE_REQUIRE_CLIENTS") == "1":
            pytest.fail("evalys not installed; SLURMLITE_REQUIRE_CLIENTS=1 makes this an error")
        pytest.skip("evalys not installed (pip install evalys)")
    jobs = tmp_path / "jobs.csv"
    assert simulate(trace, "--jobs-csv", jobs)[0] == 0
    js = JobSet.from_csv(str(jobs))
    assert js.MaxProcs == 4  # from the allocated CPU ranges: 0-3
    df = js.df.set_index(js.df["jobID"].astype(int))
    assert sorted(df.index) == [1, 2, 3, 4]
    assert df.loc[4, "waiting_time"] == 170 and df.loc[2, "starting_time"] == 100
    # its load curve never goes above the machine: no CPU given twice
    assert js.utilisation["load"].max() == 4


def test_a_progress_bar_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    from cli.slurmlite_simulate_out import Progress
    from slurmlite.scheduler.replay import Replay
    from slurmlite.scheduler.replay_setup import setup_for
    from slurmlite.scheduler.swf import TraceStream

    path = tmp_path / "t.swf"
    path.write_text(swf_text(4, [(i, i, 5, 1, 5) for i in range(1, 41)]))
    for tty in (False, True):
        monkeypatch.setattr("sys.stderr.isatty", lambda tty=tty: tty)
        stream = TraceStream(path, "user")
        bar = Progress(stream, "easy", every=10)
        Replay(4, setup_for("easy", 4), bar if bar.on else None).run(stream.jobs())
        bar.done()
        err = capsys.readouterr().err
        assert ("[##" in err and "40 jobs" in err) == tty


def test_slurmlite_does_not_import_the_replay_until_simulate_runs():
    """Every ``slurmlite`` command (node-run in every task of a workload) pays for what
    cli.slurmlite imports: the replay and the scheduler come only with ``simulate``."""
    import subprocess
    import sys

    probe = "import sys, cli.slurmlite; print(sorted(m for m in sys.modules if 'scheduler' in m))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=str(__import__("pathlib").Path(__file__).parents[2]))  # fmt: skip
    assert out.stdout.strip() == "[]"
