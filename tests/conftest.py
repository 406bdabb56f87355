"""Suite-wide hooks: the ``golden`` marker (``tests/golden_path.py``)."""

from __future__ import annotations

import pytest

from tests.golden_path import golden_path


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "golden: needs ../shared/golden/slurm-22.05 (skip, or fail if required)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("golden") is not None:
        golden_path()
