"""Is the rendezvous port of a job already taken on this node?

slurmlite gives every job a ``MASTER_PORT`` (20000 + job id mod 20000, the
same on every node; ``slurmlite.jobenv.master_port``) so PyTorch's ``env://``
rendezvous needs no boilerplate.  A port chosen without asking the node may
be in use (another job's rendezvous, a service): then the job's rank 0 would
fail to listen with a bare "address already in use".  The agent of the job's
first node probes the port when it starts the batch script or a step's node
0, and warns in the job's own error output, naming the way out::

    slurmlite: warning: MASTER_PORT 20028 is already in use on n1: set MASTER_PORT yourself (export MASTER_PORT=...) before the rendezvous

The probe binds with ``SO_REUSEADDR``, as the rendezvous servers do, so only
a socket that *listens* on the port counts, not connections that have
closed and linger in TIME_WAIT.  The port is only checked when slurmlite
injected it (``SLURMLITE_INJECTED`` lists it): a port the user chose is the
user's business.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Mapping

from slurmlite.stalevars import INJECTED_VAR


def port_in_use(port: int, host: str = "") -> bool:
    """True when something listens on ``port`` (on ``host``; "": any address)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as e:
            return e.errno == errno.EADDRINUSE
    return False


def port_warning(environment: Mapping[str, str], node: str) -> str | None:
    """The warning line for a job whose injected ``MASTER_PORT`` is taken here, else None."""
    injected = environment.get(INJECTED_VAR, "").split(",")
    text = environment.get("MASTER_PORT", "")
    if "MASTER_PORT" not in injected or not text.isdigit() or not 0 < int(text) < 65536:
        return None
    if not port_in_use(int(text)):
        return None
    return (
        f"slurmlite: warning: MASTER_PORT {text} is already in use on {node}: set MASTER_PORT "
        "yourself (export MASTER_PORT=...) before the rendezvous"
    )
