"""Callers over TCP: munge credentials and JSON Web Tokens, through the controller app.

A ``TestClient`` request carries no peer credentials, exactly as a TCP
request: it is let in only with a munge credential (``X-Slurmlite-Munge``,
decoded by a real private munged) or a token (``X-SLURM-USER-TOKEN``).
The controller's clock is a ``FakeClock`` at 1_800_000_000, so token times
are exact.
"""

from __future__ import annotations

import os
import pwd

import pytest
from fastapi.testclient import TestClient

from controller.api.app import create_app
from controller.api.fastsubmit import SubmitShortcut
from controller.auth import authenticate
from controller.context import Controller
from controller.store.db import Database
from slurmlite import errors, jwt, munge
from slurmlite.clock import FakeClock
from slurmlite.config import ConfigError, parse_config
from tests.api.conftest import CONF, KEY
from tests.api.test_submit_shortcut import body, with_peercred
from tests.munged import Munged, munged_or_skip
from tests.recording_agents import RecordingAgentClient

NOW = 1_800_000_000.0
JWT_KEY = b"j" * 32
USER = next(p for p in pwd.getpwall() if p.pw_uid not in (0, os.geteuid()))  # not an admin
AUTH = """
AuthType=auth/munge
AuthInfo=socket={socket}
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key={dir}/jwt.key,max_token_lifespan=3600
"""


@pytest.fixture(scope="module")
def munged(tmp_path_factory):
    daemon = Munged.start(tmp_path_factory.mktemp("munged"), munged_or_skip())
    yield daemon
    daemon.stop()


def make_ctl(tmp_path, extra: str) -> Controller:
    key = tmp_path / "jwt.key"
    if not key.exists():
        key.write_bytes(JWT_KEY)
        key.chmod(0o600)
    cfg = parse_config((CONF + extra).format(dir=tmp_path), path=str(tmp_path / "slurm.conf"))
    db = Database(f"sqlite:///{tmp_path}/state/slurmlite.db")
    return Controller(cfg, KEY, db=db, agents=RecordingAgentClient(), clock=FakeClock(NOW))


@pytest.fixture
def ctl(tmp_path, munged):
    c = make_ctl(tmp_path, AUTH.replace("{socket}", munged.socket))
    yield c
    c.db.close()


@pytest.fixture
def tcp(ctl):
    """What a TCP peer sees: the app behind the submit shortcut, no dependency overrides."""
    with TestClient(SubmitShortcut(create_app(ctl, run_loop=False))) as client:
        yield client


def token_for(name: str, lifespan: int = 600, now: float = NOW, key: bytes = JWT_KEY) -> dict:
    return {"X-SLURM-USER-TOKEN": jwt.make_token(key, name, lifespan, now)}


def mcred(socket: str) -> dict:
    return {"X-Slurmlite-Munge": munge.encode(socket)}


def refusal(r) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    return r.status_code, r.json()["detail"]["errno"]


# ------------------------------------------------------------------ who is asking


def test_a_valid_token_speaks_for_its_user(tcp):
    me = tcp.get("/v1/whoami", headers=token_for(USER.pw_name)).json()
    assert (me["uid"], me["gid"], me["user"], me["admin"]) == (
        USER.pw_uid, USER.pw_gid, USER.pw_name, False,
    )  # fmt: skip
    assert tcp.get("/v1/whoami", headers=token_for("root")).json()["admin"] is True


def test_an_expired_token_is_refused_and_says_so(tcp):
    # issued 700 s ago for 600 s: expired 100 s ago
    r = tcp.get("/v1/whoami", headers=token_for(USER.pw_name, now=NOW - 700))
    assert refusal(r) == (401, errors.ESLURM_AUTH_EXPIRED)
    assert r.json()["detail"]["detail"] == "token expired"
    assert r.json()["detail"]["error"] == "Authentication credential expired"


@pytest.mark.parametrize(
    "how", ["other key", "edited claims", "alg none", "not a token", "not ascii"]
)
def test_forged_tokens_are_invalid(tcp, how):
    good = jwt.make_token(JWT_KEY, USER.pw_name, 600, NOW)
    forged = {
        "other key": jwt.make_token(b"x" * 32, "root", 600, NOW),
        "edited claims": ".".join(
            [
                good.split(".")[0],
                jwt.make_token(JWT_KEY, "root", 600, NOW).split(".")[1],
                good.split(".")[2],
            ]
        ),  # fmt: skip
        "alg none": "eyJhbGciOiJub25lIn0." + good.split(".")[1] + ".",
        "not a token": "hello",
        "not ascii": "eyJhbGciOiJIUzI1NiJ9.e30.\u00e9",  # HS256 header, signature "é"
    }[how]
    r = tcp.get("/v1/whoami", headers={"X-SLURM-USER-TOKEN": forged.encode("latin-1")})
    assert refusal(r) == (401, errors.ESLURM_AUTH_CRED_INVALID)


