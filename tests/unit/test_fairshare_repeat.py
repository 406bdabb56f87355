"""``FairShareTree``: a tree's shape built once, factors computed again and again
as usages change (slurmlite/scheduler/fairshare.py); every answer must equal
``compute_fairshare``'s on the same tree with the same usages, exactly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slurmlite.scheduler.fairshare import (
    Assoc,
    FairShareTree,
    account,
    compute_fairshare,
    root,
    user,
)

# small integers make ties (the hard part of Fair Tree); floats make everything else
USAGE = st.one_of(
    st.sampled_from([0, 0, 1, 2, 5]),
    st.floats(0, 1e9, allow_nan=False, allow_infinity=False),
)
SHARES = st.one_of(st.integers(0, 3), st.none())  # None: FairShare=parent


@st.composite
def shapes(draw) -> Assoc:
    """Up to three levels of accounts (unique names) with up to 3 users each;
    some shares 0 or ``parent``, some accounts charged usage of their own."""
    count = iter(range(1000))

    def users() -> list[Assoc]:
        return [user(f"u{i}", draw(SHARES), draw(USAGE)) for i in range(draw(st.integers(0, 3)))]

    def accounts(depth: int) -> list[Assoc]:
        if depth == 0:
            return []
        return [
            account(
                f"a{next(count)}",
                draw(SHARES),
                *users(),
                *accounts(depth - 1),
                usage=draw(st.sampled_from([0, 0, 0, 3])),
            )
            for _ in range(draw(st.integers(0, 3)))
        ]

    return root(*users(), *accounts(3))


def with_usages(tree: Assoc, usages: dict[tuple[str, str], float]) -> Assoc:
    """The same tree with its users' usages replaced."""

    def walk(node: Assoc, under: str) -> Assoc:
        if node.user:
            return user(node.name, node.shares, usages.get((under, node.name), node.usage))
        kids = tuple(walk(c, node.name) for c in node.children)
        return Assoc(node.name, node.shares, node.usage, kids)

    return walk(tree, "root")


MODES = st.sampled_from(
    [
        {"fair_tree": True},
        {"fair_tree": True, "merge_tied_accounts": True},
        {"fair_tree": False},
        {"fair_tree": False, "dampening": 2.0},
        {"fair_tree": False, "dampening": 0.5},
    ]
)


@settings(max_examples=150, deadline=None)
@given(tree=shapes(), data=st.data())
def test_factors_equal_compute_fairshare_call_after_call(tree, data):
    shape = FairShareTree(tree)
    keys = list(compute_fairshare(tree).factors)
    assert shape.factors() == compute_fairshare(tree).factors  # no usages: the tree's
    for _ in range(4):  # one shape, several usages and modes in turn: nothing stale
        mode = data.draw(MODES)
        usages = {k: data.draw(USAGE) for k in keys if data.draw(st.booleans())}
        got = shape.factors(usages, **mode)
        assert got == compute_fairshare(with_usages(tree, usages), **mode).factors
        assert list(got) == keys  # in tree order, as compute_fairshare lists them


@given(
    usages=st.lists(USAGE, min_size=130, max_size=130),
    fair_tree=st.booleans(),
)
@settings(max_examples=30, deadline=None)
def test_the_replays_two_level_tree(usages, fair_tree):
    """Root -> 60 accounts -> 130 users, FairShare=1 each: the trace replay's tree."""
    names = [(f"g{i % 60}", f"u{i}") for i in range(130)]
    groups: dict[str, list[str]] = {}
    for acct, name in names:
        groups.setdefault(acct, []).append(name)
    shape = FairShareTree(
        root(*(account(a, 1, *(user(n) for n in ns)) for a, ns in groups.items()))
    )
    charged = dict(zip(names, usages, strict=True))
    tree = root(
        *(account(a, 1, *(user(n, 1, charged[(a, n)]) for n in ns)) for a, ns in groups.items())
    )
    want = compute_fairshare(tree, fair_tree=fair_tree, dampening=1.5).factors
    assert shape.factors(charged, fair_tree=fair_tree, dampening=1.5) == want


def test_spec_example_from_a_usage_free_shape():
    """Spec §3.4's tree, built with no usage, then charged: Fair Tree 2/3, 1, 1/3."""
    shape = FairShareTree(
        root(
            account("vision", 3, user("alice"), user("bob")),
            account("nlp", 1, user("carol")),
        )
    )
    usages = {("vision", "alice"): 600.0, ("vision", "bob"): 0.0, ("nlp", "carol"): 400.0}
    assert shape.factors(usages) == pytest.approx(
        {("vision", "alice"): 2 / 3, ("vision", "bob"): 1.0, ("nlp", "carol"): 1 / 3}
    )
    classic = shape.factors(usages, fair_tree=False)
    assert classic[("vision", "alice")] == pytest.approx(2**-1.6)
    assert classic[("vision", "bob")] == pytest.approx(2**-0.8)
    assert classic[("nlp", "carol")] == pytest.approx(2**-1.6)
    assert shape.factors() == {k: 1.0 for k in usages}  # nobody used anything: all tied
