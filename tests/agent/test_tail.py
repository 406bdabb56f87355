"""Tail orders: the end of a batch job's output files, for the dashboard (``/v1/tail``).

A real agent (in-process ASGI, its real credential checks) answers the
controller's real client and signer (``HttpAgentClient.tail``,
``Signer.tail``).  The files are plain files of the test's user, who is
the job's user here (the agent is not root, so it reads them itself;
``agent.tail``).  What a user would notice: the page gets the last lines
of their output; a symlink, a FIFO or a missing file gives "no output"
and nothing is created or followed; a request or credential that is not
the controller's is refused before any file is opened.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import time
from pathlib import Path

import httpx
import pytest

from agent.daemon import AgentState
from controller.nodes.agent_client import AgentAddress, HttpAgentClient, Signer
from slurmlite.protocol import TailSpec
from tests.agent.jobs import IS_ROOT
from tests.agent.signing import CLUSTER_KEY, post, signed
from tests.agent.test_orders import agent, reap

N1 = AgentAddress("n1", "127.0.0.1", 6818)
ME, MY_GID = os.getuid(), os.getgid()
LIMIT = 16 * 1024


def tail(paths: list[Path], job_id: int = 7, uid: int = ME) -> TailSpec:
    return TailSpec("", job_id, 0, uid, MY_GID, [str(p) for p in paths], LIMIT)


def run(area: Path, body) -> None:  # type: ignore[no-untyped-def]
    async def go() -> None:
        async with agent(area / "spool") as (state, client):
            await body(state, client)

    try:
        asyncio.run(go())
    finally:
        reap(area / "spool")


async def ask(client: httpx.AsyncClient, spec: TailSpec) -> list[dict]:  # type: ignore[type-arg]
    """What the controller's client gets for ``spec``, signed as the controller signs it."""
    controller = HttpAgentClient(Signer(CLUSTER_KEY))
    await controller.close()
    controller._http = client  # the real client's requests, answered in-process
    return await controller.tail(N1, Signer(CLUSTER_KEY).tail(spec, "n1", time.time()))


def test_the_end_of_stdout_and_a_separate_stderr_come_back(area: Path) -> None:
    out, err = area / "slurm-7.out", area / "slurm-7.err"
    # 2,000 lines of 11 bytes = 22,000 bytes: more than 16 KiB, so the tail starts mid-file
    out.write_text("".join(f"epoch {i:04d}\n" for i in range(2000)))
    err.write_text("warning: lr high\n")

    async def body(state: AgentState, client: httpx.AsyncClient) -> None:
        files = await ask(client, tail([out, err]))
        assert [f["path"] for f in files] == [str(out), str(err)]
        text = files[0]["data"]
        assert files[0]["found"] and text.endswith("epoch 1999\n")
        assert text.startswith("epoch ") and len(text) <= LIMIT  # from a whole line
        assert "epoch 0000" not in text
        assert files[1] == {"path": str(err), "found": True, "data": "warning: lr high\n"}

    run(area, body)


def test_a_symlink_a_fifo_or_a_missing_file_is_no_output_and_nothing_is_created(
    area: Path,
) -> None:
    secret = area / "secret"
    secret.write_text("not for the page\n")
    link, fifo, missing = area / "link.out", area / "fifo.out", area / "missing.out"
    link.symlink_to(secret)
    os.mkfifo(fifo)

    async def body(state: AgentState, client: httpx.AsyncClient) -> None:
        files = await ask(client, tail([link, fifo]))
        assert [(f["found"], f["data"]) for f in files] == [(False, ""), (False, "")]
        [gone] = await ask(client, tail([missing]))
        assert not gone["found"] and not missing.exists()
        [theirs] = await ask(client, tail([secret], uid=ME + 1))  # not the job user's file
        assert not theirs["found"] and theirs["data"] == ""

    run(area, body)


def test_only_the_controllers_signed_tail_orders_are_answered(area: Path) -> None:
    out = area / "slurm-9.out"
    out.write_text("private results\n")

    async def body(state: AgentState, client: httpx.AsyncClient) -> None:
        order = signed(tail([out], job_id=9))
        unsigned = await client.post("/v1/tail", content=json.dumps(order).encode())
        assert unsigned.status_code == 401  # no controller signature on the request
        forged = signed(tail([out], job_id=9), cluster_key=b"x" * 64)
        as_note = signed(tail([out], job_id=9), op="note")
        altered = {**signed(tail([area / "other.out"], job_id=9)), "paths": [str(out)]}
        other_user = signed(tail([out], job_id=9), uid=ME + 1)  # signed for another uid
        for bad, why in (
            (forged, "signature invalid"),
            (as_note, "wrong operation"),
            (altered, "request altered"),
            (other_user, "uid/gid mismatch"),
        ):
            r = await post(client, "/v1/tail", bad)
            assert r.status_code == 403 and why in r.text, (why, r.text)
            assert "private results" not in r.text
        good = await post(client, "/v1/tail", order)
        assert good.json()["files"][0]["data"] == "private results\n"
        replayed = await post(client, "/v1/tail", order)
        assert replayed.status_code == 403 and "replayed" in replayed.text
        too_big = await post(client, "/v1/tail", {**order, "limit": 1 << 30})
        assert too_big.status_code == 422 and "limit" in too_big.text

    run(area, body)


@pytest.mark.skipif(not IS_ROOT, reason="reading as the job's user needs a root agent")
def test_a_root_agent_reads_as_the_jobs_user(area: Path) -> None:
    nobody = pwd.getpwnam("nobody")
    theirs, locked = area / "work" / "theirs.out", area / "work" / "locked.out"
    for path, mode in ((theirs, 0o600), (locked, 0o000)):
        path.write_text(f"{path.name} text\n")
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
        os.chmod(path, mode)
    long = area / "work" / "long.out"  # 22,000 bytes, as in the first test
    long.write_text("".join(f"epoch {i:04d}\n" for i in range(2000)))
    os.chown(long, nobody.pw_uid, nobody.pw_gid)
    hidden_dir = area / "root-only"
    hidden_dir.mkdir(mode=0o700)
    hidden = hidden_dir / "hidden.out"
    hidden.write_text("behind a root-only directory\n")
    os.chown(hidden, nobody.pw_uid, nobody.pw_gid)

    async def body(state: AgentState, client: httpx.AsyncClient) -> None:
        def as_nobody(*paths: Path) -> TailSpec:
            return TailSpec("", 7, 0, nobody.pw_uid, nobody.pw_gid, [str(p) for p in paths], LIMIT)

        # root could open all three; the job's user can read only the first
        files = await ask(client, as_nobody(theirs, locked)) + await ask(client, as_nobody(hidden))
        assert [(f["found"], f["data"]) for f in files] == [
            (True, "theirs.out text\n"),
            (False, ""),
            (False, ""),
        ]
        [end] = await ask(client, as_nobody(long))
        text = end["data"]
        assert text.endswith("epoch 1999\n") and text.startswith("epoch ")
        assert len(text) <= LIMIT and "epoch 0000" not in text

    run(area, body)
