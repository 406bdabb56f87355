"""A fresh ``slurmlite cluster up`` (the real command line): a small lab's priority weights,
shown by ``scontrol show config`` and acting in ``sprio``; ``--fifo`` writes zeros; and
``slurmlite version`` asks the cluster's controller about its store."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from cli.localcluster import down
from controller.store.migrate import head_revision
from slurmlite.version import slurmlite_version
from tests.e2e.conftest import BIN, Cluster, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the local cluster runs jobs as root")


@contextmanager
def cluster_up(prefix: str, *options: str) -> Iterator[Cluster]:
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o755)
    (base / "work").mkdir(mode=0o777)
    directory = base / "c"
    try:
        r = subprocess.run(
            [str(BIN / "slurmlite"), "cluster", "up", "--dir", str(directory), *options],
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert r.returncode == 0, r.stderr
        yield Cluster(directory=directory, conf=directory / "slurm.conf", work=base / "work")
    finally:
        down(directory)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def lab() -> Iterator[Cluster]:
    with cluster_up("slurmlite-lab-", "--nodelist", "ld[1-2]", "--cpus-per-node", "2") as c:
        yield c


def config(c: Cluster) -> dict[str, str]:
    r = c.run("scontrol show config")
    assert r.returncode == 0, r.stderr
    pairs = (line.split("=", 1) for line in r.stdout.splitlines() if " = " in line)
    return {k.strip(): v.strip() for k, v in pairs}


def test_a_fresh_cluster_has_a_labs_weights(lab: Cluster) -> None:
    shown = config(lab)
    assert shown["PriorityType"] == "priority/multifactor"
    assert shown["PriorityWeightFairshare"] == "10000"
    assert shown["PriorityWeightAge"] == "1000"
    assert shown["PriorityWeightJobSize"] == "100"
    assert (shown["PriorityMaxAge"], shown["PriorityDecayHalfLife"]) == ("7-00:00:00",) * 2
    assert shown["SlurmliteVersion"] == slurmlite_version()


def test_fair_share_dominates_a_pending_jobs_priority(lab: Cluster) -> None:
    for command in ("sacctmgr -i add account lab", "sacctmgr -i add user root account=lab"):
        r = lab.run(command)
        assert r.returncode == 0, (command, r.stderr)
    big = lab.submit("-N 2 --exclusive -t 5 --wrap 'sleep 60'")
    waiting = lab.submit("-t 5 --wrap true")
    try:

        def factors() -> list[int] | None:
            out = lab.run(f"sprio -h -j {waiting} -o '%Y %F %A %J'").stdout.split()
            return [int(x) for x in out] if len(out) == 4 else None

        priority, fairshare, age, jobsize = wait_for(factors, what=f"sprio of job {waiting}")
        assert fairshare == 10000  # an association without usage: the whole fair-share weight
        assert fairshare > 10 * max(age, jobsize, 1)
        assert priority >= fairshare
    finally:
        lab.run(f"scancel {big} {waiting}")


def test_slurmlite_version_asks_the_controller_about_its_store(lab: Cluster) -> None:
    head = head_revision()
    for command in ("slurmlite version", "slurmlite --version"):
        r = lab.run(command)
        assert r.returncode == 0, r.stderr
        lines = dict(line.split(None, 1) for line in r.stdout.splitlines())
        assert lines["slurmlite"] == slurmlite_version()
        assert lines["controller"].startswith(f"slurmlite {slurmlite_version()}, cluster local")
        assert lines["store"] == f"sqlite, at revision {head} (up to date)"
        assert "sqlite:///" not in r.stdout  # the kind, never the URL


@pytest.mark.parametrize("why", ["no slurm.conf", "no controller"])
def test_slurmlite_version_without_a_controller_still_answers(lab: Cluster, why: str) -> None:
    conf = lab.work / "elsewhere.conf"
    if why == "no controller":  # the lab's configuration, its controller's socket and port gone
        text = lab.conf.read_text().replace(str(lab.directory / "state"), str(lab.work))
        lines = [ln for ln in text.splitlines() if not ln.startswith("SlurmctldPort=")]
        conf.write_text("\n".join([*lines, "SlurmctldPort=1"]) + "\n")
    r = lab.run("slurmlite version", SLURM_CONF=str(conf))
    assert r.returncode == 0, r.stderr
    *local, last = r.stdout.splitlines()
    assert local[0].split() == ["slurmlite", slurmlite_version()]
    assert [line.split()[0] for line in local] == ["slurmlite", "slurm", "store", "python"]
    assert last.startswith("controller      could not be asked: ")
    if why == "no controller":
        assert "Unable to contact slurm controller" in last


def test_fifo_leaves_every_weight_at_zero() -> None:
    with cluster_up("slurmlite-fifo-", "--nodelist", "lf1", "--fifo") as c:
        shown = config(c)
        weights = {k: v for k, v in shown.items() if k.startswith("PriorityWeight")}
        assert weights.pop("PriorityWeightTRES") == "(null)"
        assert set(weights.values()) == {"0"}, weights
