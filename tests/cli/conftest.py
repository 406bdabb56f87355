"""Command tests: the controller they talk to (``tests/cli/harness.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.harness import LiveController, start_controller


@pytest.fixture
def live_controller(tmp_path: Path) -> Iterator[Callable[..., LiveController]]:
    """``live_controller(conf, who=..., key=...)``: a ``LiveController``, closed afterwards."""
    started: list[LiveController] = []

    def start(conf: str, **kw: object) -> LiveController:
        live = start_controller(tmp_path, conf, **kw)  # type: ignore[arg-type]
        started.append(live)
        return live

    yield start
    for live in started:
        live.ctl.db.close()
