"""The fair-share table that ``sshare`` prints (``GET /v1/shares``).

Every association of the store, in tree order (what ``sshare -a -l``
shows), with the numbers of ``slurmlite.scheduler.fairshare`` computed
afresh on each request:

1. the associations and their usage come from the accounts service
   (``Accounts.records``), the decayed billing-seconds that the priority
   service charged up to each job's ``charged_until`` (or the job's end);
2. what the next calculation will charge is added now: each job that ran
   since its last charge (running, or ended since the last decay) adds
   ``(until - charged_until) x billing x UsageFactor`` (``until``: now, or
   its end) to its user's row (the account's own row for a user without
   one): ``controller.accounting.usage_charge.owed``, the next charge's own
   selection and billing, but undecayed (a
   calculation period is short against a half-life); so RawUsage grows while
   a job runs and when it ends, not only at each ``PriorityCalcPeriod``;
3. Fair Tree, or classic with ``PriorityFlags=NO_FAIR_TREE``
   (``FairShareDampeningFactor``), over that tree;
4. TRESRunMins: for each association, every running job below it adds
   ``count x minutes left`` per TRES; a job without a time limit counts
   Slurm's INFINITE (4294967295) minutes, so a 4-CPU unlimited job shows
   ``cpu=17179869180`` as in golden ``50_sshare_a_l``.

Worked example: alice (acct_a) has 100 billing-s charged and a 2-CPU job
running for 30 s since its last charge, with no billing weights (billing =
CPUs) -> alice's RawUsage 100 + 30 x 2 = 160.

Which rows a caller sees (own rows only, ``-u``, ``-A``) is the command's
choice, as in Slurm where sshare sends the user and account lists: this
route answers every row to every authenticated user.  Slurm differs in
one respect: its RawUsage is charged at job end while its FairShare and
EffectvUsage wait for the next calculation; here all columns are of the
same moment.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.orm import Session

from controller.accounting.priority_facts import PolicyFacts
from controller.accounting.usage_charge import (
    UsageSettings,
    charged_association,
    last_charge,
    owed,
)
from slurmlite.config import Config
from slurmlite.protocol_policy import ShareInfo, SharesAnswer
from slurmlite.scheduler.billing import BUILTIN_TRES
from slurmlite.scheduler.fairshare import (
    AssocRecord,
    FairShare,
    compute_fairshare,
    tree_from_records,
)

INFINITE_MINUTES = 4294967295  # Slurm's INFINITE: the time left of an UNLIMITED job


class RunningCharge:
    """A job that ran since its last charge: its TRES, billing, what it owes and, if
    running, its minutes left."""

    __slots__ = ("key", "tres", "billing", "uncharged", "minutes_left")

    def __init__(
        self,
        key: tuple[str, str],
        tres: dict[str, float],
        billing: float,
        uncharged: float,
        minutes_left: int,
    ) -> None:
        self.key, self.tres, self.billing = key, tres, billing
        self.uncharged, self.minutes_left = uncharged, minutes_left


def share_table(
    s: Session,
    cfg: Config,
    records: Iterable[AssocRecord],
    facts: PolicyFacts,
    usage: UsageSettings,
    now: float,
) -> SharesAnswer:
    """The answer of ``GET /v1/shares`` (module doc, steps 1-4): ``records`` are the
    associations with their charged usage, ``facts`` and ``usage`` the priority
    service's (``PriorityService.facts()``, ``.usage``)."""
    runs = running_charges(s, facts, usage, now)
    records = with_running_usage(records, runs)
    flags = {f.upper() for f in cfg.priority_flags}
    fair_tree = "NO_FAIR_TREE" not in flags
    fs = compute_fairshare(
        tree_from_records(records),
        fair_tree=fair_tree,
        dampening=float(cfg.fairshare_dampening_factor or 1),
    )
    gpus = "gpu" in cfg.gres_types or any(node.gpus for node in cfg.nodes)
    names = [*BUILTIN_TRES, *(["gres/gpu"] if gpus else [])]
    return SharesAnswer(fair_tree=fair_tree, now=now, rows=share_rows(fs, runs, names))


def running_charges(
    s: Session, facts: PolicyFacts, usage: UsageSettings, now: float
) -> list[RunningCharge]:
    """One ``RunningCharge`` per job that ran since its last charge (module doc, step 2:
    ``controller.accounting.usage_charge.owed``, undecayed); only running ones have minutes
    left."""
    out = []
    for debt in owed(s, now, last_charge(s), facts, usage):
        job = debt.job
        uncharged = max(0.0, debt.until - debt.since) * debt.billing * debt.usage_factor
        left = 0
        if job.state == "RUNNING":
            if job.time_limit is None:
                left = INFINITE_MINUTES
            else:
                left = int(max(0.0, job.time_limit * 60 - (now - job.start_time)) // 60)
        key = (job.account or "", job.user)
        out.append(RunningCharge(key, dict(debt.tres), debt.billing, uncharged, left))
    return out


def with_running_usage(
    records: Iterable[AssocRecord], runs: Iterable[RunningCharge]
) -> list[AssocRecord]:
    """The records with each job's uncharged usage added to its user's row, or to its
    account's own row when the user has none (no account row: not tracked)."""
    rows = list(records)
    known = {(r.account, r.user or "") for r in rows}
    extra: dict[tuple[str, str], float] = {}
    for run in runs:
        key = charged_association(*run.key, known)
        if key is not None and run.uncharged:
            extra[key] = extra.get(key, 0.0) + run.uncharged
    out = []
    for r in rows:
        more = extra.get((r.account, r.user or ""), 0.0)
        if more:
            r = AssocRecord(r.account, r.user, r.parent, r.shares, r.usage + more)
        out.append(r)
    return out


def _run_mins(run: RunningCharge, names: list[str]) -> dict[str, int]:
    counts = {**run.tres, "billing": run.billing}
    return {n: int(counts.get(n, 0) * run.minutes_left) for n in names}


def share_rows(fs: FairShare, runs: list[RunningCharge], names: list[str]) -> list[ShareInfo]:
    """``ShareRow`` values as wire rows, each with the TRESRunMins of its subtree.

    Rows come depth first, so the subtree of an account row is the run of
    rows after it that are deeper than it.
    """
    per_user: dict[tuple[str, str], dict[str, int]] = {}
    for run in runs:
        mins = per_user.setdefault(run.key, dict.fromkeys(names, 0))
        for name, value in _run_mins(run, names).items():
            mins[name] += value
    rows = list(fs.rows)
    own = [per_user.get((r.account, r.user), {}) if r.user is not None else {} for r in rows]
    out = []
    for i, r in enumerate(rows):
        total = dict.fromkeys(names, 0)
        j = i
        while True:
            for name, value in own[j].items():
                total[name] += value
            j += 1
            if r.user is not None or j >= len(rows) or rows[j].depth <= r.depth:
                break
        level_inf = r.level_fs is not None and r.level_fs == float("inf")
        out.append(
            ShareInfo(
                account=r.account,
                user=r.user,
                depth=r.depth,
                raw_shares=r.raw_shares,
                norm_shares=r.norm_shares,
                raw_usage=r.raw_usage,
                norm_usage=r.norm_usage,
                effective_usage=r.effective_usage,
                fairshare=r.fairshare,
                level_fs=None if level_inf else r.level_fs,
                level_fs_inf=level_inf,
                tres_run_mins=total,
            )
        )
    return out
