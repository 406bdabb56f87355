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

Computing it again and again: ``FairShareTree(tree)`` works out once what
only the shape and the shares decide (tree order, levels, NormShares, the
fixed LF of ``parent`` and zero-share nodes); ``.factors(usages)`` then takes
the users' usages, keyed ``(account, user)``, and does only the rest (usage
sums, EffectvUsage, LF and the ranking walk, or classic's blend and
``2 ** -x``), with no sshare rows: about a tenth of ``compute_fairshare``'s
cost, for a caller (the trace replay) that recomputes every
``PriorityCalcPeriod`` on a tree that only gains users now and then.
``compute_fairshare`` is a ``FairShareTree`` plus the rows, so both give the
very same factors.

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
        self.own = float(assoc.usage)  # usage charged here; ``raw`` adds the children's
        self.raw = self.own
        up = parent
        while up is not None and up.assoc.shares is None and up.parent is not None:
            up = up.parent
        self.fs_parent = up  # nearest ancestor that has shares of its own (Slurm's fs_assoc)
        # the level below: the nodes whose fs_parent is this one, in tree order (``level``
        # holds the same nodes, users first, for the ranking walk)
        self.members: list[_Node] = []
        self.level_shares = 0  # sum of the shares of this node's level
        self.ft_shares = self.classic_shares = 0.0  # NormShares under each algorithm
        self.norm_usage = self.efctv = 0.0

    def walk(self) -> Iterable[_Node]:
        yield self
        for c in self.children:
            yield from c.walk()


def _tree_order(children: Iterable[Assoc]) -> list[Assoc]:
    """Users before sub-accounts, each by name: the order sshare and sacctmgr list."""
    return sorted(children, key=lambda a: (not a.user, a.name))


def _fs_factor(efctv: float, norm_shares: float, dampening: float) -> float:
    return 0.0 if norm_shares <= 0 else 2.0 ** (-(efctv / norm_shares) / dampening)


