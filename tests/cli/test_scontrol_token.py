"""``scontrol token``: arguments, the request it sends, Slurm's lines and exit codes."""

from __future__ import annotations

import pytest

from cli import scontrol
from slurmlite import errors
from slurmlite.errors import SlurmError
from tests.cli.harness import Call, FakeClient, install

TOKEN = {"token": "aaa.bbb.ccc", "username": "alice", "lifespan": 1800}


@pytest.fixture
def fake(monkeypatch):
    client = FakeClient(request=TOKEN)
    install(monkeypatch, client)
    return client


def run(argv: list[str], capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    code = scontrol.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    ("argv", "sent"),
    [
        (["token"], {"lifespan": None, "username": None}),
        (["tok", "LifeSpan=600", "username=bob"], {"lifespan": 600, "username": "bob"}),
        (["token", "lifespan=infinite"], {"lifespan": 2**31 - 2, "username": None}),
    ],
)
def test_the_token_is_printed_for_the_shell(fake, capsys, argv, sent):
    assert run(argv, capsys) == (0, "SLURM_JWT=aaa.bbb.ccc\n", "")
    assert fake.calls == [Call("request", ("POST", "/v1/token", sent), {})]


@pytest.mark.parametrize(
    ("arg", "line"),
    [
        ("lifespan=abc", 'scontrol: error: Invalid numeric value "abc" for lifespan.'),
        ("lifespan=0", 'scontrol: error: Invalid numeric value "0" for lifespan.'),
        ("lifespan=2147483647", "scontrol: error: Numeric argument (2147483647) too large for lifespan."),
        ("user=bob", "Invalid option: `user=bob`"),
    ],
)  # fmt: skip
def test_bad_arguments_exit_1_without_asking(fake, capsys, arg, line):
    assert run(["token", arg], capsys) == (1, "", line + "\n")
    assert fake.calls == []


@pytest.mark.parametrize(
    ("code", "how", "text"),
    [
        (errors.ESLURM_USER_ID_MISSING, "error with request", "Invalid user id"),
        (errors.ESLURM_PLUGIN_NOT_LOADED, "error with request",
         "Required plugin type not loaded or initialized"),
        (errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR, "error receiving response",
         "Unable to contact slurm controller (connect failure)"),
    ],
)  # fmt: skip
def test_refusals_are_slurm_fetch_token_errors(fake, capsys, code, how, text):
    fake.error = SlurmError(code)
    assert run(["token", "username=root"], capsys) == (
        1, "", f"scontrol: error: slurm_fetch_token: {how}: {text}\n",
    )  # fmt: skip


def test_two_letters_are_not_enough(fake, capsys):
    assert run(["to"], capsys) == (1, "", "invalid keyword: to\n")
