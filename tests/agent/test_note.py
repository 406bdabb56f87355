"""Note orders: a line the controller adds to a running batch job's stderr (``/v1/note``).

A real agent (in-process ASGI, its real credential checks) runs real jobs
whose stderr is a file of their own.  The controller's real client and
signer (``HttpAgentClient``, ``Signer``) send the idle-GPU warning; the
line lands at the end of the job's error file while the job runs on.  The
agent appends as the kill line is appended (``agent.killing.write_stderr``):
a stderr path swapped for a symlink is never followed, so the file it
points at stays as it was.  Notes are orders like any other: op ``note``
only, once only, one line only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx

from agent.daemon import AgentState
from controller.nodes.agent_client import AgentAddress, HttpAgentClient, Signer
from slurmlite.protocol import NoteSpec, SignalSpec
from tests.agent.jobs import a_spec
from tests.agent.signing import CLUSTER_KEY, post, signed
from tests.agent.test_orders import agent, reap
from tests.agent.test_supervision import until

LINE = (
    "slurmstepd-n1: warning: job 81: its GPUs have been under 5 % for 2:00:00; it will be "
    "requeued at 2026-12-06T10:32:00 unless they get busy (SlurmliteIdleGpuPolicy)"
)
N1 = AgentAddress("n1", "127.0.0.1", 6818)


def note(job_id: int, line: str = LINE) -> dict:  # type: ignore[type-arg]
    return signed(NoteSpec(credential="", job_id=job_id, restarts=0, line=line))


def scenario(area: Path, body: Callable[[AgentState, httpx.AsyncClient], Awaitable[None]]) -> None:
    async def go() -> None:
        async with agent(area / "spool") as (state, client):
            try:
                await body(state, client)
            finally:
                for job_id, restarts in list(state.jobs):  # stop what the test started
                    stop = signed(SignalSpec("", job_id, restarts, signal=None, kill_wait=1))
                    await post(client, "/v1/signal", stop)
                await until(lambda: not state.jobs)

    try:
        asyncio.run(go())
    finally:
        reap(area / "spool")


async def start(client: httpx.AsyncClient, area: Path, job_id: int) -> Path:
    """Job ``job_id``, its stderr in work/err-<id> (its own file); once it has written to it."""
    err = area / "work" / f"err-{job_id}"
    spec = a_spec(area, job_id, "echo started >&2\nsleep 60\n", std_err=str(err))
    assert (await post(client, "/v1/launch", signed(spec))).json() == {"status": "started"}
    await until(lambda: err.exists() and err.read_text() == "started\n")
    return err


def test_the_controllers_note_is_appended_to_the_running_jobs_stderr(area: Path) -> None:
    async def body(state: AgentState, client: httpx.AsyncClient) -> None:
        err = await start(client, area, 81)
        controller = HttpAgentClient(Signer(CLUSTER_KEY))
        await controller.close()
        controller._http = client  # the real client's requests, answered in-process
        spec = NoteSpec(credential="", job_id=81, restarts=0, line=LINE)
        await controller.note(N1, Signer(CLUSTER_KEY).note(spec, "n1", 0, 0, time.time()))
        assert err.read_text() == f"started\n{LINE}\n"
        assert (81, 0) in state.jobs and state.jobs[81, 0].proc.status is None  # runs on

    scenario(area, body)


def test_a_stderr_swapped_for_a_symlink_is_not_followed(area: Path) -> None:
    victim = area / "victim"
    victim.write_text("precious\n")

    async def body(state: AgentState, client: httpx.AsyncClient) -> None:
        err = await start(client, area, 82)
        err.unlink()
        err.symlink_to(victim)  # what a user could do to have the agent write elsewhere
        r = await post(client, "/v1/note", note(82))
        assert r.json() == {"status": "not written"}
        assert victim.read_text() == "precious\n" and err.is_symlink()

    scenario(area, body)


def test_notes_are_orders_checked_like_any_other(area: Path) -> None:
    async def body(state: AgentState, client: httpx.AsyncClient) -> None:
        err = await start(client, area, 83)
        order = note(83)
        assert (await post(client, "/v1/note", order)).json() == {"status": "written"}
        replayed = await post(client, "/v1/note", order)
        assert replayed.status_code == 403 and "replayed" in replayed.text
        # a note's credential stops nothing: it is no terminate order
        as_kill = {**note(83), "signal": None, "kill_wait": 1}
        r = await post(client, "/v1/signal", as_kill)
        assert r.status_code == 403 and "wrong operation" in r.text
        r = await post(client, "/v1/note", note(83, "two\nlines"))
        assert r.status_code == 422 and "line" in r.text
        assert (await post(client, "/v1/note", note(99))).json() == {"status": "not running"}
        assert err.read_text() == f"started\n{LINE}\n"  # the one accepted note only
        assert state.jobs[83, 0].proc.status is None

    scenario(area, body)
