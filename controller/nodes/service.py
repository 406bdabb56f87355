"""Nodes: registration, heartbeats, liveness and the states users see.

Configured nodes start UNKNOWN until their agent registers.  A registered
node is IDLE, MIXED or ALLOCATED according to what its jobs hold (spec §5.4).
Liveness is kept in memory (``last_seen``): a node silent for more than two
heartbeat intervals is shown NOT_RESPONDING (``*``) and is not given new jobs;
silent for ``SlurmdTimeout`` it becomes DOWN and its running jobs end in
NODE_FAIL.  DOWN and DRAIN are stored, so they survive a controller restart.
``ReturnToService`` decides whether a DOWN node that talks again comes back
by itself (1: only if it went down for not responding; 2: always).

A node registering with fewer CPUs, less memory or fewer GPUs than the
configuration says is drained with Slurm's reasons ("Low RealMemory", ...),
unless ``SlurmdParameters=config_overrides`` is set.

Each registration and heartbeat also says which jobs the node holds;
``reconcile`` (``controller.nodes.reconcile``) compares that with the store.  They
also carry the node's load and free memory (``agent.machine``), kept in
memory with the last value winning: like Slurm, a controller restart shows
``N/A`` until the node speaks again.

A stalled controller is not a dead node: silence counts only while the
controller could hear.  Each liveness check (every pass, about once a
second) measures on a monotonic clock the gap since the previous one; a gap
over ``max(3 x heartbeat, 5 s)`` means the controller was not running
(SIGSTOP, VM freeze): it logs ``event=controller_stalled seconds=...`` and
moves ``heard_floor`` to now, so silence counts from ``max(last heartbeat,
heard_floor)`` and every node (and every ``reconcile`` suspect) gets a fresh
window.  E.g. SlurmdTimeout 10 s, frozen from t=100 to 130: a live node
heartbeats at ~131 and stays up; one that died at 110 goes DOWN at the first
check after 140.  The price: passes that themselves take longer than the
threshold (a wedged store) postpone DOWN while that lasts.

LastBusyTime follows Slurm 22.05: the moment the node last *became* idle
(no running and no completing job left), so a busy node shows when it was
last idle, not "now".  It is set when

* a node registers holding no job while it was UNKNOWN or DOWN, or comes
  back from DOWN by a heartbeat or by ``scontrol update state=resume|idle``;
* its last job leaves: every look at what jobs hold (``usage``: each
  scheduling pass with pending jobs, every node listing, and at least once
  a second from the loop's liveness step) compares the busy nodes with the
  previous look, and a node busy then and idle now gets the time of the look;
* the controller starts: nodes it knew get its start time (Slurm 22.05
  resets the value from its saved state the same way, so it is not stored).

Example: job 7 runs on n1 from 10:00 to 10:05, its completion is recorded
at 10:05:00.2 and the next look (within a second) comes at 10:05:00.6: n1
shows ``LastBusyTime=10:05:00`` while idle, and keeps it while job 8 runs
there from 10:07 on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.nodes import listing, outside_gpus
from controller.nodes.agent_client import AgentAddress
from controller.nodes.listing import Usage
from controller.nodes.reconcile import Reconciler
from controller.store.db import Database
from controller.store.models import JobRow, NodeRow
from controller.store.rows import allocs_of
from slurmlite.clock import monotonic_clock
from slurmlite.config import Config
from slurmlite.protocol import NodeInfo, NodeRegister, NodeUpdate, PartitionInfo

BUSY_LOOK = 1.0  # seconds between looks for nodes gone idle when nothing else looks
STALL_MIN = 5.0  # seconds between liveness checks that mean a stall, at least

log = logging.getLogger("slurmctld.nodes")


class NodeService:
    def __init__(
        self,
        db: Database,
        cfg: Config,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = monotonic_clock,
    ) -> None:
        self.db = db
        self.cfg = cfg
        self.clock = clock
        self.monotonic = monotonic  # measures the gaps between liveness checks (stalls)
        self.started = clock()
        self.last_seen: dict[str, float] = {}
        self.heard_floor = self.started  # silence is counted from here at the earliest
        self._last_check: float | None = None  # monotonic time of the previous check
        self.cpu_load: dict[str, float] = {}  # five-minute load average, as last reported
        self.free_mem: dict[str, int] = {}  # MiB, as last reported
        self.reconcile = Reconciler(db)
        self.outside = outside_gpus.load(db)  # GPUs used outside the scheduler
        self._rows: list[NodeRow] | None = None
        self._rows_gen = 0  # node writes finished so far (see rows())
        self._rows_lock = threading.Lock()
        self.sync_config()
        # LastBusyTime: nodes known before this start count as idle since it
        self.last_busy: dict[str, float] = {
            r.name: self.started for r in self.rows() if r.registered
        }
        # nodes holding jobs at the last look at usage (None: no look yet)
        self._busy: set[str] | None = None
        self._looked = -float("inf")
        self._look_lock = threading.Lock()

    # ---------------------------------------------------------- config

    def sync_config(self) -> None:
        """Make sure every configured node has a row carrying its configured resources."""
        with self._write() as s:
            for nc in self.cfg.nodes:
                row = s.get(NodeRow, nc.name)
                if row is None:
                    row = NodeRow(
                        name=nc.name,
                        addr=nc.addr,
                        hostname=nc.hostname,
                        port=nc.port,
                        cpus=nc.cpus,
                        real_memory=nc.real_memory,
                    )
                    row.down = nc.state.upper() == "DOWN"
                    row.drain = nc.state.upper() == "DRAIN"
                    s.add(row)
                row.addr, row.hostname, row.port = nc.addr, nc.hostname, nc.port
                row.cpus, row.real_memory = nc.cpus, nc.real_memory
                row.gpus, row.gpu_type = nc.gpus, nc.gpu_type
                row.features, row.weight, row.dynamic = ",".join(nc.features), nc.weight, False

    # ------------------------------------------------------ registration

    def register(self, msg: NodeRegister) -> None:
        now = self.clock()
        overrides = "config_overrides" in self.cfg.slurmd_parameters
        with self._write() as s:
            row = s.get(NodeRow, msg.name)
            if row is None:  # dynamic node: takes what it reports
                row = NodeRow(
                    name=msg.name,
                    addr=msg.addr,
                    hostname=msg.hostname,
                    port=msg.port,
                    cpus=msg.cpus,
                    real_memory=msg.real_memory,
                    gpus=len(msg.gpus),
                    gpu_type=msg.gpu_type,
                    dynamic=True,
                )
                s.add(row)
            was_unknown, was_down = not row.registered, row.down
            row.addr, row.port = msg.addr or row.addr, msg.port or row.port
            row.version, row.arch, row.os = msg.version, msg.arch, msg.os
            row.boot_time, row.slurmd_start_time = msg.boot_time, msg.start_time
            row.registered = True
            problem = None if overrides or row.dynamic else _registration_problem(row, msg)
            if problem:
                row.invalid, row.drain = True, True
                row.reason, row.reason_uid, row.reason_time = problem, 0, now
            elif row.invalid:
                row.invalid, row.drain, row.reason = False, False, None
            if row.down and (
                self.cfg.return_to_service >= 2
                or (self.cfg.return_to_service == 1 and row.down_for_timeout)
            ):
                row.down, row.down_for_timeout, row.reason = False, False, None
            back_up = was_unknown or (was_down and not row.down)
        self.last_seen[msg.name] = now
        self._note_measures(msg.name, msg.cpu_load, msg.free_mem)
        if not msg.running_jobs and (back_up or msg.name not in self.last_busy):
            self.last_busy[msg.name] = now
        self.reconcile.report(msg.name, msg.running_jobs, now, self.grace(), registering=True)

    def grace(self) -> float:
        """Seconds a RUNNING job may go unlisted by its node before it counts as vanished."""
        return max(5.0, 2 * self.cfg.heartbeat_interval + 1)

    def heartbeat(
        self,
        name: str,
        running_jobs: list[int] | None = None,
        cpu_load: float | None = None,
        free_mem: int | None = None,
        outside: Mapping[int, str] | None = None,
    ) -> bool:
        """Record a sign of life; False asks the agent to register again.

        ``running_jobs`` (what the node holds) feeds ``reconcile``; ``None``: not said.
        ``cpu_load``, ``free_mem`` replace the last values unless ``None``; ``outside``: GPUs
        used outside the scheduler (``controller.nodes.outside_gpus``)."""
        now = self.clock()
        with self.db.read() as s:
            row = s.get(NodeRow, name)
            known = row is not None and row.registered
            revive = known and row.down and row.down_for_timeout and self.cfg.return_to_service >= 1
            gpus = row.gpus if row is not None else 0
        if not known:
            return False
        if self.outside.report(name, outside, gpus, now, self.cfg.gpu_outside_use):
            outside_gpus.save(self.db, self.outside)
        self.last_seen[name] = now
        self._note_measures(name, cpu_load, free_mem)
        if running_jobs is not None:
            # a node back from DOWN is checked like a registration: a run it still holds
            # of a job requeued meanwhile is told to terminate
            self.reconcile.report(name, running_jobs, now, self.grace(), registering=revive)
        if revive:
            with self._write() as s:
                r = s.get(NodeRow, name)
                r.down, r.down_for_timeout, r.reason = False, False, None
            self.last_busy[name] = now
        return True

    def _note_measures(self, name: str, cpu_load: float | None, free_mem: int | None) -> None:
        if cpu_load is not None:
            self.cpu_load[name] = cpu_load
        if free_mem is not None:
            self.free_mem[name] = free_mem

    def update(self, upd: NodeUpdate, uid: int) -> None:
        """``scontrol update nodename=... state=...`` (the caller checked admin rights)."""
        from slurmlite import errors
        from slurmlite.errors import SlurmError
        from slurmlite.hostlist import expand

        now = self.clock()
        state = (upd.state or "").upper()
        if state not in ("", "DRAIN", "RESUME", "DOWN", "UNDRAIN", "IDLE"):
            raise SlurmError(
                errors.ESLURM_INVALID_NODE_STATE, f"state {upd.state} is not supported"
            )
        if state in ("DRAIN", "DOWN") and not upd.reason:
            raise SlurmError(
                errors.ESLURM_INVALID_NODE_STATE,
                "You must specify a reason when DOWNING or DRAINING a node. Request denied",
            )
        names = [n for item in upd.names for n in expand(item)]
        with self._write() as s:
            rows = []
            for name in names:
                row = s.get(NodeRow, name)
                if row is None:
                    raise SlurmError(
                        errors.ESLURM_INVALID_NODE_NAME, f"invalid node name specified: {name}"
                    )
                rows.append(row)
            for row in rows:
                if state == "DRAIN":
                    row.drain = True
                elif state == "DOWN":
                    row.down, row.down_for_timeout = True, False
                elif state in ("RESUME", "IDLE"):
                    row.drain = row.down = row.down_for_timeout = row.invalid = False
                    row.reason = None
                elif state == "UNDRAIN":
                    row.drain = False
                if state in ("DRAIN", "DOWN") or (upd.reason and state != "RESUME"):
                    row.reason, row.reason_uid, row.reason_time = upd.reason, uid, now
        if state in ("RESUME", "IDLE"):  # Slurm counts a node put back in service as idle now
            self.last_busy.update(dict.fromkeys(names, now))

    # ---------------------------------------------------------- liveness

    def silent_for(self, name: str, now: float) -> float:
        """Seconds node ``name`` has been silent while the controller could hear it."""
        return now - max(self.last_seen.get(name, self.started), self.heard_floor)

    def stall_threshold(self) -> float:
        """A gap between liveness checks longer than this means the controller stalled."""
        return max(3 * self.cfg.heartbeat_interval, STALL_MIN)

    def _note_stall(self, now: float) -> None:
        """Give every node a fresh SlurmdTimeout if the controller was not running."""
        tick = self.monotonic()
        last, self._last_check = self._last_check, tick
        if last is None or tick - last <= self.stall_threshold():
            return
        log.warning("event=controller_stalled seconds=%.1f", tick - last)
        self.heard_floor = max(self.heard_floor, now)
        self.reconcile.extend(now + self.grace())

    def not_responding(self, name: str, now: float) -> bool:
        return self.silent_for(name, now) > 2 * self.cfg.heartbeat_interval + 1

    def check_liveness(self) -> list[str]:
        """Mark nodes DOWN after SlurmdTimeout of silence; return the newly DOWN ones.

        Also looks for nodes gone idle (LastBusyTime) if nothing did for ``BUSY_LOOK`` s.
        Run every pass: the gap since the previous call tells a stall (module doc)."""
        now = self.clock()
        self._note_stall(now)
        if now - self._looked >= BUSY_LOOK:
            self.usage()
        timeout = self.cfg.slurmd_timeout
        if timeout <= 0:
            return []
        newly: list[str] = []
        with self.db.read() as s:
            rows = list(
                s.scalars(
                    select(NodeRow).where(NodeRow.registered.is_(True), NodeRow.down.is_(False))
                )
            )
        for row in rows:
            if self.silent_for(row.name, now) > timeout:
                newly.append(row.name)
        if newly:
            with self._write() as s:
                for name in newly:
                    r = s.get(NodeRow, name)
                    r.down, r.down_for_timeout = True, True
                    r.reason, r.reason_uid, r.reason_time = "Not responding", 0, now
        return newly

    # ------------------------------------------------------------ views

    def address(self, name: str) -> AgentAddress | None:
        """Where node ``name``'s agent listens, or None for a node the store lacks."""
        with self.db.read() as s:
            row = s.get(NodeRow, name)
            return AgentAddress(row.name, row.addr, row.port) if row else None

    def rows(self) -> list[NodeRow]:
        """Node rows, cached until this service writes a node (it is the only writer).

        Readers and writers run in different threads: a read that overlapped a
        write may have seen the rows from before its commit, so it is returned
        but not cached when a write finished meanwhile -- else that stale list
        would stay cached (a node registered, yet shown UNKNOWN forever).
        """
        rows = self._rows
        if rows is None:
            generation = self._rows_gen
            with self.db.read() as s:
                rows = list(s.scalars(select(NodeRow)))
            with self._rows_lock:
                if self._rows_gen == generation:
                    self._rows = rows
        return rows

    @contextmanager
    def _write(self) -> Iterator[Session]:
        """A store transaction on nodes; the row cache is dropped once it is over."""
        try:
            with self.db.write() as s:
                yield s
        finally:
            with self._rows_lock:
                self._rows_gen += 1
                self._rows = None

    def usage(self) -> dict[str, Usage]:
        """What running and completing jobs hold on each node (two index lookups).

        Each look also notes the nodes that went idle since the previous one
        (LastBusyTime); looks are serialised, so they are noted in order."""
        with self._look_lock:
            now = self.clock()
            use = self._usage()
            busy = {name for name, u in use.items() if u.jobs}
            if self._busy is not None:
                self.last_busy.update(dict.fromkeys(self._busy - busy, now))
            self._busy, self._looked = busy, now
        return use

    def _usage(self) -> dict[str, Usage]:
        use: dict[str, Usage] = {}
        with self.db.read() as s:
            q = select(JobRow.flags, JobRow.alloc).where(
                (JobRow.state == "RUNNING") | (JobRow.flags == "COMPLETING")
            )
            for flags, alloc in s.execute(q):
                completing = flags == "COMPLETING"
                for a in allocs_of(alloc):
                    u = use.setdefault(a.node, Usage())
                    u.cpus += a.cpus
                    u.mem += a.mem
                    u.gpus = tuple(sorted({*u.gpus, *a.gpus}))
                    u.jobs += 1
                    u.completing_only = u.completing_only and completing
        return use

    def usable(self, row: NodeRow, now: float) -> bool:
        return (
            row.registered
            and not (row.down or row.drain or row.invalid)
            and not self.not_responding(row.name, now)
        )

    def infos(self) -> list[NodeInfo]:
        """Every node as sinfo and scontrol show it (:mod:`controller.nodes.listing`)."""
        return listing.node_infos(self)

    def partitions(self) -> list[PartitionInfo]:
        """Every configured partition with its members' totals (sinfo, scontrol)."""
        return listing.partition_infos(self.cfg, self.rows())


def _registration_problem(row: NodeRow, msg: NodeRegister) -> str | None:
    if msg.cpus < row.cpus:
        return "Low socket*core*thread count"
    if msg.real_memory < row.real_memory:
        return "Low RealMemory"
    if len(msg.gpus) < row.gpus:
        return f"gres/gpu count reported lower than configured ({len(msg.gpus)} < {row.gpus})"
    return None
