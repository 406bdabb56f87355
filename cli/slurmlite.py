"""``slurmlite``: what Slurm lacks — a local cluster in one command, key management.

    slurmlite cluster up --dir DIR [--nodelist 'node[1-2]'] [--cpus-per-node N]
                         [--gpus-per-node N] [--gpu-type NAME] [--mem-per-node MB]
                         [--features LIST] [--port P|0] [--real-gpus] [--fifo]
    slurmlite cluster down --dir DIR
    slurmlite cluster status --dir DIR
    slurmlite keygen FILE
    slurmlite version [-f slurm.conf]  (also --version)       (cli.slurmlite_version)
    slurmlite keys node NAMES [--dir DIR] [--key-file FILE]   (cli.slurmlite_keys)
    slurmlite explain JOBID [--json]                          (cli.slurmlite_explain)
    slurmlite check [--repair]                                (cli.slurmlite_check)
    slurmlite run --file F [--watch] [--override K=V] [--dry-run] (cli.slurmlite_run)
    slurmlite list runs | get run ID | logs ID | cancel ID    (cli.slurmlite_runs)
    slurmlite secret set|list|delete                          (cli.slurmlite_runs)
    slurmlite simulate TRACE.swf [--policy P] [--compare P ...] (cli.slurmlite_simulate)
    slurmlite report [--start T] [--end T] [--by user|account] [--json] (cli.slurmlite_report)
    slurmlite ui                                              (cli.slurmlite_ui)

Examples::

    slurmlite cluster up --dir /tmp/lab --gpus-per-node 4
    source /tmp/lab/env && sbatch --gres=gpu:2 --wrap 'echo $CUDA_VISIBLE_DEVICES'
    slurmlite cluster down --dir /tmp/lab
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cli.slurmlite_archive import archive
from cli.slurmlite_check import check
from cli.slurmlite_explain import explain
from cli.slurmlite_keys import keys
from cli.slurmlite_report import report
from cli.slurmlite_run import run
from cli.slurmlite_runs import cancel, get_group, list_group, logs, secret
from cli.slurmlite_simulate import simulate


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from cli.slurmlite_version import print_versions

        print_versions()
        ctx.exit(0)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=_print_version,
    help="Show versions (as 'slurmlite version') and exit.",
)
def main() -> None:
    """slurmlite: a miniature, Slurm-compatible workload manager."""


@main.command("version")
@click.option("-f", "conf_file", default=None, help="slurm.conf to read (default: $SLURM_CONF).")
def version_command(conf_file: str | None) -> None:
    """slurmlite's version, the Slurm dialect, the store schema (expected, and the
    controller's store), the Python version."""
    from cli.slurmlite_version import print_versions

    print_versions(conf_file)


@main.group()
def cluster() -> None:
    """Start, stop and inspect a local cluster (controller + agents on loopback)."""


@cluster.command("up")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False, path_type=Path))
@click.option("--nodelist", default="node[1-2]", show_default=True, help="Node names (hostlist).")
@click.option("--cpus-per-node", default=4, show_default=True, type=click.IntRange(1))
@click.option("--gpus-per-node", default=0, show_default=True, type=click.IntRange(0))
@click.option("--gpu-type", default=None, help="GPU model name shown in Gres, e.g. a100.")
@click.option(
    "--mem-per-node", default=8000, show_default=True, type=click.IntRange(1), help="MiB."
)
@click.option("--features", default="", help="Comma list of node features.")
@click.option(
    "--port",
    default=0,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Controller TCP port; 0 picks a free one.",
)
@click.option(
    "--real-gpus", is_flag=True, help="Use the machine's GPUs through NVML instead of fake ones."
)
@click.option("--timeout", default=60.0, show_default=True, help="Seconds to wait for the nodes.")
@click.option(
    "--fifo",
    is_flag=True,
    help="Every priority weight 0: jobs start in submission order "
    "(default: fair-share first, then age, job size small).",
)
def cluster_up(
    directory: Path,
    nodelist: str,
    cpus_per_node: int,
    gpus_per_node: int,
    gpu_type: str | None,
    mem_per_node: int,
    features: str,
    port: int,
    real_gpus: bool,
    timeout: float,
    fifo: bool,
) -> None:
    """Write DIR/slurm.conf, start slurmctld and one slurmd per node, wait until IDLE."""
    from cli.localcluster import ClusterError, ClusterSpec, up

    spec = ClusterSpec(
        directory=directory,
        nodelist=nodelist,
        cpus_per_node=cpus_per_node,
        gpus_per_node=gpus_per_node,
        gpu_type=gpu_type,
        mem_per_node=mem_per_node,
        features=features,
        port=port,
        real_gpus=real_gpus,
        fifo=fifo,
    )
    try:
        click.echo(up(spec, timeout))
    except (ClusterError, OSError) as e:
        click.echo(f"slurmlite: error: {e}", err=True)
        sys.exit(1)


