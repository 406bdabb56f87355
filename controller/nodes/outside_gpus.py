"""The controller's record of GPUs used outside the scheduler, and their settle time.

Agents report, with each heartbeat, which of their GPUs run a process that
is no job's (``agent.gpu_outside``): ``{gpu index: reason}``.  This ledger
turns those reports into what the rest of the controller needs:

* ``blocked(node)``: the GPUs no job may get now -- those reported in use,
  and those whose outside use ended less than ``settle`` seconds ago
  (``SlurmliteGpuOutsideUse``, ``slurmlite.gpu_outside``).  The scheduler's
  snapshot counts them as held (``controller.sched.gather``), so a pending
  job that needs them waits with Reason=Resources; a job already running on
  such a GPU is never touched;
* ``reason(node)``: the node's ``Reason=`` text and its time (when the use
  was first reported), for ``scontrol show node`` and ``sinfo -R``.

Rules: a report lists the node's whole outside use, so a GPU it no longer
lists is *freed* at that report's time; listed again before it settled,
it is in use again (the settle time starts over at its next end).  A report
of ``None`` (the agent did not look) changes nothing.  Indices outside the
node's GPUs are ignored and reasons cut at ``REASON_MAX`` characters: a
report never makes the controller fail.  With ``ignore`` every report is
disregarded and nothing is blocked.

The ledger lives in memory and is saved to the store on each change (one
JSON value, the ``meta`` row ``outside_gpus``: ``dump``/``load``), so a
restarted controller keeps blocking a GPU, and keeps its settle time, until
the agent's next reports say otherwise.

Worked example (settle 60 s): at t=100 n1 reports ``{1: "gpu 1 in use ...:
pid 4242 (alice: python)"}`` -> blocked {1}, reason time 100; at t=130 it
reports ``{}`` -> freed at 130, still blocked; at t=190 (130 + 60) GPU 1 is
free for jobs again and the reason is gone.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from controller.store.db import Database
from controller.store.models import MetaRow
from slurmlite.gpu_outside import REASON_MAX, GpuOutsideUse
from slurmlite.protocol import NodeInfo
from slurmlite.timefmt import fmt_timestamp

__all__ = ["OutsideGpu", "OutsideGpus"]


@dataclass(frozen=True)
class OutsideGpu:
    """One GPU's outside use: why, since when, and when it ended (``None``: goes on)."""

    reason: str
    since: float
    freed: float | None = None

    def blocks(self, now: float, settle: float) -> bool:
        return self.freed is None or now < self.freed + settle


