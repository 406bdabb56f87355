"""Adding, changing and deleting accounts, users and QOS (what ``sacctmgr`` asks for).

Every verb runs in one transaction and answers what it did (or, with
``commit=False``, what it would do: ``sacctmgr`` without ``-i`` shows that
and asks before it commits, as Slurm's does).  Refusals are ``SlurmError``
whose detail is the text ``sacctmgr`` prints, e.g.::

    add_accounts(["vision"], parent="nosuch")
      -> SlurmError(ESLURM_INVALID_PARENT_ACCOUNT,
                    " Parent account 'nosuch' doesn't exist on cluster anchor")

Rules, as in Slurm:

* ``root`` cannot be deleted, nor an account that still has sub-accounts,
  nor an association that pending or running jobs use
  (ESLURM_JOBS_RUNNING_ON_ASSOC), nor a user's default account while the user
  keeps other associations (ESLURM_NO_REMOVE_DEFAULT_ACCOUNT);
* a user's DefaultAccount must be one of their associations;
* ``qos+=high`` / ``qos-=high`` start from the association's inherited list
  (``controller.accounting.accounts``); every QOS named must exist;
* TRES limits merge: ``MaxTRESPerUser=gres/gpu=4`` keeps a ``cpu=8`` already
  set; ``gres/gpu=-1`` removes that one; numbers ``-1`` clear a limit.

Slurmlite deviations: the configured default account and QOS
(``SlurmliteDefaultAccount``/``SlurmliteDefaultQOS``) cannot be deleted --
users without an association fall back on them.

Every change drops the submission cache (``Accounts.invalidate``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from controller.store.models import AssocRow, JobRow, QosRow, UserRow
from slurmlite import errors, idlegpus
from slurmlite.errors import SlurmError

if TYPE_CHECKING:
    from controller.store.db import Database
    from slurmlite.config import Config

ACTIVE = ("PENDING", "RUNNING", "SUSPENDED")
LEVELS = {"none": "None", "operator": "Operator", "admin": "Administrator",
          "administrator": "Administrator"}  # fmt: skip
TRES_ORDER = ("cpu", "mem", "energy", "node", "billing")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}$")
_TRES_NAME = re.compile(r"^(cpu|mem|energy|node|billing|gres/[A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)?)$")
_MEM_UNITS = {"": 1, "M": 1, "G": 1024, "T": 1024 * 1024, "K": 1 / 1024}
QOS_FIELDS = ("description", "priority", "usage_factor", "max_wall", "max_jobs_pu",
              "max_submit_pu", "max_tres_pu", "max_tres_pj", "flags", "idle_gpu_policy")  # fmt: skip
_NULLABLE = ("max_wall", "max_jobs_pu", "max_submit_pu")


def bad(detail: str, code: int = errors.SLURM_UNEXPECTED_MSG_ERROR) -> SlurmError:
    return SlurmError(code, detail)


def check_names(names: Iterable[str], what: str) -> list[str]:
    """Names as given, each a plain word (letters, digits, ``_.@-``), 64 at most."""
    out = [n for n in dict.fromkeys(names)]
    if not out:
        raise bad(f" Need name of {what}.")
    for n in out:
        if not _NAME.match(n):
            raise bad(f" Invalid {what} name: '{n}'")
    return out


def merge_tres(old: str, text: str) -> str:
    """``merge_tres("cpu=8", "gres/gpu=4,mem=2G")`` -> ``"cpu=8,mem=2048,gres/gpu=4"``."""
    items = dict(kv.split("=", 1) for kv in old.split(",") if "=" in kv)
    for part in text.split(","):
        name, eq, value = part.strip().partition("=")
        name = name.strip().lower()
        if not eq or not _TRES_NAME.match(name):
            raise bad(f" Invalid TRES specification: '{text}'")
        unit = value[-1:].upper() if name == "mem" and value[-1:].isalpha() else ""
        number = value[:-1] if unit else value
        try:
            count = int(number)
        except ValueError:
            raise bad(f" Invalid TRES specification: '{text}'") from None
        if count == -1:
            items.pop(name, None)
        elif count < 0 or count > 2**53 or unit not in _MEM_UNITS:
            raise bad(f" Invalid TRES specification: '{text}'")
        else:
            items[name] = str(int(count * _MEM_UNITS[unit]))

    def order(name: str) -> tuple[int, str]:
        return (TRES_ORDER.index(name) if name in TRES_ORDER else len(TRES_ORDER), name)

    return ",".join(f"{k}={items[k]}" for k in sorted(items, key=order))


class AccountEdits:
    """The verbs of ``Accounts`` that change the database (mixed into it)."""

    db: Database
    cfg: Config

    def invalidate(self) -> None:  # provided by Accounts
        raise NotImplementedError

    def _run(self, commit: bool, work: Any) -> dict[str, Any]:
        with self.db.write() as s:
            answer = work(s)
            if not commit:
                s.rollback()
        if commit:
            self.invalidate()
        return answer

    # ------------------------------------------------------------ accounts

    def add_accounts(
        self,
        names: list[str],
        parent: str | None = None,
        changes: dict[str, Any] | None = None,
        commit: bool = True,
    ) -> dict[str, Any]:
        names = check_names(names, "account to add")
        parent = parent or "root"
        changes = changes or {}

        def work(s: Session) -> dict[str, Any]:
            if s.get(AssocRow, (parent, "")) is None:
                raise bad(
                    f" Parent account '{parent}' doesn't exist on cluster "
                    f"{self.cfg.cluster_name}\n        Contact your admin to add this account.",
                    errors.ESLURM_INVALID_PARENT_ACCOUNT,
                )
            added = []
            for name in names:
                if s.get(AssocRow, (name, "")) is not None:
                    continue
                row = AssocRow(account=name, user="", parent=parent, shares=1, priority=0,
                               qos="", default_qos=None, raw_usage=0.0,
                               description=changes.get("description") or name,
                               organization=changes.get("organization")
                               or (parent if parent != "root" else name))  # fmt: skip
                s.add(row)
                s.flush()
                self._apply_assoc(s, row, changes)
                added.append(name)
            return {"accounts": added, "parent": parent, "cluster": self.cfg.cluster_name}

        return self._run(commit, work)

    def modify_accounts(
        self, names: list[str], changes: dict[str, Any], commit: bool = True
    ) -> dict[str, Any]:
        names = check_names(names, "account")

        def work(s: Session) -> dict[str, Any]:
            changed = []
            for name in names:
                row = s.get(AssocRow, (name, ""))
                if row is None:
                    continue
                if "parent" in changes:
                    self._reparent(s, row, changes["parent"])
                for key in ("description", "organization"):
                    if changes.get(key) is not None:
                        setattr(row, key, changes[key])
                self._apply_assoc(s, row, changes)
                changed.append(name)
            return {"changed": changed, "cluster": self.cfg.cluster_name}

        return self._run(commit, work)

    def delete_accounts(self, names: list[str], commit: bool = True) -> dict[str, Any]:
        names = check_names(names, "account")
        if "root" in names:
            raise bad(" You are not allowed to remove the root account.\n"
                      " Use remove cluster instead.")  # fmt: skip
        if self.cfg.default_account in names:
            raise bad(f" The cluster's default account '{self.cfg.default_account}' "
                      "(SlurmliteDefaultAccount) cannot be removed.")  # fmt: skip

        def work(s: Session) -> dict[str, Any]:
            present = [n for n in names if s.get(AssocRow, (n, "")) is not None]
            kids = s.scalars(
                select(AssocRow.account).where(AssocRow.user == "", AssocRow.parent.in_(present))
            ).all()
            orphans = sorted(set(kids) - set(present))
            if orphans:
                raise bad(" Error with request: these accounts have sub-accounts; "
                          "remove or move them first:\n" + _lines(orphans))  # fmt: skip
            users = s.scalars(select(AssocRow).where(
                AssocRow.account.in_(present), AssocRow.user != "")).all()  # fmt: skip
            self._check_removable(s, [(u.user, u.account) for u in users])
            s.execute(delete(AssocRow).where(AssocRow.account.in_(present)))
            return {"deleted": present}

        return self._run(commit, work)

    def _reparent(self, s: Session, row: AssocRow, parent: str) -> None:
        if row.account == "root":
            raise bad(" The root account has no parent.", errors.ESLURM_INVALID_PARENT_ACCOUNT)
        up: str | None = parent
        while up is not None:
            above = s.get(AssocRow, (up, ""))
            if above is None or up == row.account:
                raise SlurmError(errors.ESLURM_INVALID_PARENT_ACCOUNT)
            up = above.parent
        row.parent = parent

    # --------------------------------------------------------------- users

    def add_users(
        self,
        names: list[str],
        accounts: list[str],
        default_account: str | None = None,
        admin_level: str | None = None,
        changes: dict[str, Any] | None = None,
        commit: bool = True,
    ) -> dict[str, Any]:
        names = check_names(names, "user to add")
        accounts = list(dict.fromkeys([*([default_account] if default_account else []), *accounts]))
        if not accounts:
            raise bad(" Need name of account to add user to.")
        level = _level(admin_level) if admin_level else None
        changes = changes or {}

        def work(s: Session) -> dict[str, Any]:
            for acct in accounts:
                if s.get(AssocRow, (acct, "")) is None:
                    raise bad(f" This account '{acct}' doesn't exist.\n"
                              "        Contact your admin to add this account.",
                              errors.ESLURM_INVALID_ACCOUNT)  # fmt: skip
            new_users, assocs = [], []
            for name in names:
                if s.get(UserRow, name) is None:
                    s.add(UserRow(name=name, default_account=accounts[0],
                                  admin_level=level or "None"))  # fmt: skip
                    new_users.append(name)
                for acct in accounts:
                    if s.get(AssocRow, (acct, name)) is not None:
                        continue
                    row = AssocRow(account=acct, user=name, parent=None, shares=1, priority=0,
                                   qos="", default_qos=None, raw_usage=0.0)  # fmt: skip
                    s.add(row)
                    s.flush()
                    self._apply_assoc(s, row, changes)
                    assocs.append([name, acct])
            return {"users": new_users, "assocs": assocs, "default_account": accounts[0],
                    "cluster": self.cfg.cluster_name}  # fmt: skip

        return self._run(commit, work)

    def modify_users(
        self,
        names: list[str],
        changes: dict[str, Any],
        accounts: list[str] | None = None,
        commit: bool = True,
    ) -> dict[str, Any]:
        names = check_names(names, "user")

        def work(s: Session) -> dict[str, Any]:
            changed = []
            for name in names:
                user = s.get(UserRow, name)
                rows = s.scalars(select(AssocRow).where(AssocRow.user == name)).all()
                if accounts:
                    rows = [r for r in rows if r.account in accounts]
                if user is None or (accounts and not rows):
                    continue
                if changes.get("default_account"):
                    acct = changes["default_account"]
                    if s.get(AssocRow, (acct, name)) is None:
                        raise bad(f" User '{name}' has no association with account '{acct}'",
                                  errors.ESLURM_INVALID_ACCOUNT)  # fmt: skip
                    user.default_account = acct
                if changes.get("admin_level"):
                    user.admin_level = _level(changes["admin_level"])
                for row in rows:
                    self._apply_assoc(s, row, changes)
                changed.append(name)
            return {"changed": changed, "cluster": self.cfg.cluster_name}

        return self._run(commit, work)

    def delete_users(
        self, names: list[str], accounts: list[str] | None = None, commit: bool = True
    ) -> dict[str, Any]:
        names = check_names(names, "user")

        def work(s: Session) -> dict[str, Any]:
            gone: list[str] = []
            for name in names:
                rows = s.scalars(select(AssocRow).where(AssocRow.user == name)).all()
                doomed = [r for r in rows if not accounts or r.account in accounts]
                user = s.get(UserRow, name)
                if not doomed and (accounts or user is None):
                    continue
                self._check_removable(s, [(r.user, r.account) for r in doomed])
                for r in doomed:
                    s.delete(r)
                    gone.append(f"{name}/{r.account}" if accounts else name)
                if len(doomed) == len(rows) and user is not None:
                    s.delete(user)
                    if not doomed:
                        gone.append(name)
            return {"deleted": sorted(set(gone))}

        return self._run(commit, work)

    def _check_removable(self, s: Session, pairs: list[tuple[str, str]]) -> None:
        """Refuse to drop associations that active jobs use, or a user's default account
        while the user keeps other associations."""
        if not pairs:
            return
        doomed = set(pairs)
        users = sorted({u for u, _ in pairs})
        busy = s.execute(
            select(JobRow.id, JobRow.user, JobRow.account).where(
                JobRow.user.in_(users), JobRow.state.in_(ACTIVE)
            )
        ).all()
        running = [f"JobId={j} U={u} A={a}" for j, u, a in busy if (u, a) in doomed]
        if running:
            raise bad(_lines(running), errors.ESLURM_JOBS_RUNNING_ON_ASSOC)
        stuck = []
        for name in users:
            user = s.get(UserRow, name)
            if user is None or (name, user.default_account) not in doomed:
                continue
            kept = s.scalars(select(AssocRow.account).where(AssocRow.user == name)).all()
            if any((name, a) not in doomed for a in kept):
                stuck.append(f"U = {name} A = {user.default_account}")
        if stuck:
            raise bad(_lines(stuck), errors.ESLURM_NO_REMOVE_DEFAULT_ACCOUNT)

    # -------------------------------------------------- association fields

    def _apply_assoc(self, s: Session, row: AssocRow, changes: dict[str, Any]) -> None:
        """Fairshare, priority, QOS list and default QOS of one association."""
        if "fairshare" in changes and changes["fairshare"] is not None:
            share = changes["fairshare"]
            row.shares = None if share == "parent" else (1 if share == -1 else int(share))
        if changes.get("priority") is not None:
            row.priority = max(0, int(changes["priority"]))
        known = set(s.scalars(select(QosRow.name)))
        for key in ("qos", "qos_add", "qos_remove"):
            for q in changes.get(key) or []:
                if q not in known:
                    raise bad(f" Unknown QOS name: {q}", errors.ESLURM_INVALID_QOS)
        if changes.get("qos") is not None:
            row.qos = ",".join(dict.fromkeys(changes["qos"]))
        if changes.get("qos_add") or changes.get("qos_remove"):
            from controller.accounting.accounts import effective_views  # the inherited list

            s.flush()
            views = effective_views(s.scalars(select(AssocRow)))
            current = list(views[(row.account, row.user)].qos or sorted(known))
            current += [q for q in changes.get("qos_add") or [] if q not in current]
            remove = set(changes.get("qos_remove") or [])
            row.qos = ",".join(q for q in current if q not in remove)
        if changes.get("default_qos") is not None:
            q = changes["default_qos"]
            if q in ("", "-1"):
                row.default_qos = None
            elif q not in known:
                raise bad(f" Unknown QOS name: {q}", errors.ESLURM_INVALID_QOS)
            else:
                row.default_qos = q

    # ----------------------------------------------------------------- qos

    def add_qos(
        self, names: list[str], changes: dict[str, Any] | None = None, commit: bool = True
    ) -> dict[str, Any]:
        names = check_names(names, "QOS to add")

        def work(s: Session) -> dict[str, Any]:
            added = []
            for name in names:
                if s.get(QosRow, name) is not None:
                    continue
                row = QosRow(name=name, description=name, priority=0, usage_factor=1.0,
                             max_tres_pu="", max_tres_pj="", flags="")  # fmt: skip
                _apply_qos(row, changes or {})
                s.add(row)
                added.append(name)
            return {"qos": added}

        return self._run(commit, work)

    def modify_qos(
        self, names: list[str], changes: dict[str, Any], commit: bool = True
    ) -> dict[str, Any]:
        names = check_names(names, "QOS")

        def work(s: Session) -> dict[str, Any]:
            changed = []
            for name in names:
                row = s.get(QosRow, name)
                if row is not None:
                    _apply_qos(row, changes)
                    changed.append(name)
            return {"changed": changed}

        return self._run(commit, work)

    def delete_qos(self, names: list[str], commit: bool = True) -> dict[str, Any]:
        names = check_names(names, "QOS")
        if self.cfg.default_qos in names:
            raise bad(f" The cluster's default QOS '{self.cfg.default_qos}' "
                      "(SlurmliteDefaultQOS) cannot be removed.")  # fmt: skip

        def work(s: Session) -> dict[str, Any]:
            present = [n for n in names if s.get(QosRow, n) is not None]
            for row in s.scalars(select(AssocRow)):
                kept = [q for q in row.qos.split(",") if q and q not in present]
                if ",".join(kept) != row.qos:
                    row.qos = ",".join(kept)
                if row.default_qos in present:
                    row.default_qos = None
            s.execute(delete(QosRow).where(QosRow.name.in_(present)))
            return {"deleted": present}

        return self._run(commit, work)


def _apply_qos(row: QosRow, changes: dict[str, Any]) -> None:
    for key in QOS_FIELDS:
        value = changes.get(key)
        if value is None:
            continue
        if key in ("max_tres_pu", "max_tres_pj"):
            value = merge_tres(getattr(row, key) or "", value) if value != "-1" else ""
        elif key in _NULLABLE:
            value = None if int(value) < 0 else int(value)
        elif key == "priority":
            value = max(0, int(value))
        elif key == "usage_factor":
            value = float(value)
            if value < 0:
                raise bad(f" Invalid UsageFactor: {value}")
        elif key == "idle_gpu_policy":  # slurmlite.idlegpus; "-1" (as Slurm's limits): none
            value = "" if value.strip() in ("-1", "") else _idle_gpu_policy(value)
        setattr(row, key, value)


def _idle_gpu_policy(text: str) -> str:
    """A QOS's IdleGpuPolicy, checked, in the form slurm.conf takes (``off`` or k=v,...)."""
    try:
        found = idlegpus.settings(text)
    except ValueError as e:
        raise bad(f" Invalid IdleGpuPolicy: {e}") from None
    return ",".join(k if not v else f"{k}={v}" for k, v in found.items())


def _level(text: str) -> str:
    level = LEVELS.get(text.strip().lower())
    if level is None:
        raise bad(f" Invalid AdminLevel: {text} (None, Operator or Administrator)")
    return level


def _lines(items: Iterable[str]) -> str:
    return "\n".join(f"  {item}" for item in items)
