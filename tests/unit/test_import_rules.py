"""DESIGN.md §2 import rules, checked on the source (not by importing)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = {"fastapi", "sqlalchemy", "pydantic", "pynvml", "uvicorn", "starlette", "httpx", "click"}
PROJECT = {"slurmlite", "controller", "agent", "cli"}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def files(pkg: str) -> list[Path]:
    return sorted((ROOT / pkg).rglob("*.py"))


def test_core_imports_nothing_heavy_and_no_other_package():
    for f in files("slurmlite"):
        bad = imports_of(f) & (HEAVY | (PROJECT - {"slurmlite"}))
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"


def test_scheduler_imports_only_stdlib_and_slurmlite_and_never_reads_the_clock():
    for f in files("slurmlite/scheduler"):
        text = f.read_text()
        bad = imports_of(f) & (HEAVY | (PROJECT - {"slurmlite"}))
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"
        for clock in ("time.time(", "datetime.now(", "time.monotonic("):
            assert clock not in text, f"{f.relative_to(ROOT)} reads the clock ({clock})"


def test_cli_and_agent_never_import_the_controller():
    for pkg in ("cli", "agent"):
        for f in files(pkg):
            assert "controller" not in imports_of(f), f"{f.relative_to(ROOT)} imports controller"


def test_commands_stay_lean():
    # Slurm look-alike commands talk HTTP through the stdlib client: no web framework, ORM or httpx.
    lean = HEAVY - {"click"}
    for f in files("cli"):
        if f.name in {"slurmlite.py", "localcluster.py"}:
            continue
        bad = imports_of(f) & lean
        assert not bad, f"{f.relative_to(ROOT)} imports {bad}"


def test_only_the_nvml_module_imports_pynvml():
    for pkg in ("slurmlite", "controller", "agent", "cli"):
        for f in files(pkg):
            if f.as_posix().endswith("agent/gres/nvml.py"):
                continue
            assert "pynvml" not in imports_of(f), f"{f.relative_to(ROOT)} imports pynvml"
