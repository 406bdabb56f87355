"""The one golden path: found beside the checkout; absent, a skip, or a failure in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

import tests.golden_path as gp


def test_the_golden_directory_is_shared_beside_the_checkout():
    root = Path(__file__).resolve().parents[2]
    assert gp.GOLDEN == root.parent / "shared" / "golden" / "slurm-22.05"


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(gp, "GOLDEN", tmp_path / "none")
    monkeypatch.delenv(gp.REQUIRE, raising=False)
    return tmp_path


def test_absent_golden_files_skip(nowhere):
    with pytest.raises(pytest.skip.Exception, match="not available"):
        gp.golden_path()
    with pytest.raises(pytest.skip.Exception, match="30_x.txt"):
        gp.golden_path("30_x.txt")
    assert gp.optional_golden("30_x.txt") is None


def test_absent_golden_files_fail_when_required(nowhere, monkeypatch):
    monkeypatch.setenv(gp.REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match="SLURMLITE_REQUIRE_GOLDEN=1"):
        gp.golden_path()
    with pytest.raises(pytest.fail.Exception, match="30_x.txt"):
        gp.optional_golden("30_x.txt")


def test_present_files_are_found(nowhere, monkeypatch):
    (nowhere / "none").mkdir()
    (nowhere / "none" / "30_x.txt").write_text("$ x\n[exit 0]\n")
    monkeypatch.setenv(gp.REQUIRE, "1")
    assert gp.golden_path("30_x.txt").read_text().startswith("$ x")
    assert gp.optional_golden("30_x.txt") == nowhere / "none" / "30_x.txt"
