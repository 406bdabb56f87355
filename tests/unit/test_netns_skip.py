"""tests/netns.py: where hosts cannot be built the test skips, saying why, unless CI
(``SLURMLITE_REQUIRE_NETNS=1``) makes that a failure."""

from __future__ import annotations

import pytest

from tests import netns


def test_no_namespaces_is_a_skip_with_the_reason_or_a_failure_in_ci(monkeypatch):
    monkeypatch.setattr(netns, "netns_problem", lambda: "network namespaces need root")
    monkeypatch.delenv("SLURMLITE_REQUIRE_NETNS", raising=False)
    with pytest.raises(pytest.skip.Exception, match="cannot build hosts .*: network namespaces"):
        netns.netns_or_skip()
    monkeypatch.setenv("SLURMLITE_REQUIRE_NETNS", "1")
    with pytest.raises(pytest.fail.Exception, match=r"need root \(SLURMLITE_REQUIRE_NETNS=1\)"):
        netns.netns_or_skip()