class OutsideGpus:
    """Per node, its GPUs in outside use or settling (see the module docstring)."""

    META_KEY = "outside_gpus"  # the store's meta row holding ``dump()``

    def __init__(self) -> None:
        # Heartbeats arrive on several threads, the scheduler reads on another: a
        # node's record is never changed once published, a report publishes a new
        # one (readers need no lock), and reports and saves take turns (``lock``)
        self.nodes: dict[str, dict[int, OutsideGpu]] = {}
        self.lock = threading.Lock()

    def dump(self) -> str:
        """The whole record as JSON text (what the store keeps)."""
        return json.dumps(
            {
                n: {str(g): [u.reason, u.since, u.freed] for g, u in h.items()}
                for n, h in self.nodes.items()
            }  # fmt: skip
        )

    def load(self, text: str | None) -> None:
        """Replace the record by a ``dump()``; unreadable text gives an empty record."""
        nodes: dict[str, dict[int, OutsideGpu]] = {}
        try:
            for node, held in json.loads(text or "{}").items():
                for gpu, (why, since, freed) in held.items():
                    nodes.setdefault(node, {})[int(gpu)] = OutsideGpu(why, since, freed)
        except (ValueError, TypeError, AttributeError):
            nodes = {}
        self.nodes = nodes

    def report(
        self,
        node: str,
        gpus: Mapping[int, str] | None,
        count: int,
        now: float,
        policy: GpuOutsideUse,
    ) -> bool:
        """Take one heartbeat's report for ``node`` (which has ``count`` GPUs); True if
        the record changed (the caller then stores it: ``save``)."""
        if gpus is None or not policy.enabled:
            return False
        with self.lock:
            before = self.nodes.get(node, {})
            held = dict(before)
            for gpu, why in gpus.items():
                if not 0 <= gpu < count:
                    continue
                old, why = held.get(gpu), why[:REASON_MAX]
                if old is None or old.freed is not None or old.reason != why:
                    since = now if old is None or old.freed is not None else old.since
                    held[gpu] = OutsideGpu(why, since)
            for gpu, use in held.items():
                if gpu not in gpus and use.freed is None:
                    held[gpu] = OutsideGpu(use.reason, use.since, now)
            held = {g: use for g, use in held.items() if use.blocks(now, policy.settle)}
            if held == before:
                return False
            nodes = {n: h for n, h in self.nodes.items() if n != node}
            if held:
                nodes[node] = held
            self.nodes = nodes  # published whole: a reader sees the old or the new
            return True

    def entries(self, node: str) -> dict[int, OutsideGpu]:
        """What is recorded for ``node`` (blocking or not yet expired), by GPU index."""
        return dict(self.nodes.get(node, {}))

    def blocked(self, node: str, now: float, policy: GpuOutsideUse) -> frozenset[int]:
        """The GPUs of ``node`` no job may get at ``now``."""
        if not policy.enabled:
            return frozenset()
        held = self.nodes.get(node, {})
        return frozenset(g for g, use in held.items() if use.blocks(now, policy.settle))

    def reason(self, node: str, now: float, policy: GpuOutsideUse) -> tuple[str, float] | None:
        """(Reason text, its time) while a GPU of ``node`` is blocked, else ``None``.

        One part per GPU, lowest index first, joined by ``"; "``; a GPU
        settling says until when: ``gpu 1 in use outside slurmlite: pid 4242
        (alice: python), ended, free for jobs at 2026-12-06T08:02:10``."""
        held = self.nodes.get(node, {})
        blocked = [g for g, use in held.items() if use.blocks(now, policy.settle)]
        if not blocked or not policy.enabled:
            return None
        parts = []
        for gpu in sorted(blocked):
            use = held[gpu]
            text = use.reason
            if use.freed is not None:
                text += f", ended, free for jobs at {fmt_timestamp(use.freed + policy.settle)}"
            parts.append(text)
        return "; ".join(parts), min(held[g].since for g in blocked)


def load(db: Database) -> OutsideGpus:
    """The record the store keeps (empty when there is none)."""
    ledger = OutsideGpus()
    with db.read() as s:
        row = s.get(MetaRow, OutsideGpus.META_KEY)
        ledger.load(row.value if row is not None else None)
    return ledger


def save(db: Database, ledger: OutsideGpus) -> None:
    """Store ``ledger`` (after a change: reports that change nothing write nothing).

    Saves take turns with reports, so the last one written holds every report."""
    with ledger.lock, db.write() as s:
        text = ledger.dump()
        row = s.get(MetaRow, OutsideGpus.META_KEY)
        if row is None:
            s.add(MetaRow(key=OutsideGpus.META_KEY, value=text))
        else:
            row.value = text


def shown(
    ledger: OutsideGpus, infos: list[NodeInfo], now: float, policy: GpuOutsideUse
) -> list[NodeInfo]:
    """``infos`` (``NodeService.infos``) with what users see of outside use, changed in place.

    * ``outside_gpus``: the blocked GPUs (``GresUsed`` counts them as used);
    * ``Reason``: the outside use's, by ``root`` at its first report, unless an
      admin or the controller set one (a drain's reason is not hidden);
    * state: an IDLE node whose every GPU is blocked shows MIXED (only jobs
      without GPUs fit there; ``docs/gpu-outside-use.md``)."""
    for info in infos:
        blocked = ledger.blocked(info.name, now, policy)
        if not blocked:
            continue
        info.outside_gpus = sorted(blocked)
        why = ledger.reason(info.name, now, policy)
        if why is not None and not info.reason:
            info.reason, info.reason_time, info.reason_user = why[0], why[1], "root"
        if info.state == "IDLE" and info.gpus and len(blocked) >= info.gpus:
            info.state = "MIXED"
    return infos


_DETAILS = re.compile(r": pid \d+ \((?P<user>[^:()]*): [^()]*\)")


def private(infos: list[NodeInfo], user: str) -> list[NodeInfo]:
    """``infos`` as ``user`` may see them under ``PrivateData=users``: another user's
    process is not named (``pid 4242 (alice: python)`` -> ``another user's process``)."""

    def hide(m: re.Match[str]) -> str:
        return m.group(0) if m.group("user") == user else ": another user's process"

    for info in infos:
        if info.outside_gpus and info.reason:
            info.reason = _DETAILS.sub(hide, info.reason)
    return infos
