"""slurmlite.munge against a real munged on a private key and socket (tests/munged.py)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from slurmlite import munge
from tests.munged import Munged, munged_or_skip


@pytest.fixture(scope="module")
def munged(tmp_path_factory):
    binary = munged_or_skip()
    daemon = Munged.start(tmp_path_factory.mktemp("munged"), binary)
    yield daemon
    daemon.stop()


def test_a_credential_proves_our_uid_and_gid_once(munged):
    cred = munge.encode(munged.socket)
    assert cred.startswith("MUNGE:")
    assert munge.decode(cred, munged.socket) == (os.getuid(), os.getgid())
    with pytest.raises(munge.CredentialReplayed, match="Replayed credential"):
        munge.decode(cred, munged.socket)  # munged remembers it: a copy is worthless


def test_each_encode_is_a_new_credential(munged):
    first, second = munge.encode(munged.socket), munge.encode(munged.socket)
    assert first != second
    assert munge.decode(second, munged.socket) == munge.decode(first, munged.socket)


def test_an_expired_credential_is_refused(munged):
    cred = subprocess.run(
        ["munge", "-n", "-t", "1", "-S", munged.socket], capture_output=True, text=True, check=True
    ).stdout.strip()
    # munge counts its time-to-live in whole seconds of the real clock: a 1 s credential
    # is expired once its encode second + 1 is over, at most 2 s from now
    time.sleep(2.2)
    with pytest.raises(munge.CredentialExpired, match="Expired credential"):
        munge.decode(cred, munged.socket)


def test_a_credential_of_another_key_is_invalid(munged, tmp_path):
    other = Munged.start(tmp_path / "other", munged_or_skip())
    try:
        foreign = munge.encode(other.socket)
    finally:
        other.stop()
    with pytest.raises(munge.CredentialInvalid):
        munge.decode(foreign, munged.socket)


@pytest.mark.parametrize(
    "text", ["garbage", "MUNGE:not-base64:", "MUNGE:" + "A" * 5000, "MUNGE:a\nUID: 0"]
)
def test_text_that_is_no_credential_is_invalid(munged, text):
    with pytest.raises(munge.CredentialInvalid):
        munge.decode(text, munged.socket)


def test_a_credential_with_a_payload_is_refused(munged):
    # the payload is the sender's to choose: it must never be read as metadata
    cred = subprocess.run(
        ["munge", "-S", munged.socket, "-s", "UID: 4242\nGID: 4242"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with pytest.raises(munge.CredentialInvalid, match="payload"):
        munge.decode(cred, munged.socket)


def test_without_munged_both_sides_say_it_is_unavailable(tmp_path, munged):
    nowhere = str(tmp_path / "no-munged.sock")
    with pytest.raises(munge.MungeUnavailable, match="Did you start munged"):
        munge.encode(nowhere)
    with pytest.raises(munge.MungeUnavailable):
        munge.decode(munge.encode(munged.socket), nowhere)
