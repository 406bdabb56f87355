"""auth/jwt tokens: what is accepted, what is refused, and interoperability with RFC 7519."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from slurmlite.jwt import DEFAULT_LIFESPAN, TokenError, make_token, verify_token

KEY = b"0123456789abcdef0123456789abcdef"


def b64(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def signed(header: object, claims: object, key: bytes = KEY) -> str:
    """A token built by hand from the RFC, independently of make_token."""
    text = f"{b64(header)}.{b64(claims)}"
    mac = hmac.new(key, text.encode(), hashlib.sha256).digest()
    return f"{text}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


def test_round_trip_and_claims_are_slurms():
    token = make_token(KEY, "alice", lifespan=DEFAULT_LIFESPAN, now=1_000_000.7)
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    # Slurm's claims: iat, exp = iat + lifespan (1800 s by default), sun = user name
    assert claims == {"iat": 1_000_000, "exp": 1_001_800, "sun": "alice"}
    assert verify_token(KEY, token, now=1_001_800) == "alice"  # valid up to exp itself


def test_a_token_built_by_hand_from_the_rfc_is_accepted():
    token = signed({"alg": "HS256", "typ": "JWT"}, {"exp": 2000, "iat": 1000, "sun": "bob"})
    assert verify_token(KEY, token, now=1500) == "bob"


def test_expired_forged_and_tampered_tokens_are_refused():
    token = make_token(KEY, "alice", lifespan=60, now=1000)
    with pytest.raises(TokenError, match="expired") as info:
        verify_token(KEY, token, now=1061)
    assert info.value.expired
    with pytest.raises(TokenError, match="signature"):
        verify_token(b"another key" * 3, token, now=1010)
    head, _, sig = token.split(".")
    as_root = b64({"iat": 1000, "exp": 1060, "sun": "root"})
    with pytest.raises(TokenError, match="signature"):
        verify_token(KEY, f"{head}.{as_root}.{sig}", now=1010)


def test_alg_none_and_other_algorithms_are_refused_even_when_signed():
    unsigned = f"{b64({'alg': 'none'})}.{b64({'exp': 2000, 'sun': 'root'})}."
    with pytest.raises(TokenError):
        verify_token(KEY, unsigned, now=1000)
    rs = signed({"alg": "RS256"}, {"exp": 2000, "sun": "root"})
    with pytest.raises(TokenError, match="HS256"):
        verify_token(KEY, rs, now=1000)


@pytest.mark.parametrize(
    "token", ["", "abc", "a.b", "a.b.c.d", "!!!.@@@.###", f"{b64([1])}.{b64([2])}.x"]
)
def test_malformed_tokens_are_refused_with_a_token_error(token):
    with pytest.raises(TokenError):
        verify_token(KEY, token, now=0)


def test_claims_without_user_or_expiry_are_refused():
    with pytest.raises(TokenError, match="exp or sun"):
        verify_token(KEY, signed({"alg": "HS256"}, {"sun": "alice"}), now=0)
    with pytest.raises(TokenError, match="exp or sun"):
        verify_token(KEY, signed({"alg": "HS256"}, {"exp": 10**10}), now=0)
    with pytest.raises(ValueError):
        make_token(KEY, "alice", lifespan=0, now=0)


def test_a_non_ascii_signature_is_refused_not_a_crash():
    key = b"k" * 32
    head, body, _sig = make_token(key, "alice", 60, now=100.0).split(".")
    with pytest.raises(TokenError):
        verify_token(key, f"{head}.{body}.\u00e9\u00e9", now=101.0)
