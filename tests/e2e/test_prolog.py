"""A node's Prolog fails: the node drains, the job is requeued held, sacct says why.

One cluster of its own (pf1, pf2) whose agents run ``Prolog=`` a script
that fails on any node while a marker file exists.  The story:

1. job J (``--open-mode=append``) is started on node X; X's prolog fails ->
   X is DRAIN with reason "Prolog error"; J is PENDING, held by an operator
   (squeue: "launch failed requeued held"),
   Restarts 1, ``sacct -o RestartCauses`` ``prolog:X``;
2. the marker goes, an operator releases J -> it runs on the other node
   with ``SLURM_RESTART_COUNT=1``; ``scontrol requeue`` -> the second run
   prints ``SLURM_RESTART_COUNT=2`` after the first run's line (append: the
   first run's output survives), and the causes read
   ``prolog:X,requeue:<user>``.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Cluster, local_cluster, wait_for

FAIL_MARK = "fail-prologs"


@pytest.fixture(scope="module")
def prolog_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    scripts = tmp_path_factory.mktemp("prolog")
    scripts.chmod(0o755)
    prolog = scripts / "prolog.sh"
    prolog.write_text(f"#!/bin/sh\n[ -e {scripts / FAIL_MARK} ] && exit 1\nexit 0\n")
    prolog.chmod(0o755)
    (scripts / FAIL_MARK).touch()
    with local_cluster(
        "slurmlite-prolog-",
        nodelist="pf[1-2]",
        cpus_per_node=1,
        mem_per_node=1000,
        extra_conf=(f"Prolog={prolog}", "PrologEpilogTimeout=20"),
    ) as c:
        c.scripts = scripts  # type: ignore[attr-defined]
        yield c


def field(c: Cluster, command: str, key: str) -> str:
    m = re.search(rf"\b{key}=(.*?)(?: [A-Z]\w*=|$)", c.run(command).stdout, re.M)
    return m.group(1) if m else ""


def sacct(c: Cluster, jid: int) -> str:
    return c.run(f"sacct -X -n -P -j {jid} -o State,Restarts,RestartCauses").stdout.strip()


def test_a_failing_prolog_drains_the_node_and_requeues_the_job_held(
    prolog_cluster: Cluster,
) -> None:
    c = prolog_cluster
    work = c.new_workdir()
    script = work / "job.sh"
    script.write_text(
        "#!/bin/sh\necho run=$SLURM_RESTART_COUNT\n"
        '[ "$SLURM_RESTART_COUNT" = 1 ] && exec sleep 60\nexit 0\n'
    )
    jid = c.submit(f"--open-mode=append -o {work}/out-%j.txt {script}", cwd=work)
    # 1. the prolog fails where the job was sent: that node drains, the job is held
    wait_for(lambda: sacct(c, jid).startswith("PENDING|1|prolog:"), 30, "the held requeue")
    node = sacct(c, jid).rsplit(":", 1)[1]
    # squeue shows the description Slurm gives such a job; scontrol the reason under it
    assert c.run(f"squeue -h -j {jid} -o '%T|%r'").stdout.strip() == (
        "PENDING|launch failed requeued held"
    )
    assert field(c, f"scontrol show job {jid}", "RestartCauses") == f"prolog:{node}"
    shown = c.run(f"scontrol show node {node}").stdout
    assert "DRAIN" in field(c, f"scontrol show node {node}", "State"), shown
    assert field(c, f"scontrol show node {node}", "Reason").startswith("Prolog error"), shown
    assert not (work / f"out-{jid}.txt").exists()  # the script never ran
    # 2. fixed and released, it runs on the other node, then is requeued by its user
    (c.scripts / FAIL_MARK).unlink()  # type: ignore[attr-defined]
    r = c.run(f"scontrol release {jid}")
    assert r.returncode == 0, r.stderr
    out = work / f"out-{jid}.txt"
    wait_for(lambda: out.exists() and "run=1" in out.read_text(), 30, "the second run")
    assert c.run(f"squeue -h -j {jid} -o %N").stdout.strip() != node
    r = c.run(f"scontrol requeue {jid}")
    assert r.returncode == 0, r.stderr
    assert c.wait_done(jid, timeout=60) == "COMPLETED"
    # another test's rendezvous may listen on this job's MASTER_PORT: its warning is not the job's
    lines = [x for x in out.read_text().splitlines() if "MASTER_PORT" not in x]
    # append: the first run's line is still there, then Slurm's requeue line, then run 2
    assert lines[0] == "run=1" and lines[-1] == "run=2", lines
    assert any("DUE TO JOB REQUEUE" in line for line in lines), lines
    assert sacct(c, jid) == f"COMPLETED|2|prolog:{node},requeue:{getpass.getuser()}"