def test_only_roots_token_may_name_another_user(tcp):
    as_user = {**token_for("root"), "X-SLURM-USER-NAME": USER.pw_name}
    assert tcp.get("/v1/whoami", headers=as_user).json()["uid"] == USER.pw_uid
    as_root = {**token_for(USER.pw_name), "X-SLURM-USER-NAME": "root"}
    r = tcp.get("/v1/whoami", headers=as_root)
    assert refusal(r) == (401, errors.ESLURM_AUTH_CRED_INVALID)
    assert "cannot act as root" in r.json()["detail"]["detail"]


def test_a_munge_credential_is_accepted_once(tcp, munged):
    headers = mcred(munged.socket)
    assert tcp.get("/v1/whoami", headers=headers).json()["uid"] == os.getuid()
    r = tcp.get("/v1/whoami", headers=headers)  # the same credential again: a replay
    assert refusal(r) == (401, errors.ESLURM_AUTH_CRED_INVALID)
    assert "Replayed credential" in r.json()["detail"]["detail"]


def test_a_forged_or_expired_munge_credential_is_refused(tcp, munged, monkeypatch):
    r = tcp.get("/v1/whoami", headers={"X-Slurmlite-Munge": "MUNGE:AAAAforged:"})
    assert refusal(r) == (401, errors.ESLURM_AUTH_CRED_INVALID)

    def expired(cred: str, socket: str | None) -> tuple[int, int]:
        raise munge.CredentialExpired("Expired credential")  # tests/unit/test_munge.py: real

    monkeypatch.setattr(munge, "decode", expired)
    r = tcp.get("/v1/whoami", headers=mcred(munged.socket))
    assert refusal(r) == (401, errors.ESLURM_AUTH_EXPIRED)


def test_no_credentials_at_all_is_401(tcp):
    assert refusal(tcp.get("/v1/whoami")) == (401, errors.ESLURM_AUTH_CRED_INVALID)
    assert refusal(tcp.post("/v1/jobs", json=body())) == (401, errors.ESLURM_AUTH_CRED_INVALID)


def test_the_unix_socket_still_names_its_peer_whatever_authtype_says(ctl):
    app = with_peercred(create_app(ctl, run_loop=False), creds=(99, 4321, 4321))
    with TestClient(app) as local:
        assert local.get("/v1/whoami").json()["uid"] == 4321


def test_methods_not_configured_are_refused(tmp_path, munged):
    c = make_ctl(tmp_path, "")  # auth/local only
    with TestClient(create_app(c, run_loop=False)) as client:
        for headers in (token_for("root"), mcred(munged.socket)):
            assert refusal(client.get("/v1/whoami", headers=headers))[0] == 401
        r = client.post("/v1/token", headers=token_for("root"), json={})
        assert r.status_code == 401  # no way in over TCP at all
    local = with_peercred(create_app(c, run_loop=False), creds=(1, 0, 0))
    with TestClient(local) as client:
        r = client.post("/v1/token", json={})
        assert r.json()["errno"] == errors.ESLURM_PLUGIN_NOT_LOADED
        assert r.json()["error"] == "Required plugin type not loaded or initialized"
    c.db.close()


# --------------------------------------------------------------- the submit shortcut


def test_submissions_through_the_shortcut_carry_the_proven_user(tcp, ctl, munged):
    by_token = tcp.post("/v1/jobs", json=body(), headers=token_for(USER.pw_name))
    by_munge = tcp.post("/v1/jobs", json=body(), headers=mcred(munged.socket))
    assert by_token.status_code == by_munge.status_code == 200
    owners = [ctl.job_owner(r.json()["job_id"]) for r in (by_token, by_munge)]
    assert owners == [(USER.pw_uid, USER.pw_gid), (os.getuid(), os.getgid())]


def test_the_shortcut_refuses_as_the_route_does(tcp, ctl):
    with TestClient(create_app(ctl, run_loop=False)) as route:
        for headers in (token_for("root", now=NOW - 700), {"X-SLURM-USER-TOKEN": "x.y.z"}):
            a = tcp.post("/v1/jobs", json=body(), headers=headers)
            b = route.post("/v1/jobs", json=body(), headers=headers)
            assert a.status_code == b.status_code == 401 and a.json() == b.json()
    assert tcp.get("/v1/jobs", headers=token_for("root")).json()["jobs"] == []


