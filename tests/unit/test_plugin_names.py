"""Plugin names are spelled in one place: ``slurmlite/scheduler/registry.py``.

Everything else asks the registry what a ``SchedulerType`` or ``PriorityType``
means (``backfills``, ``is_multifactor``, ``is_basic``) instead of comparing
with ``"sched/backfill"`` or ``"priority/multifactor"`` itself; a comparison
elsewhere is found by reading the source's syntax tree (docstrings and
configuration defaults may name plugins; only comparisons count).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from slurmlite.scheduler.registry import (
    PRIORITY_TYPES,
    SCHEDULER_TYPES,
    backfills,
    is_basic,
    is_multifactor,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("slurmlite", "controller", "agent", "cli", "bench")
REGISTRY = ROOT / "slurmlite" / "scheduler" / "registry.py"


def _plugin_literal(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.strip().lower() in {*SCHEDULER_TYPES, *PRIORITY_TYPES}
    )


def _comparisons_with_plugin_names(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(), str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            if any(_plugin_literal(n) for n in (node.left, *node.comparators)):
                lines.append(node.lineno)
        elif isinstance(node, ast.Assign) and _plugin_literal(node.value):
            # a module constant such as BACKFILL = "sched/backfill" is a comparison's half
            if all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets):
                lines.append(node.lineno)
    return lines


def test_no_module_but_the_registry_compares_with_a_plugin_name():
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path != REGISTRY and (lines := _comparisons_with_plugin_names(path)):
                found[str(path.relative_to(ROOT))] = lines
    assert found == {}


@pytest.mark.parametrize(
    ("name", "answer"),
    [("sched/backfill", True), ("sched/builtin", False)],
)
def test_the_registry_says_which_scheduler_backfills(name, answer):
    assert backfills(name) is answer


@pytest.mark.parametrize(
    ("name", "multifactor", "basic"),
    [
        ("priority/multifactor", True, False),
        (" Priority/MultiFactor ", True, False),  # slurm.conf's spelling does not count
        ("priority/basic", False, True),
        ("PRIORITY/BASIC", False, True),
        ("priority/other", False, False),
    ],
)
def test_the_registry_says_which_priority_plugin_a_name_is(name, multifactor, basic):
    assert (is_multifactor(name), is_basic(name)) == (multifactor, basic)
