"""Which slurmlite this is (slurmlite/version.py) and how the commands show it."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from cli import seff
from cli.common import VERSION, version_line
from cli.slurmlite_version import local_lines, store_state
from controller.store.migrate import head_revision
from slurmlite import version
from slurmlite.config import SLURM_VERSION

ROOT = Path(__file__).resolve().parents[2]


def pyproject_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_version_is_the_package_metadata_which_is_pyproject():
    assert version.slurmlite_version() == metadata.version("slurmlite") == pyproject_version()


def test_a_source_tree_never_installed_reads_pyproject(monkeypatch):
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    version.slurmlite_version.cache_clear()
    try:
        assert version.slurmlite_version() == pyproject_version()
        monkeypatch.setattr(version, "ROOT", ROOT / "nowhere")
        version.slurmlite_version.cache_clear()
        assert version.slurmlite_version() == "unknown"
    finally:
        version.slurmlite_version.cache_clear()


def test_schema_head_read_from_the_files_is_alembics_head():
    assert version.schema_head() == head_revision()


def test_schema_head_of_a_branched_or_missing_chain(tmp_path):
    assert version.schema_head(tmp_path / "none") is None
    for name, rev, down in (("a", "1", "None"), ("b", "2", '"1"'), ("c", "3", '"1"')):
        (tmp_path / f"{name}.py").write_text(f'revision = "{rev}"\ndown_revision = {down}\n')
    assert version.schema_head(tmp_path) == "2,3"
    (tmp_path / "d.py").write_text('revision = "4"\ndown_revision = ("2", "3")\n')
    assert version.schema_head(tmp_path) == "4"


def test_slurm_commands_version_line_still_reads_as_slurms():
    line = version_line()
    assert line == f"slurm-wlm {SLURM_VERSION} (slurmlite {version.slurmlite_version()})"
    assert VERSION == f"slurm-wlm {SLURM_VERSION}"  # cli.common cannot import the config
    # what version parsers do with it (spec/clients.md: torchx reads `sinfo --version`)
    assert line.split()[1] == SLURM_VERSION  # split()[1], awk '{print $2}'
    assert line.split(" ")[1] == SLURM_VERSION  # cut -d' ' -f2
    major, minor = re.match(r"^slurm\S* (\d+)\.(\d+)", line).groups()  # type: ignore[union-attr]
    assert (int(major), int(minor)) == (22, 5)


def test_seff_keeps_its_own_words_first():
    assert seff.version_text() == f"seff Version 2.1 (slurmlite {version.slurmlite_version()})"


def test_local_lines_need_no_controller():
    lines = local_lines()
    assert lines[0].split() == ["slurmlite", version.slurmlite_version()]
    assert lines[1].split() == ["slurm", "dialect", SLURM_VERSION]
    assert lines[2].split()[:3] == ["store", "schema", head_revision()]
    assert lines[3].startswith("python")


@pytest.mark.parametrize(
    ("here", "answer", "said"),
    [
        ("0022", {"store_revision": "0022", "schema_head": "0022"}, "up to date"),
        ("0022", {"store_revision": None, "schema_head": "0022"}, "never migrated"),
        ("0022", {"store_revision": "0021", "schema_head": "0022"}, "code expects 0022"),
        ("0023", {"store_revision": "0022", "schema_head": "0022"}, "expects 0023"),
    ],
)
def test_store_state_says_which_side_was_upgraded(here, answer, said):
    assert said in store_state(here, answer)
