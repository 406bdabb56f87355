"""Accounts, users and QOS: which account and QOS a job runs under.

The accounting database of ``sacctmgr`` (Slurm keeps it in slurmdbd) lives in
three tables of the job store (``controller.store.models``): ``assocs`` (the
account tree and the user associations, with shares and usage), ``users``
(each user's default account and admin level) and ``qos``.  This module
reads them for two customers:

* **submission** (``resolve``): the job's account is ``-A`` if given, else
  the user's DefaultAccount, else ``SlurmliteDefaultAccount``; it must be one
  of the user's associations (ESLURM_INVALID_ACCOUNT, "Invalid account or
  account/partition combination specified").  A user with no association at
  all may use the default account: their association is created under it
  (1 share) on their first submission, so fair-share counts them from the
  start.  The QOS is ``-q`` if given, else the association's default QOS,
  else ``SlurmliteDefaultQOS``; it must exist and be allowed for the
  association (ESLURM_INVALID_QOS, "Invalid qos specification").
* **fair-share** (``records``): one ``AssocRecord`` per row.

Allowed QOS are inherited: an association whose ``qos`` list is empty
uses its account's, which uses its parent's, up to ``root``; if no row on
the way names any, every QOS is allowed.  The default QOS is inherited the
same way.  Worked example: root (qos ``normal``) -> vision (qos ``""``) ->
alice (qos ``""``): alice may use ``normal`` only.  ``sacctmgr modify account
vision set qos+=high`` starts from vision's inherited list, so vision's own
list becomes ``normal,high``, and alice, still with none of her own,
inherits both.

Submissions run at thousands per second, so the tables are read once into
a ``_Catalog`` and every answer is memoised in it: a submission costs one
dict lookup.  Every change made through this object (``sacctmgr``, an
automatic association) drops the catalog; the next submission rebuilds it.
A generation counter keeps a rebuild that raced with a change from being
installed.  (Several controllers on one PostgreSQL store would each keep
their own catalog: changes made through another controller show after a
restart -- the same holds for Slurm's slurmctld cache of slurmdbd.)

The partition plays no part yet: slurmlite has no per-partition
associations.  Adding, changing and deleting are in ``controller.accounting.account_edits``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.accounting.account_edits import AccountEdits
from controller.store.db import Database
from controller.store.models import AssocRow, QosRow, UserRow
from slurmlite import errors
from slurmlite.config import Config
from slurmlite.errors import SlurmError
from slurmlite.scheduler.fairshare import AssocRecord

ROOT = "root"
ADMIN_LEVELS = ("None", "Operator", "Administrator")


def qos_list(text: str | None) -> list[str]:
    """``"normal, high"`` -> ``["normal", "high"]`` (order kept, no blanks, no repeats)."""
    out: list[str] = []
    for name in (text or "").split(","):
        name = name.strip()
        if name and name not in out:
            out.append(name)
    return out


@dataclass(frozen=True)
class AssocView:
    """One association with its inherited QOS settings worked out."""

    account: str
    user: str  # "" for the account's own row
    qos: tuple[str, ...] | None  # allowed QOS; None: any
    default_qos: str | None


@dataclass
class _Catalog:
    """What ``resolve`` needs, read once; ``answers`` memoises ``resolve``."""

    accounts: dict[str, AssocView]
    users: dict[str, dict[str, AssocView]]  # user -> account -> association
    defaults: dict[str, str]  # user -> DefaultAccount
    qos: frozenset[str]
    admins: frozenset[str]  # AdminLevel Operator or Administrator
    answers: dict[tuple[str, str | None, str | None], tuple[str, str] | int] = field(
        default_factory=dict
    )


def effective_views(assocs: Iterable[AssocRow]) -> dict[tuple[str, str], AssocView]:
    """Each row's allowed and default QOS after inheritance (see the module docstring)."""
    rows = list(assocs)
    accounts = {r.account: r for r in rows if r.user == ""}
    memo: dict[str, tuple[tuple[str, ...] | None, str | None]] = {}

    def of_account(name: str, seen: frozenset[str] = frozenset()) -> tuple:
        if name in memo:
            return memo[name]
        row = accounts.get(name)
        if row is None or name in seen:
            return (None, None)
        parent = of_account(row.parent, seen | {name}) if row.parent else (None, None)
        own = tuple(qos_list(row.qos))
        memo[name] = (own or parent[0], row.default_qos or parent[1])
        return memo[name]

    out: dict[tuple[str, str], AssocView] = {}
    for r in rows:
        inherited = of_account(r.account if r.user else (r.parent or ""))
        if r.user == "":
            allowed, default = of_account(r.account)
        else:
            allowed = tuple(qos_list(r.qos)) or inherited[0]
            default = r.default_qos or inherited[1]
        out[(r.account, r.user)] = AssocView(r.account, r.user, allowed, default)
    return out


