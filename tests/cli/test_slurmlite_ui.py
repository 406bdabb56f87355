"""``slurmlite ui``: one line with a one-time login link, which opens a session once."""

from __future__ import annotations

import re

from click.testing import CliRunner
from fastapi.testclient import TestClient

from cli.slurmlite import main
from slurmlite import errors
from slurmlite.errors import SlurmError
from tests.api.conftest import ALICE, CONF, KEY
from tests.cli.harness import install, unreachable

LINE = re.compile(
    r"http://127\.0\.0\.1:6817(/ui/login\?token=[\w-]{40,})  \(alice; valid once, for 2 minutes\)\n"
)


def test_the_link_logs_the_caller_in_once(live_controller, monkeypatch):
    live = install(monkeypatch, live_controller(CONF, key=KEY, who=ALICE))
    r = CliRunner().invoke(main, ["ui"])
    assert r.exit_code == 0, r.output
    found = LINE.fullmatch(r.output)
    assert found, r.output
    browser = TestClient(live.http.app)
    assert browser.get(found.group(1), follow_redirects=False).status_code == 303
    assert browser.get("/ui/queue").status_code == 200
    again = TestClient(live.http.app).get(found.group(1), follow_redirects=False)
    assert again.status_code == 401


def test_no_controller_no_link(monkeypatch):
    unreachable(monkeypatch, SlurmError(errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR))
    r = CliRunner().invoke(main, ["ui"])
    assert r.exit_code == errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR & 0xFF
    assert r.output.startswith("slurmlite: error: ")
