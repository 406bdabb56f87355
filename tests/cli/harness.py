"""One fake controller client and one live controller, for the command tests.

A command gets its controller client from ``ControllerClient.from_env``
(``cli.common.get_client``).  The tests replace what that returns, in one
of two ways:

* ``FakeClient`` — a stand-in that answers from a table and records every
  call, for tests that pin a command's output to a golden capture::

      fake = install(monkeypatch, FakeClient(get_nodes=golden_nodes(), get_partitions=parts))
      sinfo.main([])
      assert fake.names() == ["get_partitions", "get_nodes"]

  An answer is a value, a function of the call's arguments, or an exception
  (raised, as a refusing controller does); ``error`` (a ``SlurmError``) makes
  every call raise it, as an unreachable controller does; a method with no
  answer is an ``AttributeError``, so a command that asks for something the
  test did not expect fails loudly.  A test may change ``answers`` between
  commands (``fake.answers["get_jobs"] = []``).  Every call is recorded before it is answered, so ``calls``
  holds refused calls too; ``sent(name)`` gives the arguments of each call to
  one method by parameter name, defaults filled in, as ``ControllerClient``
  declares them (a command may pass them by position or by keyword)::

      fake = FakeClient(hold_jobs=[], get_jobs=lambda **filters: [])
      scontrol.main(["uhold", "52"])
      assert fake.sent("hold_jobs") == [{"job_ids": [52], "user_hold": True}]

  srun's and salloc's controller is this fake too (``tests/cli/test_srun_main.py``):
  its job's state moves on with each poll and a busy step is refused a few
  times, both answers that are functions over a little state of the test's.

  ``install(monkeypatch, client)`` puts the fake in place;
  ``unreachable(monkeypatch, error)`` makes getting a client fail as it does
  when no controller answers.

* ``LiveController`` — the real controller app on a temporary SQLite store
  and a ``FakeClock``, its agents a ``RecordingAgentClient``, the caller
  chosen by ``who``; its ``request`` is ``ControllerClient.request`` over
  the in-process app (errors raised as the real client raises them).  The
  ``live_controller`` fixture of ``tests/cli/conftest.py`` builds one and
  closes its store afterwards.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import pytest
from fastapi.testclient import TestClient

from cli import client as cli_client
from cli.client import _error_from
from controller.api.app import create_app
from controller.api.deps import get_user
from controller.auth.callers import Caller
from controller.context import Controller
from controller.store.db import Database
from slurmlite.clock import FakeClock
from slurmlite.config import parse_config
from slurmlite.errors import SlurmError
from tests.recording_agents import RecordingAgentClient

T = TypeVar("T")
ROOT = Caller(uid=0, gid=0, user="root", admin=True)
KEY = b"k" * 64
NOW = 1_800_000_000.0


def install(monkeypatch: pytest.MonkeyPatch, client: T) -> T:
    """Make every command of this test talk to ``client``; returns it."""
    monkeypatch.setattr(
        cli_client.ControllerClient,
        "from_env",
        classmethod(lambda cls, prog, conf_path=None: client),
    )
    return client


def unreachable(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """Make getting a client fail with ``error``: a ``SlurmError`` as when no controller
    answers, or an ``AssertionError`` for a command that must not ask for one."""

    def refuse(cls: type, prog: str, conf_path: str | None = None) -> None:
        raise error

    monkeypatch.setattr(cli_client.ControllerClient, "from_env", classmethod(refuse))


class Call(NamedTuple):
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class FakeConfig:
    """What commands read of the client's settings: the golden cluster's."""

    cluster_name = "anchor"
    control_host = "vm"
    slurmd_port = 6818
    nodes: list[object] = []


class FakeClient:
    """A ``ControllerClient`` stand-in: ``answers`` by method name, every call in ``calls``."""

    def __init__(self, config: object | None = None, **answers: Any) -> None:
        self.config = config if config is not None else FakeConfig()
        self.answers = answers
        self.calls: list[Call] = []
        self.error: SlurmError | None = None

    def __getattr__(self, name: str) -> Callable[..., Any]:
        answers = self.__dict__.get("answers", {})
        if name not in answers:
            raise AttributeError(f"FakeClient has no answer for {name}()")

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(Call(name, args, kwargs))
            if self.error is not None:
                raise self.error
            answer = answers[name]
            if isinstance(answer, BaseException):
                raise answer
            return answer(*args, **kwargs) if callable(answer) else answer

        return call

    def names(self) -> list[str]:
        """The methods called, in order."""
        return [c.method for c in self.calls]

    def sent(self, name: str) -> list[dict[str, Any]]:
        """The arguments of each call to ``name``, by ``ControllerClient``'s parameter names."""
        return [arguments(c) for c in self.calls if c.method == name]


def arguments(call: Call) -> dict[str, Any]:
    """``call``'s arguments by the parameter names of ``ControllerClient``'s method,
    defaults filled in: ``hold_jobs([5])`` is ``{"job_ids": [5], "user_hold": False}``."""
    signature = inspect.signature(getattr(cli_client.ControllerClient, call.method))
    bound = signature.bind(None, *call.args, **call.kwargs)  # None stands for the client
    bound.apply_defaults()
    return {name: value for name, value in bound.arguments.items() if name != "self"}


@dataclass
class LiveController:
    """The controller app in process; ``who[0]`` is the caller every request comes from."""

    ctl: Controller
    http: TestClient
    who: list[Caller] = field(default_factory=lambda: [ROOT])
    config: object = field(default_factory=FakeConfig)

    def as_user(self, caller: Caller) -> None:
        self.who[0] = caller

    def tick(self) -> None:
        asyncio.run(self.ctl.loop.tick())

    def request(
        self, method: str, path: str, body: object = None, query: dict[str, Any] | None = None
    ) -> Any:
        params = {k: v for k, v in (query or {}).items() if v is not None}
        r = self.http.request(method, path, json=body, params=params)
        payload = r.json() if r.content else None
        if r.status_code >= 400:
            raise _error_from(r.status_code, payload)
        return payload


def start_controller(
    tmp_path: Path, conf: str, *, who: Caller = ROOT, key: bytes = KEY, now: float = NOW
) -> LiveController:
    """A controller for ``conf`` (its ``{dir}`` filled with ``tmp_path``); close its ``ctl.db``."""
    cfg = parse_config(conf.format(dir=tmp_path), path=str(tmp_path / "slurm.conf"))
    db = Database(f"sqlite:///{tmp_path}/state/slurmlite.db")
    ctl = Controller(cfg, key, db=db, agents=RecordingAgentClient(), clock=FakeClock(now))
    app = create_app(ctl, run_loop=False)
    live = LiveController(ctl=ctl, http=TestClient(app), who=[who])
    app.dependency_overrides[get_user] = lambda: live.who[0]
    return live
