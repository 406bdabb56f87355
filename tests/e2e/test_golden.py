"""The same command on a slurmlite cluster prints what Slurm 22.05 printed.

Each golden file holds one command (first line), its stdout, ``[stderr]`` and
``[exit N]``.  EXACT files do not depend on job ids, times or the capture
host, so stdout, stderr and the exit code must match byte for byte (``--version``
also names slurmlite after Slurm's words: that addition is left out).  SHAPE
files differ only in job ids: every number is replaced by ``N`` on both sides
before comparing.  LIVE files (``test_golden_live.py``) replay the golden
story with real jobs; JSON files are ``--json`` documents compared by shape
(``tests/golden_json.py``) with ours for a job of our own; DEFERRED files wait for a feature, and the tests here
check that the feature is still refused, so the list is kept honest.
``golden_catalog.py`` holds the four lists.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.e2e.conftest import wait_for
from tests.e2e.golden_catalog import (
    DEFERRED,
    EXACT,
    GOLDEN,
    JSON,
    LIVE,
    REFUSALS,
    SHAPE,
    all_names,
    load,
)
from tests.e2e.golden_live_specs import NOT_REPLAYED
from tests.golden_json import document_differences, load_golden
from tests.golden_path import needs_golden

pytestmark = needs_golden


def numbers_away(text: str) -> str:
    return re.sub(r"\d+", "N", text)


@pytest.fixture
def workdir(jobdir: Path) -> Path:
    (jobdir / "noshebang.sh").write_text("echo no interpreter line\n")
    return jobdir


def test_every_golden_file_is_accounted_for_exactly_once():
    lists = {"EXACT": EXACT, "SHAPE": SHAPE, "LIVE": LIVE, "JSON": JSON, "DEFERRED": list(DEFERRED)}
    seen: dict[str, list[str]] = {}
    for label, names in lists.items():
        for name in names:
            seen.setdefault(name, []).append(label)
    twice = {n: where for n, where in seen.items() if len(where) > 1}
    assert not twice, f"in more than one list: {twice}"
    files = all_names()
    assert len(files) == 134  # 135 entries in the directory, one of them the README
    assert sorted(set(files) - set(seen)) == [], "golden files no list accounts for"
    assert sorted(set(seen) - set(files)) == [], "listed names with no golden file"


@pytest.mark.parametrize("name", sorted(DEFERRED))
def test_deferred_file_really_uses_its_missing_feature(name):
    issue, feature = DEFERRED[name]
    assert issue in (None, 6), issue
    text = (GOLDEN / f"{name}.txt").read_text()
    assert re.search(REFUSALS[feature].marker, text, re.M), (name, feature)


def test_every_refused_feature_is_why_something_waits():
    used = {feature for _, feature in DEFERRED.values()} | set(NOT_REPLAYED.values())
    assert set(REFUSALS) <= used


@pytest.mark.parametrize("feature", sorted(REFUSALS))
def test_deferred_feature_is_still_refused(cluster, workdir, feature):
    # when this fails the feature has arrived: move its files out of DEFERRED
    refusal = REFUSALS[feature]
    r = cluster.run(refusal.command, cwd=workdir)
    assert r.returncode == refusal.code, (r.stdout, r.stderr)
    assert refusal.stderr in r.stderr


# issue 20: ``--version`` names slurmlite too, after Slurm's own words on the same line
# (cli.common.version_line): those are compared byte for byte, the addition by its shape
SLURMLITE_NAMED = re.compile(r" \(slurmlite \d+\.\d+[^)]*\)$", re.M)


@pytest.mark.parametrize("name", EXACT)
def test_exact(cluster, workdir, name):
    golden = load(name)
    r = cluster.run(golden.command, cwd=workdir)
    stdout = r.stdout
    if name.endswith("_version"):
        stdout = SLURMLITE_NAMED.sub("", stdout)
        assert stdout != r.stdout, f"{golden.command} does not name slurmlite: {r.stdout!r}"
    assert (stdout, r.stderr, r.returncode) == (golden.stdout, golden.stderr, golden.code)


@pytest.mark.parametrize("name", SHAPE)
def test_same_but_ids(cluster, workdir, name):
    golden = load(name)  # "-M anchor" works as is: the test cluster is also called anchor
    r = cluster.run(golden.command, cwd=workdir)
    try:
        assert (numbers_away(r.stdout), numbers_away(r.stderr), r.returncode) == (
            numbers_away(golden.stdout),
            numbers_away(golden.stderr),
            golden.code,
        )
    finally:
        cluster.run("scancel -u $(id -un) -t PENDING")


@pytest.mark.parametrize("name", JSON)
def test_json_same_shape(cluster, workdir, name):
    """The golden command on a job of ours (running for squeue, finished for sacct)."""
    command, golden, _, code = load_golden(GOLDEN / f"{name}.txt")
    running = command.startswith("squeue")
    job = cluster.submit("--wrap 'sleep 30'" if running else "--wrap true", cwd=workdir)
    try:
        if running:
            state = lambda: cluster.run(f"squeue -h -j {job} -o %T").stdout.strip()  # noqa: E731
            wait_for(lambda: state() == "RUNNING", what=f"job {job} to run")
        else:
            cluster.wait_done(job)
        r = cluster.run(re.sub(r"-j \d+", f"-j {job}", command), cwd=workdir)
        assert (r.stderr, r.returncode) == ("", code)
        ours = json.loads(r.stdout)
        assert [j["job_id"] for j in ours["jobs"]] == [job]
        assert document_differences(golden, ours) == []
    finally:
        cluster.run(f"scancel {job}")
