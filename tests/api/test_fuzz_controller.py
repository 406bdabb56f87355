"""schemathesis against slurmctld's published schema: no input makes it answer 5xx.

The app runs in-process (schemathesis' ASGI transport), exactly as
``slurmctld`` serves it: ``SubmitShortcut`` in front of the FastAPI app,
no dependency overrides.  ``fuzz_asgi.on_the_wire`` plays uvicorn's part: it puts
the Unix-socket peer credentials into each request's state (what
``PeerCredProtocol`` does when a connection is made), so every user route
sees an authenticated caller, and it signs the requests of the node routes
with the node key of the node the path names (``n1`` when it names none), as
an agent would -- the signature covers the exact bytes sent, which only
exist once schemathesis has serialised the body.

Every operation gets 100 generated cases (valid and invalid ones, after the
schema's examples and schemathesis' boundary values); half of the node
routes' cases are made to speak for ``n1`` throughout (``map_case``), so
they reach the recording of heartbeats and completions.  Then the state
machine follows the schema's links (a submission -> its listing, accounting,
cancel, hold, release, requeue, update; the node list -> heartbeats), each
scenario on a new controller and store.  The
store is PostgreSQL where it is installed (the stricter one), else SQLite.
Everything runs with a fixed seed and no example database, so a failure
reproduces and nothing is written into the repository.
"""

from __future__ import annotations

import json
import os
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.api.app import create_app
from controller.api.fastsubmit import SubmitShortcut
from controller.context import Controller
from controller.store.db import Database
from slurmlite.clock import FakeClock
from slurmlite.config import parse_config
from tests.api.conftest import CONF, KEY, register
from tests.fuzz_asgi import Switch, load_schema, node_signer, on_the_wire, stateful_settings
from tests.pg import find_bindir
from tests.recording_agents import RecordingAgentClient

NODE_PATHS = ("/v1/nodes/register", "/v1/nodes/{name}/", "/v1/jobs/{job_id}/complete")
ROOT_PEER = (4242, 0, 0)  # (pid, uid, gid): root, so admin routes run past authorization
JWT = "AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={dir}/jwt.key\n"


def _controller(directory: str, store: str) -> Controller:
    """A controller on ``directory``, with ``auth/jwt`` on so ``POST /v1/token`` mints."""
    conf = f"{directory}/slurm.conf"
    text = CONF.format(dir=directory) + JWT.format(dir=directory)
    Path(conf).write_text(text)
    key = Path(directory, "jwt.key")
    key.write_bytes(b"j" * 32)
    key.chmod(0o600)
    cfg = parse_config(text, path=conf)
    return Controller(
        cfg, KEY, db=Database(store), agents=RecordingAgentClient(), clock=FakeClock(1.8e9)
    )


def _published_schema() -> dict:
    """The OpenAPI document, from an app on a throwaway directory and store."""
    with tempfile.TemporaryDirectory() as d:
        ctl = _controller(d, f"sqlite:///{d}/slurmlite.db")
        try:
            return create_app(ctl, run_loop=False).openapi()
        finally:
            ctl.db.close()


LIVE = Switch()
schema = load_schema(_published_schema(), LIVE)


@schema.hook
def map_case(context: Any, case: Any) -> Any:
    """Half the node routes' cases speak for ``n1`` throughout (path and body), so they
    get past "a node cannot speak for another" (403) to the recording itself."""
    path, body = context.operation.path, case.body
    if not path.startswith(NODE_PATHS) or _draw(case) % 2:
        return case
    if "name" in (case.path_parameters or {}):
        case.path_parameters["name"] = "n1"
    if isinstance(body, dict) and path == "/v1/nodes/register":
        body["name"] = "n1"
    if isinstance(body, dict) and path.endswith("/complete"):
        body["node"] = "n1"
        body["job_id"] = case.path_parameters.get("job_id")
    if isinstance(body, dict) and isinstance(body.get("completions"), list):
        for item in body["completions"]:
            if isinstance(item, dict):
                item["node"] = "n1"
    return case


def _draw(case: Any) -> int:
    """A number fixed by the case (hash() of str is salted per process: not repeatable)."""
    text = json.dumps([case.path_parameters, case.body], sort_keys=True, default=str)
    return zlib.crc32(text.encode())


@pytest.fixture(scope="module")
def new_store(request, tmp_path_factory) -> Iterator[Callable[[], tuple[str, Callable[[], None]]]]:
    """A maker of empty stores, each with its clean-up: PostgreSQL where it is installed
    (the stricter store: 32-bit INTEGER columns, no NUL in text), else SQLite."""
    pg = find_bindir() is not None or os.environ.get("SLURMLITE_REQUIRE_PG") == "1"
    server = request.getfixturevalue("pg_server") if pg else None

    def make() -> tuple[str, Callable[[], None]]:
        if server is None:
            return f"sqlite:///{tmp_path_factory.mktemp('fuzzdb')}/slurmlite.db", lambda: None
        name, url = server.create_database()
        return url, lambda: server.drop_database(name)

    yield make


def _plug_in(directory: str, url: str) -> Controller:
    """A controller on a new store with nodes n1 and n2, serving LIVE's requests."""
    ctl = _controller(directory, url)
    register(ctl, "n1")
    register(ctl, "n2")
    app = SubmitShortcut(create_app(ctl, run_loop=False))
    LIVE.app = on_the_wire(app, ROOT_PEER, node_signer(KEY, ("n1", "n2"), ctl.clock))
    return ctl


@pytest.fixture(scope="module")
def live_controller(tmp_path_factory, new_store):
    """One controller for the per-operation cases (jobs submitted by one are there for
    the next)."""
    url, drop = new_store()
    ctl = _plug_in(str(tmp_path_factory.mktemp("fuzzctl")), url)
    yield ctl
    LIVE.app = None
    ctl.db.close()
    drop()


@schema.parametrize()
def test_no_input_makes_the_controller_fail(case, live_controller):
    case.call_and_validate()  # checks: fuzz_asgi.FUZZ_CONFIG


def test_stateful_sequences_never_make_the_controller_fail(tmp_path_factory, new_store):
    """Each scenario starts on a new, empty controller: Hypothesis replays a failing
    scenario to report it, and a replay on a store that later scenarios have filled
    would take other links (reported as "flaky" instead of the failure itself)."""

    class OnAFreshController(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            self._url, self._drop = new_store()
            self._ctl = _plug_in(str(tmp_path_factory.mktemp("fuzzctl")), self._url)

        def teardown(self) -> None:
            LIVE.app = None
            self._ctl.db.close()
            self._drop()

    OnAFreshController.run(settings=stateful_settings())
