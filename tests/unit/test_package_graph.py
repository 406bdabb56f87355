"""The controller's package import graph (issue 13, DESIGN.md §2).

``controller/`` is cut into packages that import one another in one direction:
routes (``api``) call services (``jobs``, ``steps``, ``sched``, ``accounting``,
``nodes``, ``auth``), and services call the store (``store``) -- never back.  The
wiring (``controller.context``, ``controller.main``) sits above everything.
Every import counts, including those under ``TYPE_CHECKING`` and inside
functions: a cycle closed only for the type checker is still a cycle a reader
has to untangle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "controller"

# each package, with the packages it may import (directly); the order is the layering
ALLOWED: dict[str, set[str]] = {
    "store": set(),
    "auth": {"store"},
    "nodes": {"store", "auth"},
    "accounting": {"store", "auth", "nodes"},
    "steps": {"store", "auth", "nodes"},
    "notify": {"store", "accounting"},  # job events: the outbox and its delivery worker
    "sched": {"store", "auth", "nodes", "accounting", "steps", "notify"},  # notify: idle GPUs
    "runs": {"store", "auth", "nodes", "sched"},  # workload runs: a job's row, retries, logs
    "metrics": {"store", "nodes", "sched"},  # /metrics: counts, counters kept with the changes
    "jobs": {"store", "auth", "nodes", "accounting", "steps", "sched", "runs", "metrics"},
    "reports": {"store", "auth"},  # usage reports: aggregates over the store (sreport)
    "api": {
        "store",
        "auth",
        "nodes",
        "accounting",
        "steps",
        "sched",
        "runs",
        "jobs",
        "reports",
        "metrics",
        "context",
    },  # with the dashboard (controller/api/ui): HTML routes over the same services
}
WIRING = {"context", "main"}  # top-level modules: may import any package


def unit_of(module: str) -> str | None:
    """``controller.jobs.service`` -> "jobs"; ``controller.context`` -> "context"."""
    parts = module.split(".")
    return parts[1] if parts[0] == "controller" and len(parts) > 1 else None


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        here = unit_of(".".join(rel.parts))
        if here is None or here == "__init__":
            continue
        edges = graph.setdefault(here, set())
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                if node.module == "controller":
                    names = [f"controller.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                there = unit_of(name)
                if (
                    there
                    and there != here
                    and (ROOT / there).exists() | (ROOT / f"{there}.py").exists()
                ):
                    edges.add(there)
    return graph


def test_every_package_imports_only_the_layers_below_it():
    graph = package_graph()
    assert set(ALLOWED) | WIRING == set(graph)  # a new package needs its place here
    wrong = {pkg: sorted(deps - ALLOWED[pkg]) for pkg, deps in graph.items() if pkg in ALLOWED}
    assert {pkg: deps for pkg, deps in wrong.items() if deps} == {}


def test_the_package_graph_has_no_cycle():
    graph = package_graph()
    done: set[str] = set()

    def visit(pkg: str, path: tuple[str, ...]) -> None:
        assert pkg not in path, " -> ".join((*path, pkg))
        if pkg in done:
            return
        for dep in sorted(graph.get(pkg, ())):
            visit(dep, (*path, pkg))
        done.add(pkg)

    for pkg in sorted(graph):
        visit(pkg, ())


def test_nothing_below_the_wiring_imports_the_controller_object():
    graph = package_graph()
    users = sorted(pkg for pkg, deps in graph.items() if "context" in deps and pkg != "api")
    assert users == ["main"]


def test_the_layering_allows_no_cycle_either():
    """The table itself is a strict order: a package never allows one above it."""
    order = list(ALLOWED)
    for i, pkg in enumerate(order):
        assert ALLOWED[pkg] - {"context"} <= set(order[:i]), pkg
