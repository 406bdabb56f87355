"""Fencing: obey the newest controller of the store, never an older one.

Every order the controller signs carries two claims from the store's lease
(``controller.store.lease``): ``epoch``, raised by one each time a
controller takes the store, and ``store``, the store's id.  The agent keeps
the highest epoch it has obeyed, per store, in ``<spool>/epoch`` (one line
``STORE EPOCH``, replaced whole and fsynced when it rises, so a restarted
agent — or a rebooted node — still knows it), and refuses an order from an
older epoch of the same store with HTTP 409::

    order from controller epoch 3, agent has seen epoch 4

So a controller that lost the store to a newer one (its PostgreSQL session
was cut while it lived on, and another took the lease) cannot move a job on
this node any more; the controller stops when it is told so
(``controller.nodes.agent_client``).  The check runs after the credential
has proved the controller signed the order, so only a genuine order can
raise the epoch.

Decisions:

* An order **without** an ``epoch`` claim (a controller older than fencing)
  is refused (403): an agent that took it would obey a controller nobody can
  fence.  Upgrade controller and agents together.
* An order from **another store** (a new ``store`` id: the state was wiped,
  or the agent was moved to another cluster) is obeyed, and its epoch
  becomes the one to beat: epochs count only within one store.
* Epoch 0 is what a controller without a lease signs (tests that run one in
  process); an agent that has seen nothing accepts it.

Issue 11's agent-side checks honour this same token; nothing else keeps one.

Example: seen ``s1 4``.  Order (s1, 3) -> 409; (s1, 4) -> accepted; (s1, 5)
-> accepted, the file becomes ``s1 5``; (s2, 1) -> accepted, ``s2 1``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

__all__ = ["EpochFence", "FenceError"]

STORE_ID = re.compile(r"[0-9A-Za-z_]{0,64}")  # a uuid4 hex; "" from a controller without a lease


class FenceError(Exception):
    """An order that must not be obeyed; ``stale``: from an older epoch (HTTP 409), else 403.

    ``agent.orders`` turns it into ``OrderRefused`` / ``StaleOrder``.
    """

    def __init__(self, message: str, stale: bool = False) -> None:
        super().__init__(message)
        self.stale = stale


class EpochFence:
    """The highest controller epoch obeyed, per store, persisted in ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.store = ""
        self.epoch = -1  # nothing seen yet
        try:
            fields = path.read_text().split()
            if len(fields) == 2:
                store, self.epoch = fields[0], int(fields[1])
                self.store = "" if store == "-" else store
        except (OSError, ValueError):
            pass  # none yet, or torn (it is replaced whole, so it never is)

    def check(self, claims: dict[str, Any]) -> tuple[str, int]:
        """The order's (store, epoch); ``FenceError`` if it must not be obeyed."""
        epoch, store = claims.get("epoch"), claims.get("store", "")
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
            raise FenceError(
                "order carries no controller epoch (a controller older than this agent)"
            )
        if not isinstance(store, str) or not STORE_ID.fullmatch(store):
            raise FenceError("order carries a malformed store id")
        if store == self.store and epoch < self.epoch:
            raise FenceError(
                f"order from controller epoch {epoch}, agent has seen epoch {self.epoch}",
                stale=True,
            )
        return store, epoch

    def obeyed(self, store: str, epoch: int) -> None:
        """Remember an accepted order's epoch when it is newer (or of another store)."""
        if store == self.store and epoch <= self.epoch:
            return
        tmp = self.path.with_name(self.path.name + ".new")
        with open(tmp, "w") as f:
            f.write(f"{store or '-'} {epoch}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self.store, self.epoch = store, epoch
