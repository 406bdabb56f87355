"""Reasons: a closed vocabulary of named constants (slurmlite.reasons, spec §1.4)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from slurmlite import reasons
from slurmlite.reasons import ENDED, PENDING, REASONS, UnknownReason, check_pending
from slurmlite.scheduler import limits

ROOT = Path(__file__).resolve().parents[2]


def _constants() -> dict[str, str]:
    return {k: v for k, v in vars(reasons).items() if k.isupper() and isinstance(v, str)}


def test_every_constant_is_one_word_of_the_vocabulary_and_every_word_has_one():
    names = _constants()
    assert set(names.values()) == REASONS
    assert len(set(names.values())) == len(names)  # no word named twice
    assert PENDING & ENDED == set()


def test_a_plan_may_name_only_pending_reasons():
    assert check_pending(reasons.PRIORITY) == "Priority"
    assert check_pending(reasons.NONE) == "None"
    with pytest.raises(UnknownReason, match="WaitingForGodot"):
        check_pending("WaitingForGodot")
    with pytest.raises(UnknownReason):
        check_pending("resources")  # case-sensitive, as squeue prints them
    with pytest.raises(UnknownReason):
        check_pending(reasons.TIME_LIMIT)  # only an ended job carries it
    assert issubclass(UnknownReason, ValueError)


def test_the_qos_limit_reasons_are_pending_reasons():
    named = {limits.MAX_JOBS_PER_USER, limits.MAX_WALL_PER_JOB, limits.MAX_SUBMIT_PER_USER}
    named |= set(limits.PER_JOB_REASONS.values()) | set(limits.PER_USER_REASONS.values())
    assert named <= PENDING


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            out.add(id(body[0].value))
    return out


@pytest.mark.parametrize("package", ["slurmlite/scheduler", "controller"])
def test_code_names_reasons_by_their_constant_never_by_a_typed_string(package):
    # "None" is also an admin level and a column default: checked in the scheduler only
    words = REASONS - ({reasons.NONE} if package == "controller" else set())
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text())
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in words and id(node) not in docs:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert not found, found
