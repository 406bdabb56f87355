"""Keys, signed requests and launch credentials (slurmlite.credential)."""

from __future__ import annotations

import os
import stat

import pytest

from slurmlite.credential import (
    MAX_SKEW,
    CredentialError,
    NonceCache,
    canonical_body,
    check_request,
    generate_key_file,
    load_key,
    load_node_key,
    node_key,
    orders_key,
    sign_credential,
    sign_request,
    to_node_key,
    verify_credential,
    verify_request,
    write_node_key_file,
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


def test_each_node_has_its_own_keys_one_per_purpose():
    n1, n2 = node_key(KEY, "n1"), node_key(KEY, "n2")
    assert n1 != n2
    keys = {n1, n2, orders_key(n1), orders_key(n2), to_node_key(n1), to_node_key(n2)}
    assert len(keys) == 6


def test_orders_for_one_node_do_not_pass_on_another():
    # the controller signs with n1's orders key; n2 checks with its own
    cred = sign_credential(orders_key(node_key(KEY, "n1")), {"job": 7}, now=0.0, ttl=60)
    assert verify_credential(orders_key(node_key(KEY, "n1")), cred, now=1.0)["job"] == 7
    with pytest.raises(CredentialError, match="signature invalid"):
        verify_credential(orders_key(node_key(KEY, "n2")), cred, now=1.0)


def test_node_key_file_holds_one_nodes_key_privately(tmp_path):
    path = write_node_key_file(KEY, "n1", tmp_path / "keys" / "n1.key")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_node_key(path, "n1") == node_key(KEY, "n1")
    assert KEY.decode() not in path.read_text()  # the cluster key is not in it
    with pytest.raises(CredentialError, match="is for node n1, not n2"):
        load_node_key(path, "n2")  # n2 configured with n1's file: said at start
    write_node_key_file(KEY, "n1", path)  # written again (a new cluster key): replaced
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(list(path.parent.iterdir())) == 1
    os.chmod(path, 0o640)
    with pytest.raises(CredentialError, match="node key file .* group or others.*chmod 600"):
        load_node_key(path, "n1")
    os.chmod(path, 0o600)
    path.write_text("n1 not-hex\n")
    with pytest.raises(CredentialError, match="not a node key"):
        load_node_key(path, "n1")
    with pytest.raises(CredentialError, match="slurmlite keys node n9"):
        load_node_key(tmp_path / "n9.key", "n9")


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


def test_garbage_signatures_are_refused_not_crashed_on():
    headers = sign_request(node_key(KEY, "n1"), "n1", "GET", "/", b"", now=0.0)
    headers["x-slurmlite-signature"] = "é" * 64  # compare_digest raises TypeError on this
    with pytest.raises(CredentialError, match="bad signature"):
        verify_request(KEY, headers, "GET", "/", b"", 0.0, NonceCache())
    cred = sign_credential(KEY, {"job": 1}, now=0.0, ttl=60)
    with pytest.raises(CredentialError, match="signature invalid"):
        verify_credential(KEY, cred.rsplit(".", 1)[0] + ".é", now=1.0)


def test_check_request_takes_the_receivers_own_key_only():
    """An agent knows one key (its own); a request naming another node is refused."""

    def key_of(node: str) -> bytes:
        if node != "n1":
            raise CredentialError(f"request is for node {node}")
        return to_node_key(node_key(KEY, "n1"))

    mine = sign_request(to_node_key(node_key(KEY, "n1")), "n1", "POST", "/v1/x", b"", now=0.0)
    assert check_request(key_of, mine, "POST", "/v1/x", b"", 0.0, NonceCache()) == "n1"
    theirs = sign_request(to_node_key(node_key(KEY, "n2")), "n2", "POST", "/v1/x", b"", now=0.0)
    with pytest.raises(CredentialError, match="for node n2"):
        check_request(key_of, theirs, "POST", "/v1/x", b"", 0.0, NonceCache())


def test_a_nonce_is_kept_exactly_as_long_as_its_request_passes_the_clock_check():
    seen = NonceCache()
    # signed 300 s ahead of our clock (the most allowed), received at 1000: its time stamp
    # passes the skew check until 1000 + 300 + 300 = 1600
    headers = sign_request(node_key(KEY, "n1"), "n1", "POST", "/", b"", now=1000.0 + MAX_SKEW)
    assert verify_request(KEY, headers, "POST", "/", b"", 1000.0, seen) == "n1"
    with pytest.raises(CredentialError, match="replayed"):
        verify_request(KEY, headers, "POST", "/", b"", 1599.9, seen)
    with pytest.raises(CredentialError, match="clock skew of 301 s"):
        verify_request(KEY, headers, "POST", "/", b"", 1601.0, seen)


def test_the_nonce_cache_is_pruned_so_it_cannot_grow_without_bound():
    seen = NonceCache()  # window 600 s, pruned at most every 150 s
    for t in range(10_000):  # one request a second for ~2.8 hours
        assert seen.add(f"n{t}", float(t), until=t + MAX_SKEW)
        # kept: the last 300 s of requests, plus up to 150 s not yet pruned
        assert len(seen) <= 300 + 150 + 1
    assert seen.add("n9999", 9999.5) is False  # still remembered: a replay


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
