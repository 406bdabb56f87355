"""Fair Tree's ranking walk: users in tree order of LevelFS get rank / N.

Input: every association already knows its ``level_fs`` (LF, see
``fairshare.py``) and the list of associations of the level below it
(``level``: its users, then its accounts, each part in tree order).  The
walk starts at root's level with ``rank = N``, the number of user
associations:

1. sort the level by LF, highest first; on equal LF users come before
   accounts; otherwise keep the given (tree) order (as ``level`` lists users
   first, a stable sort on LF alone does all three);
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
from operator import attrgetter

NO_VAL = 4294967294.0  # where Slurm starts "previous LF" (and a FairShare=parent account's LF)
_LEVEL_FS = attrgetter("level_fs")


class FairTreeNode:
    """What the walk reads and writes on an association."""

    def __init__(self, is_user: bool) -> None:
        self.is_user = is_user
        self.level: list[FairTreeNode] = []  # the level below: users, then accounts
        self.level_fs = 0.0
        self.factor = 0.0


def rank_users(top: FairTreeNode, users: int, *, merge_tied_accounts: bool = False) -> None:
    """Set ``factor`` on every user below ``top``; ``users`` = N (all user associations).

    ``merge_tied_accounts`` ranks the children of sibling accounts with equal
    LF together, as Slurm's documentation describes (its code does not).
    """
    _visit(top.level, False, users, users, users, merge_tied_accounts)


def _visit(
    siblings: Sequence[FairTreeNode],
    account_tied: bool,
    rank: int,
    untied: int,  # the "rank without ties" counter: what the next untied user takes
    users: int,
    merge: bool,
) -> tuple[int, int]:
    """Rank the users at and below ``siblings``; give back ``rank`` and ``untied``."""
    # by LF, highest first; the users come first in ``siblings``, and a stable sort keeps
    # them ahead of accounts with the same LF (``reverse`` keeps ties in order too)
    ordered = sorted(siblings, key=_LEVEL_FS, reverse=True) if len(siblings) > 1 else siblings
    previous = NO_VAL
    first_tied = account_tied  # only the first node inherits its account's tie
    i, end = 0, len(ordered)
    while i < end:
        node = ordered[i]
        lf = node.level_fs
        tied = first_tied or previous == lf
        first_tied = False
        if node.is_user:
            if not tied:
                rank = untied
            node.factor = rank / users
            untied -= 1
            i += 1
        elif not merge:
            rank, untied = _visit(node.level, tied, rank, untied, users, merge)
            i += 1
        else:  # the sibling accounts right after this one with the same LF join it
            j = i + 1
            while j < end and not ordered[j].is_user and ordered[j].level_fs == lf:
                j += 1
            below = [c for g in ordered[i:j] for c in g.level]
            if j - i > 1:  # users first again
                below = [c for c in below if c.is_user] + [c for c in below if not c.is_user]
            rank, untied = _visit(below, tied, rank, untied, users, merge)
            i = j
        previous = lf
    return rank, untied
