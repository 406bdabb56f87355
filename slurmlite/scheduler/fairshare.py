"""Fair-share: how far each user is below or above the share they were promised.

The association tree (spec §3) has ``root`` at the top, accounts (and
sub-accounts) below it and users as leaves.  Each association has *raw
shares* (``sacctmgr ... fairshare=N``, or ``parent``) and *raw usage*
(decayed billing-seconds, ``usage.py``; an account's usage is its own plus
its children's).  From these two numbers per node come the values ``sshare``
prints and the fair-share factor, in [0, 1], that priority weighs.

Two algorithms, chosen by ``PriorityFlags``:

* **Fair Tree** (default).  At every level, for each child:
  ``S = shares / sum of the level's shares`` (NormShares),
  ``U = usage / parent's usage`` (EffectvUsage) and ``LF = S / U`` (LevelFS;
  U = 0 gives infinity, S = 0 gives 0).  Walk the tree from root, visiting the
  children of each level in falling LF order (users before accounts on equal
  LF); the k-th user reached gets rank ``N - k + 1`` out of N users, and factor
  ``rank / N``.  Users tied on LF share a rank, and an account tied with the
  sibling before it hands that tie down to its first child.  So every user of
  an under-served account outranks every user of a more-served sibling.
* **Classic** (``NO_FAIR_TREE``).  ``S`` is the product of the level shares
  from the user up to root (NormShares); usage is normalised to root's
  (NormUsage ``u``), then blended with the parent's effective usage:
  ``UE = u + (UE_parent - u) * level share`` (``UE = u`` right under root);
  factor ``2 ** (-UE / S / FairShareDampeningFactor)``: 0.5 means "used
  exactly its share".

``FairShare=parent`` (shares None here) makes an association borrow its
parent's: such an account is transparent — its children join the level
above it — and such a user ranks first in its level (LF = infinity).

Worked example (spec §3.4): root -> vision (3 shares) -> alice (1, 600
billing-s), bob (1, 0); root -> nlp (1) -> carol (1, 400)::

                 Fair Tree: S     U     LF     factor | classic: S     UE   factor
    vision                  0.75  0.6   1.25          |           0.75  0.6
    nlp                     0.25  0.4   0.625         |           0.25  0.4
    alice                   0.5   1.0   0.5    2/3    |           0.375 0.6  2^-1.6
    bob                     0.5   0.0   inf    3/3    |           0.375 0.3  2^-0.8
    carol                   1.0   1.0   1.0    1/3    |           0.25  0.4  2^-1.6

Classic ties alice with carol; Fair Tree puts alice first because her
account used less than its share.

Deviation note: Slurm's documentation says sibling accounts tied on LF have
their children merged before ranking; Slurm 22.05's code never merges (its
tie count stops at the first account), which is what this module does by
default.  ``merge_tied_accounts=True`` gives the documented behaviour.

Reference: ``S:doc/html/fair_tree.shtml``, ``S:doc/html/classic_fair_share.shtml``,
``S:src/plugins/priority/multifactor/fair_tree.c``,
``S:src/plugins/priority/multifactor/priority_multifactor.c``
(``_set_usage_efctv``, ``priority_p_calc_fs_factor``),
``S:src/common/assoc_mgr.c`` (share normalisation, ``assoc_mgr_get_shares``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from slurmlite.scheduler.fairtree import NO_VAL, FairTreeNode, rank_users

ROOT = "root"


@dataclass(frozen=True)
class Assoc:
    """One association: an account (``user=False``) or a user of its parent account."""

    name: str
    shares: int | None = 1  # None: FairShare=parent
    usage: float = 0.0  # raw usage charged here (users); accounts add their children's
    children: tuple[Assoc, ...] = ()
    user: bool = False


def account(name: str, shares: int | None = 1, *children: Assoc, usage: float = 0.0) -> Assoc:
    return Assoc(name, shares, usage, tuple(children))


def user(name: str, shares: int | None = 1, usage: float = 0.0) -> Assoc:
    return Assoc(name, shares, usage, (), user=True)


def root(*children: Assoc, usage: float = 0.0) -> Assoc:
    return Assoc(ROOT, 1, usage, tuple(children))


@dataclass(frozen=True)
class AssocRecord:
    """A flat association row (as a store keeps it): an account row has no user."""

    account: str
    user: str | None = None
    parent: str | None = None  # account rows: the parent account (None: root)
    shares: int | None = 1
    usage: float = 0.0


def tree_from_records(records: Iterable[AssocRecord]) -> Assoc:
    """Build the tree from flat rows; accounts without a row hang off root with 1 share."""
    rows = list(records)
    accounts = {r.account: r for r in rows if r.user is None}
    kids: dict[str, list[AssocRecord]] = {}
    for r in rows:
        if r.user is None and r.account == ROOT:
            continue
        owner = r.account if r.user is not None else (r.parent or ROOT)
        kids.setdefault(owner, []).append(r)
    for name in list(kids):
        if name != ROOT and name not in accounts:  # users of an account never added
            accounts[name] = AssocRecord(name)
            kids.setdefault(ROOT, []).append(accounts[name])

    def build(r: AssocRecord, seen: frozenset[str]) -> Assoc:
        if r.user is not None:
            return user(r.user, r.shares, r.usage)
        if r.account in seen:
            raise ValueError(f"account '{r.account}' is its own ancestor")
        below = tuple(build(k, seen | {r.account}) for k in kids.get(r.account, []))
        return Assoc(r.account, r.shares, r.usage, below)

    top = accounts.get(ROOT, AssocRecord(ROOT))
    return build(AssocRecord(ROOT, usage=top.usage), frozenset())


@dataclass(frozen=True)
class ShareRow:
    """One ``sshare`` line; None = the column is blank on this row."""

    account: str
    user: str | None
    depth: int  # sshare indents the Account column one space per level
    raw_shares: int | str | None  # "parent" for FairShare=parent, None on root
    norm_shares: float
    raw_usage: float  # sshare prints int(raw_usage)
    norm_usage: float | None
    effective_usage: float
    fairshare: float | None  # Fair Tree: users only; classic: every row
    level_fs: float | None  # Fair Tree only (inf prints "inf")


@dataclass(frozen=True)
class FairShare:
    """All rows in tree order (what ``sshare -a -l`` shows) and the users' factors."""

    rows: tuple[ShareRow, ...]
    factors: Mapping[tuple[str, str], float] = field(default_factory=dict)

    def factor(self, account_name: str, user_name: str) -> float:
        """The fair-share factor of a job of ``user_name`` under ``account_name``
        (0 without such an association, as Slurm gives)."""
        return self.factors.get((account_name, user_name), 0.0)


