"""The manual's shell examples run: every ``$ `` line of README.md and docs/*.md.

One local cluster serves the module (nodes ``node[1-2]``, two fake GPUs each,
what ``slurmlite cluster up --nodelist 'node[1-2]' --gpus-per-node 2`` makes).
Each code block is one test (id ``file:line``): its commands run in order in
one bash shell, in a fresh working folder, with the cluster's ``SLURM_CONF``
and the virtual environment's ``bin`` on ``PATH``.  A command must exit 0, or
N when its line ends with ``# exit N``; the shown output is not compared.
A block preceded by ``<!-- not-run: REASON -->`` is skipped with that reason.
``docs/scheduling.md`` has its own runner (``tests/sim/test_docs_scheduling.py``).
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator

import pytest

from tests.docs.markdown import OWN_RUNNER, Block, doc_files, rel, shell_examples
from tests.e2e.conftest import Cluster, local_cluster

BLOCK_TIMEOUT = 180.0  # seconds for one block's commands together
BLOCKS = [b for doc in doc_files() if rel(doc) not in OWN_RUNNER for b in shell_examples(doc)]
RUNNABLE = [b for b in BLOCKS if b.not_run is None]


def script(block: Block) -> str:
    """The block as one bash script that stops at the first unexpected exit status."""
    out = []
    for c in block.commands:
        what = shlex.quote(f"{rel(block.path)}:{c.line}: $ {c.text.splitlines()[0]}")
        out.append(c.text)
        out.append(
            f"__rc=$?; if [ $__rc -ne {c.exit_code} ]; then "
            f'echo {what}; echo "exited $__rc, expected {c.exit_code}"; exit 97; fi; (exit $__rc)'
        )
    out.append("exit 0")  # the last command may end non-zero on purpose
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def lab() -> Iterator[Cluster]:
    with local_cluster("slurmlite-docs-", nodelist="node[1-2]", gpus_per_node=2) as c:
        yield c


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_a_shell_example_runs(block: Block, request: pytest.FixtureRequest) -> None:
    if block.not_run is not None:
        assert block.not_run, f"{block.id}: a not-run marker needs its reason"
        pytest.skip(f"not run: {block.not_run}")
    lab: Cluster = request.getfixturevalue("lab")
    work = lab.new_workdir()
    try:
        done = subprocess.run(
            ["bash", "-c", script(block)],
            cwd=work,
            env=lab.env(),
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(
            f"{block.id}: still running after {BLOCK_TIMEOUT:.0f} s\n{e.stdout}\n{e.stderr}"
        )
    assert done.returncode == 0, f"{block.id}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def test_the_runner_reads_commands_exit_codes_and_markers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    doc = tmp_path / "x.md"
    doc.write_text(
        "<!-- not-run: needs two hosts -->\n"
        "```\n$ ssh far true\n```\n\n"
        "```console\n$ sbatch --wait \\\n    --wrap 'exit 3'   # exit 3\nshown output\n"
        "$ cat > job.sh <<'EOF'\n#!/bin/bash\necho hi\nEOF\n$ true\n```\n"
    )
    first, second = shell_examples(doc)
    assert first.not_run == "needs two hosts" and first.line == 2
    assert second.not_run is None and second.line == 6
    assert [(c.line, c.exit_code) for c in second.commands] == [(7, 3), (10, 0), (14, 0)]
    assert second.commands[1].text.endswith("echo hi\nEOF")
    assert "exit 97" in script(second)
