"""GET /v1/version (``slurmlite version``): what the controller runs and its store's
revision and kind, on SQLite and on PostgreSQL; never the store's URL."""

from __future__ import annotations

import platform

from fastapi.testclient import TestClient

from controller.api.app import create_app
from controller.store.migrate import head_revision
from slurmlite.config import SLURM_VERSION
from slurmlite.version import slurmlite_version


def test_version_names_the_code_the_schema_and_the_stores_kind(harness, store_url):
    answer = harness.client.get("/v1/version").json()
    kind = "postgresql" if store_url.startswith("postgresql") else "sqlite"
    assert answer == {
        "slurmlite": slurmlite_version(),
        "slurm": SLURM_VERSION,
        "python": platform.python_version(),
        "schema_head": head_revision(),
        "store_revision": head_revision(),  # the controller migrated its store on start
        "store_kind": kind,
    }
    assert store_url not in str(answer)


def test_version_needs_credentials(harness):
    anonymous = TestClient(create_app(harness.ctl, run_loop=False))  # as a TCP peer sees it
    assert anonymous.get("/v1/version").status_code == 401