class _Node(FairTreeNode):
    def __init__(self, assoc: Assoc, parent: _Node | None, depth: int) -> None:
        super().__init__(assoc.user)
        self.assoc, self.parent, self.depth = assoc, parent, depth
        self.account = parent.assoc.name if assoc.user and parent else assoc.name
        self.children = [_Node(c, self, depth + 1) for c in _tree_order(assoc.children)]
        self.raw = float(assoc.usage) + sum(c.raw for c in self.children)
        up = parent
        while up is not None and up.assoc.shares is None and up.parent is not None:
            up = up.parent
        self.fs_parent = up  # nearest ancestor that has shares of its own (Slurm's fs_assoc)
        # the level below: the nodes whose fs_parent is this one (``level`` holds the same
        # nodes typed for the ranking walk)
        self.members: list[_Node] = []
        self.level_shares = 0  # sum of the shares of this node's level
        self.norm_shares = self.norm_usage = self.efctv = 0.0

    def walk(self) -> Iterable[_Node]:
        yield self
        for c in self.children:
            yield from c.walk()


def _tree_order(children: Iterable[Assoc]) -> list[Assoc]:
    """Users before sub-accounts, each by name: the order sshare and sacctmgr list."""
    return sorted(children, key=lambda a: (not a.user, a.name))


def _fs_factor(efctv: float, norm_shares: float, dampening: float) -> float:
    return 0.0 if norm_shares <= 0 else 2.0 ** (-(efctv / norm_shares) / dampening)


