"""``slurmd``: the node agent's command line.

    slurmd [-D] [-N NAME] [-f FILE | --conf-server HOST[:PORT]] [--gpus N] [--fake-gpus]
           [--gpu-devices 0-1]

Without ``-D`` it detaches like Slurm's slurmd and logs to ``SlurmdLogFile``.
Several agents may run on one host when their nodes have distinct ``Port=``.
With ``--conf-server`` the host needs no slurm.conf: the agent fetches the
controller's and runs from a cached copy (``agent.configless``).

Its one secret is its node key: read from ``SlurmliteNodeKeyFile`` (``%n``
= the node name; written by ``slurmlite keys node``), or, where that is not
set (a single-host cluster), derived from ``SlurmliteKeyFile`` at start and
the cluster key dropped.  Either file must be mode 0600.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys
from pathlib import Path

import click

from slurmlite.config import Config, ConfigError, load_config
from slurmlite.credential import CredentialError, load_key, load_node_key, node_key
from slurmlite.daemonize import detach, remove_pid, write_pid


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-D", "foreground", is_flag=True, help="Run in the foreground (do not detach).")
@click.option("-N", "node_name", default=None, help="Node name (default: this host's short name).")
@click.option("-f", "conf_file", default=None, help="slurm.conf to read (default: $SLURM_CONF).")
@click.option(
    "--gpus", "gpus", type=int, default=None, help="Fake GPU count when no driver is present."
)
@click.option("--fake-gpus", is_flag=True, help="Never use NVML even if a driver is present.")
@click.option(
    "--gpu-devices",
    "gpu_devices",
    default=None,
    help="Only these real GPU indices (e.g. 2-3): split one machine's GPUs among local nodes.",
)
@click.option(
    "--conf-server",
    "conf_server",
    default=None,
    help="Configless: fetch slurm.conf from the controller at HOST[:PORT][,HOST2[:PORT2]].",
)
@click.option("-v", "verbose", count=True, help="More logging.")
def main(
    foreground: bool,
    node_name: str | None,
    conf_file: str | None,
    conf_server: str | None,
    gpus: int | None,
    fake_gpus: bool,
    gpu_devices: str | None,
    verbose: int,
) -> None:
    """slurmlite node agent (slurmd)."""
    from agent.gres import parse_device_list

    try:
        subset = parse_device_list(gpu_devices) if gpu_devices else None
    except ValueError as e:
        click.echo(f"slurmd: error: --gpu-devices: {e}", err=True)
        sys.exit(1)
    name = node_name or socket.gethostname().split(".")[0]
    try:
        cfg = _config(conf_file, conf_server, name)
    except (ConfigError, OSError) as e:
        click.echo(f"slurmd: error: {e}", err=True)
        sys.exit(1)
    try:
        nc = cfg.node(name)
    except KeyError:
        nc = None
    try:
        key, key_source = node_key_of(cfg, name)
    except CredentialError as e:
        click.echo(f"slurmd: error: {e}", err=True)
        sys.exit(1)
    log_file = cfg.expand_node_path(cfg.slurmd_logfile, name) if cfg.slurmd_logfile else None
    pid_file = cfg.expand_node_path(cfg.slurmd_pidfile, name) if cfg.slurmd_pidfile else None
    spool = Path(cfg.expand_node_path(cfg.slurmd_spool_dir, name))
    if not foreground:
        detach(log_file)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)
    write_pid(pid_file)
    logging.getLogger("slurmd").info("event=node_key node=%s source=%s", name, key_source)
    try:
        asyncio.run(_serve(cfg, name, nc, key, spool, gpus, fake_gpus, subset))
    finally:
        remove_pid(pid_file)


def _config(conf_file: str | None, conf_server: str | None, name: str) -> Config:
    """The configuration: ``-f`` / ``$SLURM_CONF``, or fetched from ``--conf-server``."""
    if conf_server is None:
        return load_config(conf_file)
    if conf_file:
        raise ConfigError("-f and --conf-server exclude each other")
    from agent.configless import FetchError, load

    try:
        return load(conf_server, name)
    except FetchError as e:
        raise ConfigError(f"--conf-server: {e}") from None


def node_key_of(cfg: Config, name: str) -> tuple[bytes, str]:
    """Node ``name``'s key and the file it came from; ``CredentialError`` if unusable."""
    if cfg.node_key_file:
        path = cfg.expand_node_path(cfg.node_key_file, name)
        return load_node_key(path, name), path
    return node_key(load_key(cfg.key_file), name), cfg.key_file + " (cluster key)"


async def _serve(cfg, name, nc, key, spool, gpus, fake_gpus, subset) -> None:  # type: ignore[no-untyped-def]
    import uvicorn

    from agent.app import create_app
    from agent.cutoff import watch_forever
    from agent.daemon import AgentState
    from agent.gres import discover
    from slurmlite.clock import monotonic_clock, system_clock
    from slurmlite.gresconf import auto_detect_for

    configured = gpus if gpus is not None else (nc.gpus if nc else 0)
    auto = auto_detect_for(cfg, name)
    devices, source = discover(
        auto, configured, nc.gpu_type if nc else None, real_gpus=not fake_gpus, subset=subset
    )
    spool.mkdir(parents=True, exist_ok=True)
    state = AgentState(
        cfg=cfg,
        name=name,
        node_key=key,
        spool=spool,
        gpus=devices,
        gpu_source=source,
        node_conf=nc,
        clock=system_clock,  # the real clocks: the only place the agent is given them
        timer=monotonic_clock,
    )
    host = nc.addr if nc else "127.0.0.1"
    port = nc.port if nc else cfg.slurmd_port
    config = uvicorn.Config(
        create_app(state),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        lifespan="off",
        # a job step's answer streams as long as the step runs: on stop, those still
        # open are cut after this long (their steps then end, agent.steptable)
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    # uvicorn catches TERM/INT while serving and re-raises them when done; the
    # no-op handlers make that re-raise harmless so our cleanup runs.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    watched, queued = state.adopt_spool()  # before registering: the registration lists them
    fence = watch_forever(state.contact, state.controller_host, cfg.slurmctld_port, state.fence)
    tasks = [
        asyncio.create_task(t)
        for t in (
            state.register_forever(),
            state.heartbeat_forever(),
            state.report_forever(),
            state.run_logs.prune_forever(float(cfg.run_log_keep)),
            fence,  # cut off from the controller: kill the runs (agent.cutoff)
            state.sampler.sample_forever(),  # usage of running jobs (agent.sampling)
            state.outside.watch_forever(),  # GPUs used outside the scheduler (agent.gpu_outside)
        )
    ]
    logging.getLogger("slurmd").info(
        "event=start node=%s addr=%s:%s gpus=%d source=%s adopted=%d completions=%d",
        name,
        host,
        port,
        len(devices),
        source,
        watched,
        queued,
    )
    try:
        await server.serve()
    finally:
        for t in tasks:
            t.cancel()
        await state.shutdown()


if __name__ == "__main__":
    main()
