"""``slurmlite simulate``: replay a workload trace through the scheduling policy.

    slurmlite simulate TRACE.swf[.gz] [--policy fcfs|easy|slurm]
        [--order fcfs|sjf|ljf|smallest|largest] [--estimates user|exact|nokill]
        [--conf slurm.conf] [--procs N] [--starts-csv FILE] [--jobs-csv FILE]
        [--json] [--plot FILE.png|.svg] [--window START:END] [--compare POLICY ...]

The replay itself is ``slurmlite.scheduler.replay`` (the production pass on
a simulated clock); this module reads the options, runs one replay per
policy, and prints the figures (``replay_metrics``), the settings each policy
ran under, and for ``slurm`` the mean wait of the busiest users.  Files:
``--starts-csv`` (``job_id,start``), ``--jobs-csv`` (Batsim/evalys layout),
``--plot`` (``slurmlite.simplot``); with several policies each file name gets
the policy's name before its suffix (``starts-easy.csv``).  Example::

    $ slurmlite simulate lublin_256.swf.gz --estimates exact --compare fcfs easy
    trace lublin_256.swf.gz: 10,000 jobs on 256 CPUs (MaxNodes), estimates exact
    ...
    policy  jobs    mean wait (s)   mean bsld   utilization  makespan (s)  replay
    fcfs    10000   2388443.7601   66502.4755      0.6549      12482549    0.5 s
    easy    10000     97155.9945     590.0538      0.9363       8730698    5.0 s
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

TYPE_CHECKING = False
if TYPE_CHECKING:  # the replay is imported when the command runs: `slurmlite` starts fast
    from cli.slurmlite_simulate_out import PlotSink

POLICY_NAMES = ("fcfs", "easy", "slurm")
ORDER_NAMES = ("fcfs", "sjf", "ljf", "smallest", "largest")


def _fail(message: str) -> None:
    click.echo(f"slurmlite: error: {message}", err=True)
    sys.exit(1)


def _named(path: str, policy: str, several: bool) -> Path:
    p = Path(path)
    return p.with_name(f"{p.stem}-{policy}{p.suffix}") if several else p


@click.command("simulate")
@click.argument("trace", type=click.Path(dir_okay=False))
@click.argument("more", nargs=-1, metavar="")
@click.option(
    "--policy",
    type=click.Choice(POLICY_NAMES),
    default="easy",
    show_default=True,
    help="fcfs, easy (one reservation) or slurm (multifactor, fair-share, backfill).",
)
@click.option(
    "--order",
    type=click.Choice(ORDER_NAMES),
    default="fcfs",
    show_default=True,
    help="Queue order of fcfs and easy (a priority plugin: priority/sjf, ...).",
)
@click.option("--estimates", type=click.Choice(("user", "exact", "nokill")), default="user",
              show_default=True, help="user: requested time, killed at it; exact: run time; "
              "nokill: requested time, never killed.")  # fmt: skip
@click.option(
    "--conf",
    "conf",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="slurm.conf of --policy slurm (priority weights, decay, backfill).",
)
@click.option(
    "--procs",
    type=click.IntRange(1),
    default=None,
    help="Machine size (default: the trace's MaxProcs, else MaxNodes).",
)
@click.option(
    "--starts-csv",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write job_id,start of every job.",
)
@click.option(
    "--jobs-csv",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write one row per job in Batsim's _jobs.csv layout (evalys reads it).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option(
    "--plot",
    type=click.Path(dir_okay=False),
    default=None,
    help="Draw a Gantt chart, queue and utilization, slowdowns (.png or .svg).",
)
@click.option(
    "--window",
    default=None,
    metavar="START:END",
    help="Part of the trace the plot shows, from its first submit: 2d:3d, 0:36h.",
)
@click.option(
    "--compare",
    multiple=True,
    metavar="POLICY ...",
    help="Replay several policies on the same trace, one table (instead of --policy).",
)
def simulate(trace: str, more: tuple[str, ...], policy: str, order: str, estimates: str,
             conf: str | None, procs: int | None, starts_csv: str | None, jobs_csv: str | None,
             as_json: bool, plot: str | None, window: str | None,
             compare: tuple[str, ...]) -> None:  # fmt: skip
    """Replay TRACE (SWF, .gz too) through the scheduler and print wait, slowdown,
    utilization and makespan.

    \b
    Examples:
      slurmlite simulate lublin_256.swf.gz --estimates exact --compare fcfs easy
      slurmlite simulate LANL-CM5-1994-4.1-cln.swf.gz --policy slurm --json
      slurmlite simulate t.swf --policy easy --plot t.png --window 2d:3d
    """
    from cli.slurmlite_simulate_out import PlotSink, parse_window, table
    from slurmlite.config import ConfigError, load_config
    from slurmlite.scheduler.replay_setup import SetupError, setup_for
    from slurmlite.scheduler.swf import TraceError, TraceStream

    policies = _policies(policy, compare, more)
    span = None
    if window is not None:
        try:
            span = parse_window(window)
        except ValueError as e:
            _fail(str(e))
    if plot is not None and Path(plot).suffix.lower() not in (".png", ".svg"):
        _fail(f"--plot {plot}: the file must end in .png or .svg")
    config = None
    if conf is not None:
        if "slurm" not in policies:
            _fail("--conf is for --policy slurm")
        try:
            config = load_config(conf)
        except (ConfigError, OSError) as e:
            _fail(str(e))
    runs, plotters = [], []
    several = len(policies) > 1
    for name in policies:
        try:
            stream = TraceStream(trace, estimates, procs)
            setup = setup_for(name, stream.procs, order=order,
                              config=config if name == "slurm" else None)  # fmt: skip
        except (TraceError, SetupError) as e:
            _fail(str(e))
        if not runs:
            first = stream
        plotter = PlotSink(name, span) if plot else None
        try:
            result = _run(stream, setup, name, several, starts_csv, jobs_csv, plotter)
        except TraceError as e:
            _fail(str(e))
        except OSError as e:
            _fail(f"{e.filename}: {e.strerror}")
        runs.append(result)
        if plotter is not None:
            plotters.append(plotter)
    if as_json:
        click.echo(json.dumps({"trace": trace, "procs": runs[0]["procs"],
                               "estimates": estimates, "policies": runs}, indent=2))  # fmt: skip
    else:
        _header(trace, first, estimates)
        for line in table(runs):
            click.echo(line)
    if plot is not None:
        _draw(plot, plotters, runs[0]["procs"], Path(trace).name)


def _policies(policy: str, compare: tuple[str, ...], more: tuple[str, ...]) -> list[str]:
    if more and not compare:
        _fail(f"unexpected argument {more[0]!r} (several policies: --compare fcfs easy)")
    if not compare:
        return [policy]
    names: list[str] = []
    for word in [*compare, *more]:
        for name in word.split(","):
            if name not in POLICY_NAMES:
                _fail(f"--compare: unknown policy {name!r} (use {', '.join(POLICY_NAMES)})")
            if name not in names:
                names.append(name)
    return names


def _header(trace: str, stream: object, estimates: str) -> None:
    header = getattr(stream, "header", {})
    source = next((k for k in ("MaxProcs", "MaxNodes") if k in header), "--procs")
    from slurmlite.scheduler.swf import machine_size

    if getattr(stream, "procs", None) != machine_size(header):
        source = "--procs"
    click.echo(
        f"trace {Path(trace).name}: {getattr(stream, 'procs', '?')} CPUs ({source}), "
        f"estimates {estimates}"
    )


def _run(stream, setup, name, several, starts_csv, jobs_csv, plotter) -> dict:  # type: ignore[no-untyped-def]
    from cli.slurmlite_simulate_out import Progress
    from slurmlite.scheduler.replay import Replay
    from slurmlite.scheduler.replay_metrics import BatsimCsv, Fanout, Metrics, StartsCsv

    metrics = Metrics(stream.procs)
    sinks: list[object] = [metrics]
    files = []
    try:
        if starts_csv:
            files.append(_named(starts_csv, name, several).open("w"))
            sinks.append(StartsCsv(files[-1]))
        if jobs_csv:
            files.append(_named(jobs_csv, name, several).open("w"))
            sinks.append(BatsimCsv(files[-1], Path(stream.path).name.split(".")[0]))
        if plotter is not None:
            sinks.append(plotter)
        progress = Progress(stream, name)
        if progress.on:
            sinks.append(progress)
        replay = Replay(stream.procs, setup, Fanout(sinks), track=plotter is not None)  # type: ignore[arg-type]
        began = time.perf_counter()
        replay.run(stream.jobs())
        seconds = time.perf_counter() - began
        progress.done()
    finally:
        for f in files:
            f.close()
    out = {"policy": name, "settings": list(setup.settings), "procs": stream.procs}
    out.update(metrics.summary())
    out["replay_seconds"] = round(seconds, 3)
    out["jobs_per_second"] = round(metrics.jobs / seconds, 1) if seconds > 0 else None
    out["passes"] = replay.passes
    if name == "slurm":
        out["per_user"] = [{"user": u, "jobs": n, "mean_wait": w} for u, n, w in metrics.per_user()]
    return out


def _draw(path: str, plotters: list[PlotSink], procs: int, title: str) -> None:
    from slurmlite.simplot import PlotUnavailable, write_plot

    try:
        runs = [p.run() for p in plotters]
        write_plot(path, runs, procs, window=plotters[0].window, title=title)
    except PlotUnavailable as e:
        _fail(str(e))
    except (OSError, ValueError) as e:
        _fail(f"--plot {path}: {e}")
    click.echo(f"plot written to {path}", err=True)
