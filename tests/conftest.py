"""Suite-wide hooks: the ``golden`` marker (``tests/golden_path.py``) and the files' order.

``make test`` hands whole files to its workers (``--dist loadfile``) in collection
order, so a long file collected last keeps one worker busy while the others are
idle.  The longest files (measured with ``--durations``: daemons, real clients,
timeouts) are collected first, then the other end-to-end and browser files, then
the rest; the order inside a file is kept.
"""

from __future__ import annotations

import pytest

from tests.golden_path import golden_path


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "golden: needs ../shared/golden/slurm-22.05 (skip, or fail if required)"
    )


SLOW_FIRST = (
    "tests/e2e/test_golden_live.py",
    "tests/e2e/test_checkpoint.py",
    "tests/e2e/test_workloads.py",
    "tests/e2e/test_workload_guide.py",
    "tests/e2e/test_batch_jobs.py",
    "tests/e2e/test_stall.py",
    "tests/e2e/test_node_usage.py",
    "tests/e2e/test_idle_gpus.py",
    "tests/e2e/test_clients.py",
    "tests/sim/test_docs_scheduling.py",
    "tests/docs/test_examples.py",
    "tests/api/test_metrics_counts.py",
    "tests/e2e/test_failure_causes.py",
    "tests/e2e/test_crash_points.py",
    "tests/e2e/test_prolog.py",
    "tests/e2e/test_metrics_scrape.py",
    "tests/ui/test_plan.py",
    "tests/api/test_fuzz_controller.py",
)
FIRST_DIRS = ("e2e", "ui")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(SLOW_FIRST)}

    def key(item: pytest.Item) -> tuple[int, int]:
        path = item.nodeid.split("::", 1)[0]
        if path in rank:
            return (0, rank[path])
        parts = path.split("/")
        return (1 if len(parts) > 2 and parts[1] in FIRST_DIRS else 2, 0)

    items.sort(key=key)  # stable: files stay whole, each in its own order


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("golden") is not None:
        golden_path()
