"""Job priorities in the controller: at submit, on change, and every PriorityCalcPeriod.

``PriorityType=priority/multifactor`` (the default) gives every pending job
the weighted factor sum of ``slurmlite.scheduler.multifactor`` and keeps its
breakdown in ``jobs.prio_factors`` (``controller.accounting.priority_facts``).  When:

* at submit (``SubmitValidator.build_values`` -> :meth:`PriorityService.at_submit`):
  age is 0 then, so the value depends only on the request's *shape*
  (partition, account, user, QOS, size, time limit, nice) and the cached
  cluster facts and fair-share table; one evaluation per shape is kept,
  and a burst of identical submissions costs a dictionary look-up each;
* on release, ``scontrol update Priority=/Nice=`` (:meth:`set_row`);
* every ``PriorityCalcPeriod`` (:meth:`maybe_recalc`, called by the loop
  before each pass; :meth:`recalc`): usage is reset, decayed and charged
  (``controller.accounting.usage_charge``), the fair-share table recomputed from the
  association tree, and every pending job re-evaluated; only rows whose
  priority or breakdown changed are written.

Invariants: a held job keeps priority 0 (it is not even read); an
administrator's ``Priority=N`` (``admin_priority``) replaces the formula;
``priority/basic`` keeps its FIFO values (nothing is recomputed, no usage is
charged: Slurm's basic plugin tracks none).  A write is guarded by the
priority that was read, so a hold or update that lands meanwhile wins.

Per pending job a recalculation costs one age factor and a few additions:
the shape's evaluation (all factors with age 0) is shared, and
``multifactor.AgeOnly`` puts the job's age into it, adding the terms in
the order ``Factors.total`` adds them, so the value equals
``multifactor(...)`` exactly.  E.g. weights Age=1000, JobSize=1000 and a
shape whose weighted job size is 250: a job eligible for half of
PriorityMaxAge gets ``trunc(500.0 + 250.0) = 750``.  The breakdown is
``AgeOnly.as_dict(age)`` through ``json``, once per (shape, age): ages are
whole seconds waited over PriorityMaxAge, so a burst of submissions shares
one text, and so do all jobs past PriorityMaxAge.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from controller.accounting.priority_facts import (
    Accounting,
    PolicyFacts,
    build_facts,
    compact_json,
    encode,
    load_accounting,
    request_tres,
)
from controller.accounting.shares import share_table
from controller.accounting.usage_charge import ChargeReport, UsageSettings, charge_usage
from controller.store.db import Database
from controller.store.models import JobRow
from slurmlite.config import Config
from slurmlite.protocol_policy import SharesAnswer
from slurmlite.scheduler.fairshare import (
    AssocRecord,
    FairShare,
    compute_fairshare,
    tree_from_records,
)
from slurmlite.scheduler.multifactor import (
    AgeOnly,
    JobFacts,
    PriorityParams,
    age_factor,
    multifactor,
)
from slurmlite.scheduler.registry import is_multifactor

log = logging.getLogger("slurmctld.priority")

#: the columns a priority depends on besides the job's times (its "shape")
SHAPE = (
    "partition", "account", "user", "qos", "nodes_min", "num_cpus", "mem_per_node",
    "mem_per_cpu", "mem_per_gpu", "gpus_per_node", "gpus_total", "gpu_type", "time_limit", "nice",
)  # fmt: skip
_shape_of_values = itemgetter(*SHAPE)
_JOBS = JobRow.__table__
_PENDING_COLUMNS = (
    *(_JOBS.c[name] for name in SHAPE),
    _JOBS.c.id,
    _JOBS.c.priority,
    _JOBS.c.prio_factors,
    _JOBS.c.admin_priority,
    _JOBS.c.eligible_time,
    _JOBS.c.submit_time,
    _JOBS.c.hold,
)
_SET_PRIORITY = (
    update(_JOBS)
    .where(
        _JOBS.c.id == bindparam("b_id"),
        _JOBS.c.priority == bindparam("b_old"),  # a hold or update meanwhile wins
        _JOBS.c.state == "PENDING",
        _JOBS.c.hold.is_(None),
    )
    .values(priority=bindparam("b_prio"), prio_factors=bindparam("b_factors"))
)
_MAX_SHAPES = 50_000  # cached evaluations kept between recalculations
_MAX_TEXTS = 50_000  # cached breakdown texts, (shape, age) -> JSON


class _Attrs:
    """Attribute access to a dict of column values (a submission's row)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__ = values


@dataclass
class _State:
    """What evaluations are made of; replaced whole, so a reader sees one consistent set."""

    cfg: Config
    rows: Any  # the node rows the facts were built from (NodeService.rows() identity)
    facts: PolicyFacts
    fairshare: FairShare
    shapes: dict[tuple[Any, ...], AgeOnly] = field(default_factory=dict)
    texts: dict[tuple[AgeOnly, float], str] = field(default_factory=dict)  # (shape, age)

    def text(self, shape: AgeOnly, age: float) -> str:
        """The stored breakdown of ``shape`` at normalised age ``age`` (encoded once)."""
        key = (shape, age if shape.weight else 0.0)
        text = self.texts.get(key)
        if text is None:
            if len(self.texts) >= _MAX_TEXTS:
                self.texts.clear()
            text = self.texts[key] = compact_json(shape.as_dict(age))
        return text


class PriorityService:
    """Multifactor priorities, usage and fair-share of one controller (``ctl.priorities``).

    It is given what it uses: the store, the configuration (again at each
    :meth:`configure`), the node rows (``NodeService.rows``), the associations
    (``Accounts.records``) and ``wake``, called when priorities changed so that
    the scheduler looks again.
    """

    def __init__(
        self,
        db: Database,
        cfg: Config,
        node_rows: Callable[[], Sequence[Any]],
        records: Callable[[Session], Iterable[AssocRecord]],
        wake: Callable[[], None],
    ) -> None:
        self.db = db
        self._node_rows = node_rows
        self._records = records
        self._wake = wake
        self._state: _State | None = None
        self._accounting: Accounting | None = None
        self._fairshare: FairShare | None = None
        self.last_calc: float | None = None
        self.last_report = ChargeReport()
        self.configure(cfg)

    def configure(self, cfg: Config) -> None:
        """(Re)read the Priority* keys (``scontrol reconfigure``); caches start afresh."""
        self.cfg = cfg
        self.params = PriorityParams.from_config(cfg)
        self.multifactor = is_multifactor(cfg.priority_type)
        period = cfg.priority_calc_period
        self.period: float = math.inf if period is None else float(period) * 60.0
        self.usage = UsageSettings(
            half_life=float(cfg.priority_decay_half_life or 0) * 60.0,
            reset_period=cfg.priority_usage_reset_period,
            max_tres="MAX_TRES" in self.params.flags,
        )
        self.dampening = float(cfg.fairshare_dampening_factor or 1)
        self._starting = True  # PriorityUsageResetPeriod=NOW acts at the next charge
        self.invalidate()

    def invalidate(self) -> None:
        """Forget the cached QOS, association and fair-share facts (``sacctmgr`` changed
        them): the next evaluation reads the tables again; usage is charged as before."""
        self._accounting = None
        self._fairshare = None
        self._state = None

    # ------------------------------------------------------------ caches

    def _current(self) -> _State:
        """The evaluation state, rebuilt when the configuration or the node rows changed."""
        cfg, rows = self.cfg, self._node_rows()
        state = self._state
        if state is not None and state.cfg is cfg and state.rows is rows:
            return state
        if self._accounting is None or self._fairshare is None:
            with self.db.read() as s:
                self._accounting = load_accounting(s)
                self._fairshare = self._compute_fairshare(s)
        state = _State(cfg, rows, build_facts(cfg, rows, self._accounting), self._fairshare)
        self._state = state
        return state

    def facts(self) -> PolicyFacts:
        return self._current().facts

    def fairshare(self) -> FairShare:
        """The fair-share table of the last recalculation (sshare may read it)."""
        return self._current().fairshare

    def shares(self, now: float) -> SharesAnswer:
        """The sshare table at ``now``, uncharged usage included (``accounting.shares``)."""
        with self.db.read() as s:
            return share_table(s, self.cfg, self._records(s), self.facts(), self.usage, now)

    def _compute_fairshare(self, s: Session) -> FairShare:
        tree = tree_from_records(list(self._records(s)))
        return compute_fairshare(tree, fair_tree=self.params.fair_tree, dampening=self.dampening)

    def _shape(self, state: _State, key: tuple[Any, ...], job: Any) -> AgeOnly:
        """The shape's evaluation at age 0 (``key``: the job's ``SHAPE`` columns), kept."""
        shape = state.shapes.get(key)
        if shape is not None:
            return shape
        facts, (part, account, user, qos) = state.facts, key[:4]
        base = multifactor(
            JobFacts(
                min_nodes=job.nodes_min or 1,
                cpus=job.num_cpus or 1,
                tres=request_tres(job),
                time_limit=job.time_limit,
                nice=job.nice or 0,
            ),
            self.params,
            now=0.0,
            cluster=facts.cluster,
            partition=facts.partition(part),
            fairshare=state.fairshare.factor(account, user),
            qos_priority=facts.qos_priority.get(qos, 0),
            assoc_priority=_assoc_priority(facts, account, user),
        )
        shape = AgeOnly(base, self.params.age)
        if len(state.shapes) >= _MAX_SHAPES:
            state.shapes.clear()
        state.shapes[key] = shape
        return shape

    def _age(self, eligible: float | None, submitted: float, now: float) -> float:
        if not self.params.age:
            return 0.0
        return age_factor(JobFacts(accrue_time=eligible, submit_time=submitted), self.params, now)

    # ---------------------------------------------------------- one job

    def at_submit(self, values: dict[str, Any]) -> bool:
        """Set ``priority`` and ``prio_factors`` of a new job's column values (age 0).

        Returns whether it did (multifactor); with ``priority/basic`` only the
        breakdown is set (to None) and the caller gives the FIFO value.
        """
        if not self.multifactor:
            values["prio_factors"] = None
            return False
        state = self._current()
        shape = self._shape(state, _shape_of_values(values), _Attrs(values))
        values["priority"] = 0 if values.get("hold") is not None else shape.base.value
        values["prio_factors"] = state.text(shape, 0.0)
        return True

    def evaluate(self, job: Any, now: float) -> tuple[int, str]:
        """Priority and breakdown of a stored job at ``now`` (held: 0, factors kept)."""
        if job.admin_priority and job.hold is None:
            direct = multifactor(
                JobFacts(nice=job.nice or 0, admin_priority=job.admin_priority),
                self.params,
                now=now,
                cluster=self.facts().cluster,
                partition=self.facts().partition(job.partition),
            )
            return direct.value, encode(direct)
        state = self._current()
        shape = self._shape(state, tuple(getattr(job, name) for name in SHAPE), job)
        age = self._age(job.eligible_time, job.submit_time, now)
        value = 0 if job.hold is not None else shape.value(age)
        return value, state.text(shape, age)

    def set_row(self, row: JobRow, now: float) -> None:
        """Give ``row`` its multifactor priority now (release, update); basic: unchanged."""
        if self.multifactor:
            row.priority, row.prio_factors = self.evaluate(row, now)

    # ------------------------------------------------------ recalculation

    def maybe_recalc(self, now: float) -> bool:
        """Recalculate when PriorityCalcPeriod has passed since the last time (or never ran)."""
        if self.last_calc is not None and now - self.last_calc < self.period:
            return False
        self.recalc(now)
        return True

    def recalc(self, now: float) -> None:
        """Usage (reset, decay, charge), fair-share, and every pending job's priority."""
        began = time.perf_counter()
        self.last_calc = now
        cfg, rows = self.cfg, self._node_rows()
        with self.db.write() as s:
            self._accounting = load_accounting(s)
            facts = build_facts(cfg, rows, self._accounting)
            if self.multifactor:
                self.last_report = charge_usage(s, now, facts, self.usage, starting=self._starting)
                s.flush()
            self._fairshare = self._compute_fairshare(s)
        self._starting = False
        self._state = _State(cfg, rows, facts, self._fairshare)
        pending = changed = 0
        if self.multifactor:
            pending, changed = self._reprioritise(self._state, now)
        if changed:
            self._wake()
        log.info(
            "event=priority_recalc pending=%d changed=%d took_ms=%.1f",
            pending,
            changed,
            (time.perf_counter() - began) * 1000,
        )

    def _reprioritise(self, state: _State, now: float) -> tuple[int, int]:
        """Every pending, unheld job's priority; the changed ones written.  (read, written)"""
        with self.db.read() as s:
            stmt = select(*_PENDING_COLUMNS).where(
                _JOBS.c.state == "PENDING", _JOBS.c.hold.is_(None)
            )
            rows = s.connection().execute(stmt).all()
        width = len(SHAPE)
        incr_only = "INCR_ONLY" in self.params.flags
        ages: dict[tuple[float | None, float], float] = {}  # a burst shares its times
        shapes, texts = state.shapes, state.texts  # (age is 0.0 whenever its weight is 0)
        changes = []
        for r in rows:
            if r.admin_priority:
                value, text = self.evaluate(r, now)
            else:
                times = (r.eligible_time, r.submit_time)
                age = ages.get(times)
                if age is None:
                    age = ages[times] = self._age(r.eligible_time, r.submit_time, now)
                key = tuple(r[:width])
                shape = shapes.get(key) or self._shape(state, key, r)
                value = shape.value(age)
                if incr_only and value < r.priority:
                    continue
                text = texts.get((shape, age)) or state.text(shape, age)
            if value != r.priority or text != r.prio_factors:
                changes.append(
                    {"b_id": r.id, "b_old": r.priority, "b_prio": value, "b_factors": text}
                )
        if changes:
            with self.db.write_rows() as conn:
                conn.execute(_SET_PRIORITY, changes)
        return len(rows), len(changes)


def _assoc_priority(facts: PolicyFacts, account: str, user: str) -> int:
    prio = facts.assoc_priority.get((account, user))
    return prio if prio is not None else facts.assoc_priority.get((account, ""), 0)
