"""The controller object: configuration, store, services and the loop, wired once.

``Controller`` is what the API routes receive (through a FastAPI dependency)
and what tests build directly with a temporary store, a ``FakeClock``-style
``clock`` and a ``RecordingAgentClient`` (``tests/recording_agents.py``).
``monotonic`` measures the gaps between liveness checks (a stalled controller,
``controller.nodes.service``); a test passes its ``FakeClock`` there too to
make a clock jump look like a pause.
``lease`` is the store's lease the daemon took (``controller.store.lease``):
its epoch goes into every order signed here, and an agent's fencing refusal
stops the process; in-process tests take none (epoch 0, never fenced).

``start()`` checks the store's invariants and repairs what it finds
(``controller.sched.invariants``: one ``event=invariant_repair`` line each)
before the loop's first pass, so scheduling never starts from a broken state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from controller.accounting.accounts import Accounts
from controller.accounting.priorities import PriorityService
from controller.accounting.usage_history import UsageHistory
from controller.auth.authenticate import Authenticator
from controller.auth.callers import AdminPolicy, Caller
from controller.jobs.retention import Retention
from controller.jobs.service import JobService
from controller.jobs.validate import SubmitValidator
from controller.metrics import counters
from controller.metrics.service import Metrics
from controller.nodes.agent_client import AgentClient, HttpAgentClient, Signer
from controller.nodes.service import NodeService
from controller.notify import outbox
from controller.notify.senders import Sender, sender_for
from controller.notify.worker import DeliveryWorker
from controller.runs.logs import AgentLogs
from controller.runs.service import RunService
from controller.sched.invariants import Report, check
from controller.sched.loop import SchedulerLoop
from controller.sched.parts import SchedParts
from controller.store.db import Database
from controller.store.job_query import owner_of
from controller.store.lease import Lease, give_up
from slurmlite import errors
from slurmlite.config import Config, ConfigError, load_config
from slurmlite.credential import NonceCache
from slurmlite.errors import SlurmError
from slurmlite.protocol import NodeUpdate
from slurmlite.scheduler.registry import scheduler_for
from slurmlite.scheduler.snapshot import Policy

log = logging.getLogger("slurmctld.authn")


class Controller:
    def __init__(
        self,
        cfg: Config,
        cluster_key: bytes,
        db: Database | None = None,
        agents: AgentClient | None = None,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        lease: Lease | None = None,
    ) -> None:
        self.cfg = cfg
        self.cluster_key = cluster_key
        self.clock = clock
        self.db = db or Database(cfg.store_url)
        policy = Policy.from_config(cfg)
        self.lease = lease
        self.signer = (
            Signer(cluster_key, lease.epoch, lease.store) if lease else Signer(cluster_key)
        )
        self.admins = AdminPolicy(cfg.slurm_user, cfg.admin_users)
        self.nodes = NodeService(self.db, cfg, clock, monotonic)
        self.accounts = Accounts(self.db, cfg)  # accounts, users, QOS (sacctmgr)
        self.accounts.bootstrap()
        self.validator = SubmitValidator(cfg, policy, self.nodes, self.accounts)
        self.jobs = JobService(self.db, self.validator, clock)
        # per-GPU utilization rings fed as usage arrives (the dashboard's job page)
        self.usage_history = UsageHistory(clock)
        self.jobs.usage_history = self.usage_history
        # a failed Prolog/Epilog drains its node (controller.jobs.node_scripts), as SlurmUser
        self.jobs.drain_node = lambda node, why: self.nodes.update(
            NodeUpdate([node], "DRAIN", why), 0
        )
        # a run its agent fenced (agent.cutoff) is lost there: the loop requeues it
        self.jobs.lost_run = lambda job, restarts, node: self.nodes.reconcile.lost(
            job, restarts, node, clock()
        )
        self.priorities = PriorityService(  # multifactor priority, usage, fair-share
            self.db, cfg, self.nodes.rows, self.accounts.records, wake=lambda: self.loop.wake()
        )
        self.validator.priorities = self.priorities
        self.nonces = NonceCache()
        self.sched = SchedParts(
            db=self.db,
            nodes=self.nodes,
            priorities=self.priorities,
            signer=self.signer,
            clock=clock,
            cfg=cfg,
            policy=policy,
            full_pass=scheduler_for(cfg.scheduler_type),
        )
        fenced = give_up if lease else None
        self.loop = SchedulerLoop(
            self.sched, agents or HttpAgentClient(self.signer, on_fenced=fenced)
        )
        self._authenticator: Authenticator | None = None
        self._task: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[Any]] = set()  # orders of a repair, on their way
        self.retention = Retention(self.db, lambda: self.cfg, clock)  # PurgeJobAfter
        self._purging: asyncio.Task[None] | None = None
        # workload runs: their rows, snapshots and secrets; nodes' logs (controller.runs)
        self.runs = RunService(self.db, cfg.state_save_location, cluster_key, clock)
        self.logs = AgentLogs(self.signer)
        self._collecting: asyncio.Task[None] | None = None
        # notifications: events recorded with each job change, sent by a worker thread
        # (controller.notify); a test sets notify_sender to a RecordingSender
        self.notify_sender: Sender | None = None
        where = outbox.destinations(lambda: self.cfg.webhook)
        self._notify_hook = outbox.install(self.db.sessions, clock, where)
        self.notifier = DeliveryWorker(
            self.db,
            lambda: self.notify_sender or sender_for(self.cfg),
            where,
            clock,
            lambda: self.cfg.cluster_name,
        )
        # /metrics (controller.metrics): counters bumped with the changes they count
        self._count_hook = counters.install(self.db.sessions)
        self.metrics = Metrics(self)
        self.started = clock()

    @property
    def agents(self) -> AgentClient:
        """The client that delivers orders to agents (the loop's; a test may swap it)."""
        return self.loop.agents

    @agents.setter
    def agents(self, agents: AgentClient) -> None:
        self.loop.agents = agents

    @property
    def loop_running(self) -> bool:
        """Whether the scheduling loop's task is alive (``/readyz``)."""
        return self._task is not None and not self._task.done()

    def authenticator(self) -> Authenticator:
        """Munge and JWT checks for TCP callers, built on first use from the ``Config`` in
        force: after ``scontrol reconfigure`` a new key file or lifespan takes effect."""
        found = self._authenticator
        if found is None or found.cfg is not self.cfg:
            found = self._authenticator = Authenticator(self.cfg)
            if found.jwt and found.problem:
                log.error("auth/jwt unusable: %s", found.problem)
        return found

    async def identify(self, headers: Mapping[str, str]) -> Caller | None:
        """The caller a TCP request's headers prove now (None: no credential in them)."""
        return await self.authenticator().identify(headers, self.admins, self.clock())

    @property
    def policy(self) -> Policy:
        """The scheduling policy in force (from slurm.conf; replaced on reconfigure)."""
        return self.sched.policy

    @policy.setter
    def policy(self, policy: Policy) -> None:
        self.sched.policy = self.validator.policy = policy

    # restart-only keys: changing them needs a new slurmctld
    FIXED = (
        ("store_url", "SlurmliteStoreURL"),
        ("socket_path", "SlurmliteSocket"),
        ("slurmctld_port", "SlurmctldPort"),
        ("control_host", "SlurmctldHost"),
        ("state_save_location", "StateSaveLocation"),
        ("key_file", "SlurmliteKeyFile"),
    )

    def reconfigure(self) -> list[str]:
        """``scontrol reconfigure``: reread slurm.conf; running and pending jobs are kept.

        Returns warnings (keys whose change needs a restart keep their old value).
        A broken file changes nothing and raises ``SlurmError`` naming the line.
        """
        try:
            new = load_config(self.cfg.path)
        except (ConfigError, OSError) as e:
            raise SlurmError(errors.SLURMLITE_CONFIG_INVALID, str(e)) from None
        notes = list(new.warnings)
        for attr, key in self.FIXED:
            if getattr(new, attr) != getattr(self.cfg, attr):
                notes.append(f"{key} changed: restart slurmctld to apply it")
                setattr(new, attr, getattr(self.cfg, attr))
        self.cfg = new
        self.sched.cfg = new
        self.policy = Policy.from_config(new)
        self.sched.full_pass = scheduler_for(new.scheduler_type)
        self.admins = AdminPolicy(new.slurm_user, new.admin_users)
        self.nodes.cfg = new
        self.validator.cfg = new
        self.accounts.cfg = new
        self.accounts.bootstrap()  # a new SlurmliteDefaultAccount/QOS exists from now on
        self.jobs.min_job_age = new.min_job_age
        self.priorities.configure(new)
        self.nodes.sync_config()
        self.loop.wake()
        return notes

    def job_owner(self, job_id: int) -> tuple[int, int] | None:
        """(uid, gid) of job ``job_id`` (None: no such job)."""
        return owner_of(self.db, job_id)

    def check(self, repair: bool = False) -> Report:
        """The store's invariants now (``slurmlite check``); ``repair`` mends what is broken
        (the orders that needs are in the report: ``send`` them)."""
        return check(self.db, self.cfg, self.clock(), repair)

    def send(self, report: Report) -> None:
        """Deliver a repair's orders in the background (a node failure's terminate orders)."""
        for order in report.orders:
            task = asyncio.create_task(self.loop.dispatch(order))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)

    async def start(self) -> None:
        self.send(await asyncio.to_thread(self.check, True))  # before the first pass
        self._task = asyncio.create_task(self.loop.run())
        self._purging = asyncio.create_task(self.retention.loop())
        self._collecting = asyncio.create_task(self._collect_snapshots())
        self.notifier.start()
        self.metrics.start()

    async def _collect_snapshots(self) -> None:
        """Unreferenced code snapshots go after ``SlurmliteSnapshotKeep`` (hourly check)."""
        while True:
            try:
                await asyncio.to_thread(self.runs.collect, self.cfg.snapshot_keep)
            except Exception:
                log.exception("event=snapshot_collect_failed")
            await asyncio.sleep(3600)

    async def stop(self) -> None:
        self.retention.stopped = True
        if self._purging is not None:
            self._purging.cancel()
        if self._collecting is not None:
            self._collecting.cancel()
        await self.logs.close()
        self.loop.stop()
        if self._task is not None:
            await self._task
        if self._sending:
            await asyncio.wait(self._sending)
        await asyncio.to_thread(self.notifier.stop)
        await self.metrics.stop()
        counters.uninstall(self.db.sessions, self._count_hook)
        outbox.uninstall(self.db.sessions, self._notify_hook)
        await self.agents.close()
        self.db.close()