# ---------------------------------------------------------------------- tokens


def test_a_user_gets_a_token_of_the_default_lifespan_that_works(tcp):
    r = tcp.post("/v1/token", json={}, headers=token_for(USER.pw_name))
    got = r.json()
    assert (got["username"], got["lifespan"]) == (USER.pw_name, 1800)  # Slurm's default
    assert jwt.verify_token(JWT_KEY, got["token"], NOW + 1800) == USER.pw_name
    with pytest.raises(jwt.TokenError):
        jwt.verify_token(JWT_KEY, got["token"], NOW + 1801)
    me = tcp.get("/v1/whoami", headers={"X-SLURM-USER-TOKEN": got["token"]}).json()
    assert me["uid"] == USER.pw_uid


def test_users_mint_only_for_themselves_and_within_the_limit(tcp):
    mine = token_for(USER.pw_name)
    r = tcp.post("/v1/token", json={"username": "root"}, headers=mine)
    assert (r.status_code, r.json()["errno"]) == (403, errors.ESLURM_USER_ID_MISSING)
    assert r.json()["error"] == "Invalid user id"
    r = tcp.post("/v1/token", json={"lifespan": 3601}, headers=mine)  # limit 3600
    assert r.json()["errno"] == errors.ESLURM_INVALID_TIME_LIMIT
    r = tcp.post("/v1/token", json={"lifespan": 3600, "username": USER.pw_name}, headers=mine)
    assert r.json()["lifespan"] == 3600


def test_root_mints_for_anyone_beyond_the_limit(tcp, munged):
    r = tcp.post("/v1/token", json={"username": USER.pw_name, "lifespan": 7200},
                 headers=mcred(munged.socket))  # fmt: skip
    assert (r.json()["username"], r.json()["lifespan"]) == (USER.pw_name, 7200)
    for nobody in ("no-such-user-xyz", "nul\x00name"):
        r = tcp.post("/v1/token", json={"username": nobody}, headers=token_for("root"))
        assert r.json()["errno"] == errors.ESLURM_USER_ID_MISSING


def test_an_admin_user_who_is_not_slurmuser_cannot_mint_for_others(tmp_path, munged):
    # SlurmliteAdminUsers may manage every job, but a token for root would let them
    # run jobs as root: minting for someone else is for root and SlurmUser only (as Slurm)
    extra = AUTH.replace("{socket}", munged.socket) + f"SlurmliteAdminUsers={USER.pw_name}\n"
    c = make_ctl(tmp_path, extra)
    with TestClient(create_app(c, run_loop=False)) as client:
        mine = token_for(USER.pw_name)
        assert client.get("/v1/whoami", headers=mine).json()["admin"] is True
        r = client.post("/v1/token", json={"username": "root"}, headers=mine)
        assert r.json()["errno"] == errors.ESLURM_USER_ID_MISSING
    c.db.close()


@pytest.mark.parametrize("body_", [{"lifespan": 0}, {"lifespan": "x"}, {"bogus": 1}])
def test_bad_token_requests_are_422(tcp, body_):
    assert tcp.post("/v1/token", json=body_, headers=token_for("root")).status_code == 422


# ------------------------------------------------------------------ the key file


@pytest.mark.parametrize(
    ("mode", "owner", "expect"),
    [(0o644, None, "accessible by group or others"), (0o600, 1, "owned by uid 1"),
     (None, None, "not found"), (0o600, "short", "too short")],
)  # fmt: skip
def test_a_controller_refuses_to_start_with_an_unsafe_jwt_key(tmp_path, mode, owner, expect):
    key = tmp_path / "unsafe.key"
    if mode is not None:
        key.write_bytes(b"k" * (8 if owner == "short" else 32))
        key.chmod(mode)
        if isinstance(owner, int):
            if os.geteuid() != 0:
                pytest.skip("chown needs root")
            os.chown(key, owner, -1)
    c = make_ctl(tmp_path, f"AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={key}\n")
    with pytest.raises(ConfigError, match=expect):
        create_app(c, run_loop=False)
    c.db.close()


def test_the_default_key_is_in_statesavelocation(tmp_path):
    cfg = parse_config(CONF.format(dir=tmp_path) + "AuthAltTypes=auth/jwt\n")
    assert authenticate.jwt_key_path(cfg) == f"{tmp_path}/state/jwt_hs256.key"