@cluster.command("down")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False, path_type=Path))
def cluster_down(directory: Path) -> None:
    """Cancel the cluster's jobs and stop exactly its daemons (by PID file)."""
    from cli.localcluster import down

    for line in down(directory):
        click.echo(f"stopped {line}")


@cluster.command("status")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False, path_type=Path))
def cluster_status(directory: Path) -> None:
    """Show the cluster's daemons and whether they run."""
    from cli.localcluster import status

    rows = status(directory)
    for name, pid, alive in rows:
        click.echo(f"{name:20} {pid if pid else '-':>8} {'running' if alive else 'stopped'}")
    if not any(alive for _, _, alive in rows):
        sys.exit(1)


@main.command("keygen")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def keygen(path: Path) -> None:
    """Create a new cluster key file (mode 0600)."""
    from slurmlite.credential import generate_key_file

    try:
        generate_key_file(path)
    except FileExistsError:
        click.echo(f"slurmlite: error: {path} exists; remove it first to rotate the key", err=True)
        sys.exit(1)
    click.echo(f"wrote {path}")


main.add_command(keys)
main.add_command(explain)
main.add_command(check)
main.add_command(archive)
main.add_command(run)
main.add_command(list_group)
main.add_command(get_group)
main.add_command(logs)
main.add_command(cancel)
main.add_command(secret)
main.add_command(simulate)
main.add_command(report)


@main.command("ui")
@click.option("-f", "conf_file", default=None, help="slurm.conf to read (default: $SLURM_CONF).")
def ui_command(conf_file: str | None) -> None:
    """Print a one-time login link to the web dashboard."""
    from cli.slurmlite_ui import ui

    ui(conf_file)


@main.command("node-run", hidden=True)
def node_run_command() -> None:
    """A workload run's command on one node (its batch script's srun starts it)."""
    from cli.slurmlite_noderun import node_run

    node_run()


# One line each in `slurmlite --help` (click would cut longer first sentences with "...").
SHORT_HELP = {
    "archive": "Read the job archives that PurgeJobAfter writes.",
    "cluster": "Start, stop and inspect a local cluster.",
    "explain": "Explain why a job is pending, or why it ended.",
    "logs": "Print the output of a run's attempt or of a batch job.",
    "report": "Jobs, GPU/CPU-hours, waits and success rate per user or account.",
    "run": "Run the workload of a YAML file as a batch job.",
    "secret": "Your secrets, handed to your runs as variables.",
    "simulate": "Replay a workload trace through the scheduler.",
    "version": "Show slurmlite's, Slurm's, the store's and Python's versions.",
}
for _name, _text in SHORT_HELP.items():
    if _name in main.commands:
        main.commands[_name].short_help = _text
cluster.commands["up"].short_help = "Start a local cluster in DIR; wait until its nodes are IDLE."
cluster.commands["down"].short_help = "Cancel the cluster's jobs and stop its daemons."
secret.commands["set"].short_help = "Set NAME to the value read from standard input."


if __name__ == "__main__":
    main()
