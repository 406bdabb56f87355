"""Where the golden captures are, and what a test does when they are not there.

The real Slurm 22.05 outputs (DESIGN.md §3) live beside the checkout, not in
it: ``<checkout>/../shared/golden/slurm-22.05``.  Every test finds them here,
through ``GOLDEN``, so the rule is written once.

Without them a golden test is skipped, so the suite still runs on a bare
clone.  ``SLURMLITE_REQUIRE_GOLDEN=1`` (set by ``.ci/run``, where ``shared/``
is copied beside the clone) turns that skip into a failure, so the golden
comparisons cannot silently stop being made::

    pytestmark = needs_golden                  # the whole module needs the directory
    text = golden_path("30_sinfo.txt").read_text()   # one file: skip (or fail)
    path = optional_golden("60_x.txt")         # None when absent (fail if required)

``needs_golden`` is the ``golden`` marker; ``tests/conftest.py`` checks it
before a test's fixtures are set up (a live cluster is not started for a
test that cannot compare).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]
GOLDEN = CHECKOUT.parent / "shared" / "golden" / "slurm-22.05"
REQUIRE = "SLURMLITE_REQUIRE_GOLDEN"

needs_golden = pytest.mark.golden


def golden_required() -> bool:
    return os.environ.get(REQUIRE) == "1"


def missing(what: str) -> None:
    """Skip the test for want of ``what``, or fail it under ``SLURMLITE_REQUIRE_GOLDEN=1``."""
    why = f"golden {what} not available (looked in {GOLDEN})"
    if golden_required():
        pytest.fail(f"{why}; {REQUIRE}=1")
    pytest.skip(why)


def golden_path(name: str | None = None) -> Path:
    """The golden file ``name`` (or the directory); skips or fails when absent."""
    path = GOLDEN / name if name else GOLDEN
    if not path.exists():
        missing(f"file {name}" if name else "directory")
    return path


def optional_golden(name: str) -> Path | None:
    """``name``'s path, or None when absent for a test that has the text embedded too;
    under ``SLURMLITE_REQUIRE_GOLDEN=1`` absence fails instead."""
    path = GOLDEN / name
    if path.exists():
        return path
    if golden_required():
        missing(f"file {name}")
    return None