class Accounts(AccountEdits):
    """The accounting database as the controller uses it (``ctl.accounts``)."""

    def __init__(self, db: Database, cfg: Config) -> None:
        self.db = db
        self.cfg = cfg
        self._catalog: _Catalog | None = None
        self._generation = 0
        self._lock = threading.Lock()

    # ----------------------------------------------------------- bootstrap

    def bootstrap(self) -> None:
        """Create ``root``, the default account under it and the default QOS, if missing.

        Idempotent: an existing row is left as the administrator set it.
        """
        default_acct, default_qos = self.cfg.default_account, self.cfg.default_qos
        with self.db.write() as s:
            if s.get(QosRow, default_qos) is None:
                s.add(QosRow(name=default_qos, description=f"{default_qos} QOS", priority=0))
            if s.get(AssocRow, (ROOT, "")) is None:
                s.add(_account_row(ROOT, None, "default root account", qos=default_qos))
            if default_acct != ROOT and s.get(AssocRow, (default_acct, "")) is None:
                s.add(_account_row(default_acct, ROOT, "default account"))
        self.invalidate()

    # --------------------------------------------------------------- cache

    def invalidate(self) -> None:
        """Forget what was read: the next submission reads the tables again."""
        with self._lock:
            self._generation += 1
            self._catalog = None

    def _load(self) -> _Catalog:
        catalog = self._catalog
        if catalog is not None:
            return catalog
        with self._lock:
            generation = self._generation
        with self.db.read() as s:
            assocs = list(s.scalars(select(AssocRow)))
            users = list(s.scalars(select(UserRow)))
            qos = frozenset(s.scalars(select(QosRow.name)))
        views = effective_views(assocs)
        by_user: dict[str, dict[str, AssocView]] = {}
        for (account, user), view in views.items():
            if user:
                by_user.setdefault(user, {})[account] = view
        catalog = _Catalog(
            accounts={a: v for (a, u), v in views.items() if not u},
            users=by_user,
            defaults={u.name: u.default_account for u in users},
            qos=qos,
            admins=frozenset(u.name for u in users if u.admin_level in ADMIN_LEVELS[1:]),
        )
        with self._lock:
            if generation == self._generation:
                self._catalog = catalog
        return catalog

    # ---------------------------------------------------------- submission

    def resolve(
        self, user: str, account: str | None, qos: str | None, partition: str = ""
    ) -> tuple[str, str]:
        """The job's (account, QOS), or ``SlurmError`` INVALID_ACCOUNT / INVALID_QOS.

        E.g. alice with associations {vision} and DefaultAccount vision:
        ``resolve("alice", None, None, "debug")`` -> ``("vision", "normal")``;
        ``resolve("alice", "nlp", None, "debug")`` -> ESLURM_INVALID_ACCOUNT.
        """
        catalog = self._load()
        key = (user, account, qos)
        answer = catalog.answers.get(key)
        if answer is None:
            answer, create = self._decide(catalog, user, account, qos)
            if create:
                self._add_default_association(user)
            else:
                if len(catalog.answers) > 65536:
                    catalog.answers.clear()
                catalog.answers[key] = answer
        if isinstance(answer, int):
            raise SlurmError(answer)
        return answer

    def _decide(
        self, catalog: _Catalog, user: str, account: str | None, qos: str | None
    ) -> tuple[tuple[str, str] | int, bool]:
        """(answer or error code, whether the user's default association must be created)."""
        assocs = catalog.users.get(user)
        create = False
        if assocs is None:  # unknown to the database: only the default account
            chosen = account or self.cfg.default_account
            view = catalog.accounts.get(chosen)
            if chosen != self.cfg.default_account or view is None:
                return errors.ESLURM_INVALID_ACCOUNT, False
            create = True
        else:
            chosen = account or self._default_of(catalog, user, assocs)
            view = assocs.get(chosen)
            if view is None:
                return errors.ESLURM_INVALID_ACCOUNT, False
        wanted = qos or view.default_qos or self.cfg.default_qos
        if wanted not in catalog.qos or (view.qos is not None and wanted not in view.qos):
            return errors.ESLURM_INVALID_QOS, False
        return (chosen, wanted), create

    def _default_of(self, catalog: _Catalog, user: str, assocs: dict[str, AssocView]) -> str:
        """The user's DefaultAccount if it is one of theirs, else the configured
        default if it is, else their first association by name."""
        for name in (catalog.defaults.get(user), self.cfg.default_account):
            if name in assocs:
                return name  # type: ignore[return-value]
        return min(assocs)

    def _add_default_association(self, user: str) -> None:
        """A user's first submission: their association under the default account."""
        account = self.cfg.default_account
        with self.db.write() as s:
            if s.get(AssocRow, (account, user)) is None:
                s.add(AssocRow(account=account, user=user, parent=None, shares=1, qos=""))
            if s.get(UserRow, user) is None:
                s.add(UserRow(name=user, default_account=account, admin_level="None"))
        self.invalidate()

    def is_admin(self, user: str) -> bool:
        """True for a user whose AdminLevel is Operator or Administrator."""
        return user in self._load().admins

    # ----------------------------------------------------------- fair-share

    def records(self, session: Session) -> list[AssocRecord]:
        """Every association as fair-share reads it (account rows: ``user`` None)."""
        return [
            AssocRecord(
                account=r.account,
                user=r.user or None,
                parent=r.parent if not r.user else None,
                shares=r.shares,
                usage=r.raw_usage or 0.0,
            )
            for r in session.scalars(select(AssocRow).order_by(AssocRow.account, AssocRow.user))
        ]

    # ----------------------------------------------------------------- read

    def dump(self) -> dict[str, Any]:
        """Everything ``sacctmgr show`` prints, as JSON-ready data (``GET /v1/assocs``)."""
        with self.db.read() as s:
            assocs = list(s.scalars(select(AssocRow).order_by(AssocRow.account, AssocRow.user)))
            users = list(s.scalars(select(UserRow).order_by(UserRow.name)))
            qos = list(s.scalars(select(QosRow).order_by(QosRow.name)))
        views = effective_views(assocs)
        return {
            "cluster": self.cfg.cluster_name,
            "assocs": [_assoc_info(r, views[(r.account, r.user)]) for r in assocs],
            "users": [
                {"name": u.name, "default_account": u.default_account, "admin_level": u.admin_level}
                for u in users
            ],
            "qos": [_qos_info(q) for q in qos],
        }


def _account_row(name: str, parent: str | None, description: str, qos: str = "") -> AssocRow:
    return AssocRow(
        account=name,
        user="",
        parent=parent,
        shares=1,
        priority=0,
        qos=qos,
        default_qos=None,
        description=description,
        organization=name,
        raw_usage=0.0,
    )


def _assoc_info(r: AssocRow, view: AssocView) -> dict[str, Any]:
    return {
        "account": r.account,
        "user": r.user,
        "parent": r.parent,
        "shares": r.shares,
        "priority": r.priority,
        "qos": ",".join(view.qos or ()),
        "default_qos": view.default_qos,
        "description": r.description,
        "organization": r.organization,
        "raw_usage": r.raw_usage,
    }


def _qos_info(q: QosRow) -> dict[str, Any]:
    return {
        "name": q.name,
        "description": q.description,
        "priority": q.priority,
        "usage_factor": q.usage_factor,
        "max_wall": q.max_wall,
        "max_jobs_pu": q.max_jobs_pu,
        "max_submit_pu": q.max_submit_pu,
        "max_tres_pu": q.max_tres_pu,
        "max_tres_pj": q.max_tres_pj,
        "flags": q.flags,
        "idle_gpu_policy": q.idle_gpu_policy,
    }