def compute_fairshare(
    tree: Assoc,
    *,
    fair_tree: bool = True,
    dampening: float = 1.0,
    merge_tied_accounts: bool = False,
) -> FairShare:
    """Every row's NormShares, NormUsage, EffectvUsage, FairShare, LevelFS.

    ``fair_tree=False`` is ``PriorityFlags=NO_FAIR_TREE``; ``dampening`` is
    ``FairShareDampeningFactor`` (classic only).
    """
    top = _Node(tree, None, 0)
    nodes = list(top.walk())
    for n in nodes[1:]:  # each level: the nodes sharing an fs parent, in tree order
        assert n.fs_parent is not None
        n.fs_parent.members.append(n)
        n.fs_parent.level.append(n)
    for n in nodes:
        total = sum(m.assoc.shares for m in n.members if m.assoc.shares is not None)
        for m in n.members:
            m.level_shares = total
        n.norm_usage = min(1.0, n.raw / top.raw) if top.raw else 0.0
    top.efctv = 1.0
    if fair_tree:
        _fair_tree(top, nodes, merge_tied_accounts)
    else:
        _classic(top, nodes, dampening)
    rows = tuple(_row(n, top, fair_tree) for n in nodes)
    factors = {(n.account, n.assoc.name): n.factor for n in nodes if n.assoc.user}
    return FairShare(rows, factors)


def _fair_tree(top: _Node, nodes: list[_Node], merge: bool) -> None:
    for n in nodes[1:]:
        fs = n if n.assoc.shares is not None else n.fs_parent
        assert fs is not None
        n.norm_shares = (fs.assoc.shares or 0) / fs.level_shares if fs.level_shares else 0.0
        base = n.fs_parent.raw if n.fs_parent else 0.0
        n.efctv = n.raw / base if base else 0.0
        if n.assoc.shares is None:
            n.level_fs = float("inf") if n.assoc.user else NO_VAL
        elif n.norm_shares == 0:
            n.level_fs = 0.0
        else:
            n.level_fs = n.norm_shares / n.efctv if n.efctv else float("inf")
    rank_users(top, sum(1 for n in nodes if n.assoc.user), merge_tied_accounts=merge)


def _classic(top: _Node, nodes: list[_Node], dampening: float) -> None:
    top.norm_shares = 1.0
    for n in nodes[1:]:  # tree order: every fs parent is done before its level
        fsp = n.fs_parent
        assert fsp is not None
        if n.assoc.shares is None:
            n.norm_shares = fsp.norm_shares
        else:
            s, x = 1.0, n
            while x.parent is not None:
                if x.assoc.shares is not None:
                    s = s * x.assoc.shares / x.level_shares if x.level_shares else 0.0
                x = x.parent
            n.norm_shares = s
        if fsp is top:
            n.efctv = n.norm_usage
        elif n.assoc.shares is None or not n.level_shares:
            n.efctv = fsp.efctv
        else:
            u = n.norm_usage
            n.efctv = u + (fsp.efctv - u) * n.assoc.shares / n.level_shares
    for n in nodes:
        n.factor = _fs_factor(n.efctv, n.norm_shares, dampening)
    for n in nodes:  # a FairShare=parent user's jobs use the factor of its fs parent
        if n.assoc.user and n.assoc.shares is None and n.fs_parent is not None:
            n.factor = _fs_factor(n.fs_parent.efctv, n.fs_parent.norm_shares, dampening)


def _row(n: _Node, top: _Node, fair_tree: bool) -> ShareRow:
    is_root = n is top
    if fair_tree:
        fairshare = n.factor if n.assoc.user else None
        level = None if is_root or n.assoc.shares is None else n.level_fs
    else:
        fairshare, level = n.factor, None
    return ShareRow(
        account=n.account,
        user=n.assoc.name if n.assoc.user else None,
        depth=n.depth,
        raw_shares=None if is_root else ("parent" if n.assoc.shares is None else n.assoc.shares),
        norm_shares=0.0 if is_root and fair_tree else n.norm_shares,
        raw_usage=n.raw,
        norm_usage=None if is_root else n.norm_usage,
        effective_usage=n.efctv,
        fairshare=fairshare,
        level_fs=level,
    )
