"""``slurmctld``: the controller's command line.

    slurmctld [-D] [-f FILE] [-v]

Reads the configuration, refuses to start without a private cluster key,
opens the job store, takes the store's lease (``controller.store.lease``:
one controller per store; a second one exits here, before detaching, with
``slurmctld: fatal: the job store ... is in use by another slurmctld: host
... pid ... port ... since ...``), and serves the same FastAPI app on two listeners:

* TCP ``SlurmctldHost:SlurmctldPort`` — node agents (signed requests);
* the Unix socket ``SlurmliteSocket`` (mode 0666; the kernel tells us who
  connects) — users' commands with ``AuthType=auth/local``.

Without ``-D`` it detaches like Slurm's slurmctld and logs to
``SlurmctldLogFile``; the PID file is ``SlurmctldPidFile``.

uvicorn serves with httptools' HTTP parser (``controller.auth.peercred_http``)
on uvloop's event loop when they are installed, asyncio's otherwise: on a
burst of submissions the server's per-request overhead drops from ~145 us
(h11 + asyncio) to ~65 us.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Coroutine
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from slurmlite.config import Config, ConfigError, load_config
from slurmlite.credential import CredentialError, load_key
from slurmlite.daemonize import detach, remove_pid, write_pid

if TYPE_CHECKING:
    from controller.store.lease import Lease


def tcp_socket(cfg: Config) -> socket.socket:
    host = cfg.control_addr or cfg.control_host or "127.0.0.1"
    addr = socket.getaddrinfo(host, cfg.slurmctld_port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(addr[0], socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(addr[4])
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def unix_socket(path: str) -> socket.socket:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.exists() or p.is_symlink():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(p))
        except OSError:
            p.unlink()  # stale socket of a dead controller
        else:
            raise OSError(f"another slurmctld is already listening on {p}")
        finally:
            probe.close()
    # users must be able to reach the socket: let everyone traverse (not list) its directory
    os.chmod(p.parent, os.stat(p.parent).st_mode | 0o011)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(p))
    os.chmod(p, 0o666)  # anyone may connect; SO_PEERCRED says who they are
    sock.listen(1024)
    return sock


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-D", "foreground", is_flag=True, help="Run in the foreground (do not detach).")
@click.option("-f", "conf_file", default=None, help="slurm.conf to read (default: $SLURM_CONF).")
@click.option("-v", "verbose", count=True, help="More logging.")
def main(foreground: bool, conf_file: str | None, verbose: int) -> None:
    """slurmlite controller (slurmctld)."""
    try:
        cfg = load_config(conf_file)
        key = load_key(cfg.key_file)
        from controller.auth.authenticate import Authenticator

        Authenticator(cfg).check()  # an unusable JWT key stops us before detaching
    except (ConfigError, CredentialError, OSError) as e:
        click.echo(f"slurmctld: error: {e}", err=True)
        sys.exit(1)
    for w in cfg.warnings:
        click.echo(f"slurmctld: warning: {w}", err=True)
    os.umask(0o077)  # the store holds scripts and environments: owner only
    from controller.store.lease import LeaseHeld

    try:
        # open (and migrate) the store now, so a bad URL is reported here, not in a log;
        # then take its lease, before any socket, job or node is touched
        lease = open_store(cfg)
    except LeaseHeld as e:
        click.echo(f"slurmctld: fatal: {e}", err=True)
        sys.exit(1)
    except Exception as e:  # any driver error: say what and where, in one line
        click.echo(f"slurmctld: error: cannot open the job store {cfg.store_url}: {e}", err=True)
        sys.exit(1)
    try:
        sockets = [tcp_socket(cfg), unix_socket(cfg.socket_path)]
    except OSError as e:
        lease.release()
        click.echo(f"slurmctld: error: cannot listen: {e}", err=True)
        sys.exit(1)
    if not foreground:
        detach(cfg.slurmctld_logfile)  # the lease's lock and connection pass to the child
        lease.holder = replace(lease.holder, pid=os.getpid())
        lease.rewrite_pid()
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("alembic").setLevel(logging.WARNING)
    lease.announce()  # event=lease_taken / lease_takeover, in the log
    write_pid(cfg.slurmctld_pidfile)
    try:
        run_loop(serve(cfg, key, sockets, lease))
    finally:
        remove_pid(cfg.slurmctld_pidfile)
        try:
            Path(cfg.socket_path).unlink()
        except OSError:
            pass
        lease.release()  # last: once released, the next controller may bind this socket path


def open_store(cfg: Config) -> Lease:
    """Open and migrate the store, then take its lease (``LeaseHeld``: another holds it)."""
    from controller.store.db import Database
    from controller.store.lease import Holder, take_lease

    db = Database(cfg.store_url)
    me = Holder(
        host=socket.gethostname(),
        pid=os.getpid(),
        port=cfg.slurmctld_port,
        socket=cfg.socket_path,
        since=time.time(),
    )
    try:
        return take_lease(db.engine, cfg.store_url, me)
    finally:
        db.engine.dispose()  # no pooled connection crosses detach's fork (the lease's own does)


def run_loop(coro: Coroutine[Any, Any, None]) -> None:
    """Run the server on uvloop's event loop when it is installed (faster), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(coro)
    else:
        uvloop.run(coro)


async def serve(cfg: Config, key: bytes, sockets: list[socket.socket], lease: Lease) -> None:
    import uvicorn

    from controller.api.app import create_app
    from controller.auth.peercred_http import http_protocol
    from controller.context import Controller
    from controller.store.lease import watch

    ctl = Controller(cfg, key, lease=lease)
    from controller.api.fastsubmit import SubmitShortcut

    app = create_app(ctl)
    config = uvicorn.Config(
        SubmitShortcut(app),
        http=http_protocol(),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_keep_alive=30,
        # no reverse proxy stands before slurmctld: X-Forwarded-* must not be trusted,
        # and skipping that middleware saves every request a few microseconds
        proxy_headers=False,
    )
    server = uvicorn.Server(config)
    # uvicorn re-raises TERM/INT after a graceful stop; keep that harmless.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    logging.getLogger("slurmctld").info(
        "event=start cluster=%s port=%s socket=%s store=%s epoch=%s",
        cfg.cluster_name,
        cfg.slurmctld_port,
        cfg.socket_path,
        cfg.store_url,
        lease.epoch,
    )
    watchdog = asyncio.create_task(watch(lease))
    try:
        await server.serve(sockets=sockets)
    finally:
        watchdog.cancel()


if __name__ == "__main__":
    main()