class FairShareTree:
    """A tree's shape, built once, whose users' factors are computed again and again.

    Everything that depends only on the shape and the shares (tree order, fs
    parents, levels, both NormShares, the fixed LevelFS of FairShare=parent
    and zero-share nodes) is worked out here; ``factors`` then takes new user
    usages and does only the work that follows them: sum them up the tree,
    EffectvUsage, LevelFS and the ranking walk (or classic's blend and
    ``2 ** -x``).  ``compute_fairshare`` is this plus the ``sshare`` rows, so
    the two give the very same factors.  A new association needs a new
    ``FairShareTree``.
    """

    def __init__(self, tree: Assoc) -> None:
        self.top = top = _Node(tree, None, 0)
        self.nodes = nodes = list(top.walk())
        for n in nodes[1:]:  # each level: the nodes sharing an fs parent, in tree order
            assert n.fs_parent is not None
            n.fs_parent.members.append(n)
        for n in nodes:
            total = sum(m.assoc.shares for m in n.members if m.assoc.shares is not None)
            for m in n.members:
                m.level_shares = total
            # the ranking walk sorts a level by LF, users first on equal LF, else in
            # tree order: handing it the users first lets it sort by LF alone
            n.level = [m for m in n.members if m.is_user] + [m for m in n.members if not m.is_user]
        top.efctv = top.classic_shares = 1.0
        for n in nodes[1:]:  # tree order: every fs parent is done before its level
            fs = n if n.assoc.shares is not None else n.fs_parent
            assert fs is not None and n.fs_parent is not None
            n.ft_shares = (fs.assoc.shares or 0) / fs.level_shares if fs.level_shares else 0.0
            if n.assoc.shares is None:
                n.classic_shares = n.fs_parent.classic_shares
                n.level_fs = float("inf") if n.assoc.user else NO_VAL
            else:
                s, x = 1.0, n
                while x.parent is not None:
                    if x.assoc.shares is not None:
                        s = s * x.assoc.shares / x.level_shares if x.level_shares else 0.0
                    x = x.parent
                n.classic_shares = s
                if n.ft_shares == 0:
                    n.level_fs = 0.0
        self.users = [n for n in nodes if n.assoc.user]
        self.keys = [(n.account, n.assoc.name) for n in self.users]
        # what each call walks, worked out once:
        self._charged = list(zip(self.users, self.keys, strict=True))
        self._sums = [(n, n.own, n.children) for n in reversed(nodes) if not n.assoc.user]
        # Fair Tree: (node, fs parent, NormShares where LF follows the usage, else None)
        self._fair = [
            (n, n.fs_parent, n.ft_shares if n.assoc.shares is not None and n.ft_shares else None)
            for n in nodes[1:]
            if n.fs_parent is not None
        ]
        # classic: right under root EffectvUsage is NormUsage; below it blends with the
        # fs parent's by the level share (shares None: no blend, the parent's as is)
        self._direct = [n for n in nodes[1:] if n.fs_parent is top]
        self._blend = [
            (n, n.fs_parent, n.assoc.shares if n.level_shares else None, n.level_shares)
            for n in nodes[1:]
            if n.fs_parent is not top
        ]
        # (node, whose EffectvUsage and NormShares give its factor): a FairShare=parent
        # user's jobs use its fs parent's
        self._scored = [
            (n, n.fs_parent if n.assoc.user and n.assoc.shares is None and n.fs_parent else n)
            for n in nodes
        ]
        self._scored_users = [(n, by) for n, by in self._scored if n.assoc.user]

    def factors(
        self,
        usages: Mapping[tuple[str, str], float] | None = None,
        *,
        fair_tree: bool = True,
        dampening: float = 1.0,
        merge_tied_accounts: bool = False,
    ) -> dict[tuple[str, str], float]:
        """Each user's factor, keyed ``(account, user)``: what ``compute_fairshare``
        gives for this tree with these users' usages (a user ``usages`` lacks
        keeps the tree's)."""
        self._charge(usages)
        if fair_tree:
            self._fair_tree(merge_tied_accounts)
        else:
            self._classic(dampening, self._scored_users)
        return self._factors()

    def _factors(self) -> dict[tuple[str, str], float]:
        return dict(zip(self.keys, [n.factor for n in self.users], strict=True))

    def _charge(self, usages: Mapping[tuple[str, str], float] | None) -> None:
        """Raw usage: each user's, and each account's own plus its children's."""
        if usages is None:
            for n, _ in self._charged:
                n.raw = n.own
        else:
            get = usages.get
            for n, key in self._charged:
                n.raw = float(get(key, n.own))
        for n, own, children in self._sums:  # children before their parent
            n.raw = own + sum([c.raw for c in children])

    def _norm_usage(self) -> None:
        top_raw = self.top.raw
        for n in self.nodes:
            n.norm_usage = min(1.0, n.raw / top_raw) if top_raw else 0.0

    def _fair_tree(self, merge: bool) -> None:
        inf = float("inf")
        for n, fsp, shares in self._fair:
            base = fsp.raw
            n.efctv = efctv = n.raw / base if base else 0.0
            if shares is not None:
                n.level_fs = shares / efctv if efctv else inf
        rank_users(self.top, len(self.users), merge_tied_accounts=merge)

    def _classic(self, dampening: float, scored: list[tuple[_Node, _Node]]) -> None:
        self._norm_usage()
        for n in self._direct:
            n.efctv = n.norm_usage
        for n, fsp, shares, level_shares in self._blend:  # tree order: fs parents first
            if shares is None:
                n.efctv = fsp.efctv
            else:
                u = n.norm_usage
                n.efctv = u + (fsp.efctv - u) * shares / level_shares
        for n, by in scored:
            n.factor = _fs_factor(by.efctv, by.classic_shares, dampening)


def compute_fairshare(
    tree: Assoc,
    *,
    fair_tree: bool = True,
    dampening: float = 1.0,
    merge_tied_accounts: bool = False,
) -> FairShare:
    """Every row's NormShares, NormUsage, EffectvUsage, FairShare, LevelFS.

    ``fair_tree=False`` is ``PriorityFlags=NO_FAIR_TREE``; ``dampening`` is
    ``FairShareDampeningFactor`` (classic only).  For the factors alone, again
    and again as usages change, use ``FairShareTree``.
    """
    shape = FairShareTree(tree)
    shape._charge(None)
    if fair_tree:
        shape._fair_tree(merge_tied_accounts)
        shape._norm_usage()
    else:
        shape._classic(dampening, shape._scored)
    rows = tuple(_row(n, shape.top, fair_tree) for n in shape.nodes)
    return FairShare(rows, shape._factors())


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
        norm_shares=n.ft_shares if fair_tree else n.classic_shares,
        raw_usage=n.raw,
        norm_usage=None if is_root else n.norm_usage,
        effective_usage=n.efctv,
        fairshare=fairshare,
        level_fs=level,
    )
