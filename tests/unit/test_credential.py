"""Signed requests and launch credentials (slurmlite.credential)."""

from __future__ import annotations

import os
import stat

import pytest

from slurmlite.credential import (
    CredentialError,
    NonceCache,
    canonical_body,
    controller_key,
    generate_key_file,
    load_key,
    node_key,
    sign_credential,
    sign_request,
    verify_credential,
    verify_request,
)

KEY = b"k" * 64


def test_key_file_is_private_and_loose_modes_are_refused(tmp_path):
    path = tmp_path / "cluster.key"
    generate_key_file(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(load_key(path)) >= 32
    os.chmod(path, 0o644)
    with pytest.raises(CredentialError, match="chmod 600"):
        load_key(path)


def test_missing_key_file_says_how_to_create_it(tmp_path):
    with pytest.raises(CredentialError, match="slurmlite keygen"):
        load_key(tmp_path / "nope.key")


def test_each_node_has_its_own_key():
    assert node_key(KEY, "n1") != node_key(KEY, "n2")
    assert controller_key(KEY) not in (node_key(KEY, "n1"), node_key(KEY, "controller"))


def test_signed_request_round_trip_and_replay_refused():
    seen = NonceCache()
    headers = sign_request(node_key(KEY, "n1"), "n1", "POST", "/v1/x", b"{}", now=1000.0)
    assert verify_request(KEY, headers, "POST", "/v1/x", b"{}", 1000.5, seen) == "n1"
    with pytest.raises(CredentialError, match="replayed"):
        verify_request(KEY, headers, "POST", "/v1/x", b"{}", 1000.6, seen)


def test_node_cannot_sign_for_another_node():
    # n2 signs with its own key but claims to be n1: the controller derives n1's key -> mismatch
    headers = sign_request(node_key(KEY, "n2"), "n1", "POST", "/v1/x", b"{}", now=1000.0)
    with pytest.raises(CredentialError, match="bad signature"):
        verify_request(KEY, headers, "POST", "/v1/x", b"{}", 1000.0, NonceCache())


def test_altered_body_or_path_is_refused():
    headers = sign_request(node_key(KEY, "n1"), "n1", "POST", "/v1/x", b'{"a":1}', now=5.0)
    with pytest.raises(CredentialError):
        verify_request(KEY, headers, "POST", "/v1/x", b'{"a":2}', 5.0, NonceCache())
    with pytest.raises(CredentialError):
        verify_request(KEY, headers, "POST", "/v1/y", b'{"a":1}', 5.0, NonceCache())


def test_clock_skew_is_named():
    headers = sign_request(node_key(KEY, "n1"), "n1", "GET", "/", b"", now=0.0)
    with pytest.raises(CredentialError, match="clock skew of 1000 s"):
        verify_request(KEY, headers, "GET", "/", b"", 1000.0, NonceCache())


def test_unsigned_request_refused():
    with pytest.raises(CredentialError, match="not signed"):
        verify_request(KEY, {}, "GET", "/", b"", 0.0, NonceCache())


def test_credential_expiry_and_tampering():
    cred = sign_credential(KEY, {"job": 7, "op": "launch"}, now=100.0, ttl=60)
    assert verify_credential(KEY, cred, now=130.0)["job"] == 7
    with pytest.raises(CredentialError, match="expired"):
        verify_credential(KEY, cred, now=161.0)
    text, sig = cred.rsplit(".", 1)
    with pytest.raises(CredentialError, match="signature"):
        verify_credential(KEY, text + "." + "0" * len(sig), now=130.0)
    with pytest.raises(CredentialError, match="signature"):
        verify_credential(b"x" * 64, cred, now=130.0)


def test_canonical_body_ignores_the_credential_and_key_order():
    a = canonical_body({"credential": "c1", "b": 1, "a": 2})
    b = canonical_body({"a": 2, "b": 1, "credential": "c2"})
    assert a == b == b'{"a":2,"b":1}'
