"""Fair-share factors and sshare's numbers (slurmlite/scheduler/fairshare.py,
fairtree.py): Fair Tree and classic as Slurm 22.05 computes them (spec §3)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmlite.scheduler.fairshare import (
    Assoc,
    AssocRecord,
    account,
    compute_fairshare,
    root,
    tree_from_records,
    user,
)


def spec_tree(alice: float = 600, bob: float = 0, carol: float = 400) -> Assoc:
    """Spec §3.4: root -> vision (3) -> alice (1), bob (1); root -> nlp (1) -> carol (1)."""
    return root(
        account("vision", 3, user("alice", 1, alice), user("bob", 1, bob)),
        account("nlp", 1, user("carol", 1, carol)),
    )


def by_name(rows):
    return {(r.account, r.user): r for r in rows}


# ------------------------------------------------------- spec §3.4 worked example


def test_spec_example_fair_tree():
    rows = by_name(compute_fairshare(spec_tree()).rows)
    # (S, U, LF) per row: S within the level, U = usage / parent's usage, LF = S / U
    expect = {
        ("vision", None): (0.75, 0.6, 1.25),  # 3/4, 600/1000
        ("nlp", None): (0.25, 0.4, 0.625),  # 1/4, 400/1000
        ("vision", "alice"): (0.5, 1.0, 0.5),  # 1/2, 600/600
        ("vision", "bob"): (0.5, 0.0, float("inf")),
        ("nlp", "carol"): (1.0, 1.0, 1.0),
    }
    for key, (s, u, lf) in expect.items():
        r = rows[key]
        assert (r.norm_shares, r.effective_usage, r.level_fs) == pytest.approx((s, u, lf)), key
    # walk: vision (1.25) before nlp; in vision bob (inf) before alice: ranks 3, 2, 1 of 3
    got = {k: rows[k].fairshare for k in [("vision", "bob"), ("vision", "alice"), ("nlp", "carol")]}
    assert got == pytest.approx(
        {("vision", "bob"): 1.0, ("vision", "alice"): 2 / 3, ("nlp", "carol"): 1 / 3}
    )
    assert rows[("vision", None)].fairshare is None  # accounts show no FairShare
    assert rows[("root", None)].level_fs is None and rows[("root", None)].norm_usage is None


def test_spec_example_classic():
    rows = by_name(compute_fairshare(spec_tree(), fair_tree=False).rows)
    # S_norm = product of level shares; UE = u + (UE_parent - u) x level share
    expect = {
        ("vision", "alice"): (0.375, 0.6, 2**-1.6),  # 3/4 x 1/2; 0.6 + (0.6-0.6)/2; 0.329877
        ("vision", "bob"): (0.375, 0.3, 2**-0.8),  # 0 + (0.6 - 0)/2 = 0.3; 0.574349
        ("nlp", "carol"): (0.25, 0.4, 2**-1.6),  # 0.4 + (0.4-0.4) x 1
    }
    for key, (s, ue, f) in expect.items():
        r = rows[key]
        assert (r.norm_shares, r.effective_usage, r.fairshare) == pytest.approx((s, ue, f)), key
    assert f"{rows[('vision', 'alice')].fairshare:f}" == "0.329877"
    assert f"{rows[('vision', 'bob')].fairshare:f}" == "0.574349"
    assert rows[("vision", "alice")].level_fs is None  # classic has no LevelFS


def test_classic_ties_alice_and_carol_but_fair_tree_does_not():
    tree = spec_tree()
    classic = compute_fairshare(tree, fair_tree=False)
    assert classic.factor("vision", "alice") == pytest.approx(classic.factor("nlp", "carol"))
    fair = compute_fairshare(tree)
    assert fair.factor("vision", "alice") > fair.factor("nlp", "carol")


def test_dampening_divides_the_exponent():
    # alice: 2^(-(0.6/0.375)/2) = 2^-0.8
    fs = compute_fairshare(spec_tree(), fair_tree=False, dampening=2)
    assert fs.factor("vision", "alice") == pytest.approx(2**-0.8)


def test_unknown_association_gets_0():
    assert compute_fairshare(spec_tree()).factor("nlp", "alice") == 0.0


# ---------------------------------------------------- golden: sshare -a -l (22.05)


def golden_tree() -> Assoc:
    """The cluster of 50_sshare*.txt: root -> root (user), acct_a, acct_b (1 share
    each), each account with users alice and root (1 share each).

    The golden RawUsage (alice 68, root 78) was charged when jobs ended, after the
    last PriorityCalcPeriod recalculation, so its EffectvUsage (0.102723) is from
    an earlier usage state that the file does not print.  We rebuild that state
    from the file's own LevelFS: alice's U = S / LF = 0.5 / 4.867477."""
    u = 0.5 / 4.867477
    return root(
        user("root"),
        account("acct_a", 1, user("alice", 1, u * 147), user("root", 1, (1 - u) * 147)),
        account("acct_b", 1, user("alice"), user("root")),
    )


def test_golden_sshare_columns():
    def text(v):
        return "" if v is None else f"{v:f}"

    rows = compute_fairshare(golden_tree()).rows
    got = [
        (
            " " * r.depth + r.account,
            r.user or "",
            text(r.norm_shares),
            text(r.effective_usage),
            text(r.fairshare),
            text(r.level_fs),
        )
        for r in rows
    ]
    # Account, User, NormShares, EffectvUsage, FairShare, LevelFS as sshare -a -l prints them
    assert got == [
        ("root", "", "0.000000", "1.000000", "", ""),
        (" root", "root", "0.333333", "0.000000", "1.000000", "inf"),
        (" acct_a", "", "0.333333", "1.000000", "", "0.333333"),
        ("  acct_a", "alice", "0.500000", "0.102723", "0.400000", "4.867477"),
        ("  acct_a", "root", "0.500000", "0.897277", "0.200000", "0.557241"),
        (" acct_b", "", "0.333333", "0.000000", "", "inf"),
        ("  acct_b", "alice", "0.500000", "0.000000", "1.000000", "inf"),
        ("  acct_b", "root", "0.500000", "0.000000", "1.000000", "inf"),
    ]
    # RawShares blank on root, 1 elsewhere; RawUsage is what was charged (int in sshare)
    assert [r.raw_shares for r in rows] == [None, 1, 1, 1, 1, 1, 1, 1]
    assert int(rows[0].raw_usage) == 147


def test_golden_tie_passes_from_an_account_to_its_first_user():
    # acct_b (LF inf) ties with the root user before it (inf), so acct_b's users keep
    # rank 5 of 5 instead of taking 4 and 3: the golden shows 1.000000 for both.
    fs = compute_fairshare(golden_tree())
    assert fs.factor("acct_b", "alice") == fs.factor("acct_b", "root") == 1.0


# ------------------------------------------------------------ FairShare=parent


def test_parent_user_ranks_first_in_its_account_and_borrows_in_classic():
    tree = root(
        account("lab", 1, user("pi", None, 500), user("stud", 1, 10)),
        account("other", 1, user("x", 1, 10)),
    )
    fair = compute_fairshare(tree)
    rows = by_name(fair.rows)
    assert rows[("lab", "pi")].raw_shares == "parent"
    assert rows[("lab", "pi")].level_fs is None  # sshare leaves it blank
    # lab: S 0.5, U 510/520 -> LF 0.51; other: 0.5 / (10/520) = 26 -> other first (3 of 3)
    # in lab pi (LF inf) before stud: 2 and 1 -> 2/3 and 1/3
    assert (fair.factor("other", "x"), fair.factor("lab", "pi")) == (1.0, pytest.approx(2 / 3))
    assert fair.factor("lab", "stud") == pytest.approx(1 / 3)
    classic = compute_fairshare(tree, fair_tree=False)
    # the parent user's jobs use lab's own factor: S 0.5, UE = 510/520
    assert classic.factor("lab", "pi") == pytest.approx(2 ** -((510 / 520) / 0.5))


def test_parent_account_is_transparent():
    # group (FairShare=parent) disappears: its users a, b join root's level next to c
    tree = root(account("group", None, user("a", 1, 100), user("b", 1, 0)), user("c", 2, 100))
    rows = by_name(compute_fairshare(tree).rows)
    # level shares 1 + 1 + 2 = 4: a 0.25, b 0.25, c 0.5; usage over root's 200
    assert rows[("group", "a")].norm_shares == 0.25 and rows[("root", "c")].norm_shares == 0.5
    assert rows[("group", "a")].effective_usage == 0.5
    # LF: b inf, c 0.5/0.5 = 1, a 0.25/0.5 = 0.5 -> 3/3, 2/3, 1/3
    assert rows[("group", "b")].fairshare == 1.0
    assert rows[("root", "c")].fairshare == pytest.approx(2 / 3)
    assert rows[("group", "a")].fairshare == pytest.approx(1 / 3)
    assert rows[("group", None)].raw_shares == "parent" and rows[("group", None)].level_fs is None


# ------------------------------------------------------------ ties and corners


def test_tied_accounts_follow_slurms_code_unless_merging_is_asked():
    # p and q both LF 1.0 (S 0.5, U 100/200).  p: p1 (LF .5/.25 = 2), p2 (.5/.75 = 0.67);
    # q: q1 (LF .5/.4 = 1.25), q2 (.5/.6 = 0.83).  4 users.
    tree = root(
        account("p", 1, user("p1", 1, 25), user("p2", 1, 75)),
        account("q", 1, user("q1", 1, 40), user("q2", 1, 60)),
    )
    code = compute_fairshare(tree)
    # Slurm 22.05: p's users 4, 3; q ties with p, so q1 keeps rank 3, q2 takes 1
    assert [code.factor(a, u) for a, u in [("p", "p1"), ("p", "p2"), ("q", "q1"), ("q", "q2")]] == [
        1.0,
        0.75,
        0.75,
        0.25,
    ]
    merged = compute_fairshare(tree, merge_tied_accounts=True)
    # documented: all four ranked together: p1 (2), q1 (1.25), q2 (0.83), p2 (0.67)
    assert [
        merged.factor(a, u) for a, u in [("p", "p1"), ("q", "q1"), ("q", "q2"), ("p", "p2")]
    ] == [
        1.0,
        0.75,
        0.5,
        0.25,
    ]


def test_no_usage_anywhere_gives_everyone_1():
    tree = spec_tree(0, 0, 0)
    assert set(compute_fairshare(tree).factors.values()) == {1.0}  # all LF inf, all tied
    assert set(compute_fairshare(tree, fair_tree=False).factors.values()) == {1.0}  # 2^0


def test_zero_shares_rank_last_and_get_0_in_classic():
    tree = root(account("a", 1, user("u", 0, 0), user("v", 1, 100)))
    fair = compute_fairshare(tree)
    assert fair.factor("a", "u") < fair.factor("a", "v")  # LF 0 < LF 1
    assert compute_fairshare(tree, fair_tree=False).factor("a", "u") == 0.0


def test_tree_from_flat_records_equals_the_nested_tree():
    records = [
        AssocRecord("vision", shares=3),
        AssocRecord("nlp"),
        AssocRecord("vision", "alice", usage=600),
        AssocRecord("vision", "bob"),
        AssocRecord("nlp", "carol", usage=400),
    ]
    assert compute_fairshare(tree_from_records(records)) == compute_fairshare(spec_tree())


# ------------------------------------------------------------------ properties


@st.composite
def trees(draw) -> Assoc:
    """Up to 3 accounts (maybe one sub-account) of up to 3 users; small integer
    shares and usages so that ties happen often."""
    shares = st.integers(0, 3)
    usage = st.sampled_from([0, 1, 2, 5, 10])

    def users(prefix: str) -> list[Assoc]:
        n = draw(st.integers(1, 3))
        return [user(f"{prefix}u{i}", draw(shares), draw(usage)) for i in range(n)]

    accounts = []
    for a in range(draw(st.integers(1, 3))):
        below = users(f"a{a}")
        if draw(st.booleans()):
            below.append(account(f"a{a}s", draw(shares), *users(f"a{a}s")))
        accounts.append(account(f"a{a}", draw(shares), *below))
    return root(*accounts)


def users_of(tree: Assoc, acct: str = "root"):
    for child in tree.children:
        if child.user:
            yield acct, child.name
        else:
            yield from users_of(child, child.name)


@given(tree=trees(), fair_tree=st.booleans())
def test_factors_lie_in_0_1_and_fair_tree_ones_are_multiples_of_1_over_n(tree, fair_tree):
    fs = compute_fairshare(tree, fair_tree=fair_tree)
    n = len(list(users_of(tree)))
    assert len(fs.factors) == n
    for value in fs.factors.values():
        assert 0.0 <= value <= 1.0
        if fair_tree:
            assert value * n == pytest.approx(round(value * n))
    if fair_tree:
        assert max(fs.factors.values()) == 1.0  # someone always ranks first


@given(
    tree=trees(),
    fair_tree=st.booleans(),
    pick=st.integers(0, 100),
    extra=st.sampled_from([1, 5, 50]),
)
def test_more_usage_never_raises_a_users_factor(tree, fair_tree, pick, extra):
    who = list(users_of(tree))
    acct, name = who[pick % len(who)]

    def charged(node: Assoc, under: str) -> Assoc:
        if node.user:
            hit = under == acct and node.name == name
            return Assoc(node.name, node.shares, node.usage + (extra if hit else 0), (), True)
        kids = tuple(charged(c, node.name) for c in node.children)
        return Assoc(node.name, node.shares, node.usage, kids)

    before = compute_fairshare(tree, fair_tree=fair_tree).factor(acct, name)
    after = compute_fairshare(charged(tree, "root"), fair_tree=fair_tree).factor(acct, name)
    assert after <= before + 1e-12
