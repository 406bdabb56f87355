"""Fair Tree's ranking walk: users in tree order of LevelFS get rank / N.

Input: every association already knows its ``level_fs`` (LF, see
``fairshare.py``) and the list of associations of the level below it
(``level``).  The walk starts at root's level with ``rank = N``, the number
of user associations:

1. sort the level by LF, highest first; on equal LF users come before
   accounts; otherwise keep the given (tree) order;
2. go through it: a user takes ``rank`` unless it ties with the sibling
   just before it (same LF), in which case it keeps the previous user's
   rank; either way the "rank without ties" counter drops by one, and the
   next untied user takes that counter;
3. an account is entered in place (depth first).  If it tied with the
   sibling before it, its first child starts out tied as well.

The factor is ``rank / N``, so the top user gets 1.0 and all factors are
multiples of 1/N.

Worked example (the golden ``sshare -a -l``; 5 users): root's level sorts to
``root`` (user, LF inf), ``acct_b`` (inf), ``acct_a`` (0.333).  ``root``
takes rank 5; ``acct_b`` ties with it, so its users alice and root (both LF
inf) keep rank 5; ``acct_a`` does not tie: its alice (LF 4.87) takes the
counter, now 2, and its root (LF 0.56) takes 1.  Factors: 1, 1, 1, 0.4, 0.2.

Reference: ``S:src/plugins/priority/multifactor/fair_tree.c``
(``_calc_tree_fs``), ``S:doc/html/fair_tree.shtml``.
"""

from __future__ import annotations

from collections.abc import Sequence

NO_VAL = 4294967294.0  # where Slurm starts "previous LF" (and a FairShare=parent account's LF)


class FairTreeNode:
    """What the walk reads and writes on an association."""

    def __init__(self, is_user: bool) -> None:
        self.is_user = is_user
        self.level: list[FairTreeNode] = []  # the level below (users and accounts)
        self.level_fs = 0.0
        self.factor = 0.0


class _Counter:
    def __init__(self, users: int) -> None:
        self.users = self.rank = self.untied = users


def rank_users(top: FairTreeNode, users: int, *, merge_tied_accounts: bool = False) -> None:
    """Set ``factor`` on every user below ``top``; ``users`` = N (all user associations).

    ``merge_tied_accounts`` ranks the children of sibling accounts with equal
    LF together, as Slurm's documentation describes (its code does not).
    """
    _visit(top.level, False, _Counter(users), merge_tied_accounts)


def _visit(
    siblings: Sequence[FairTreeNode], account_tied: bool, count: _Counter, merge: bool
) -> None:
    ordered = sorted(siblings, key=lambda n: (-n.level_fs, not n.is_user))
    previous = NO_VAL
    i = 0
    while i < len(ordered):
        node = ordered[i]
        tied = True if (i == 0 and account_tied) else previous == node.level_fs
        if node.is_user:
            if not tied:
                count.rank = count.untied
            node.factor = count.rank / count.users
            count.untied -= 1
            i += 1
        else:
            group = [node]
            while (
                merge
                and i + len(group) < len(ordered)
                and not ordered[i + len(group)].is_user
                and ordered[i + len(group)].level_fs == node.level_fs
            ):
                group.append(ordered[i + len(group)])
            _visit([c for g in group for c in g.level], tied, count, merge)
            i += len(group)
        previous = node.level_fs
