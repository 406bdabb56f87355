"""Who may start a job step on a node, and feed it: only the holder of its credential.

srun, not the controller, posts a step, so the request carries no controller
signature; the step's credential (signed for this node with its orders key)
is the whole authority.  A forged one is a 401, a valid one that does not
fit (another node's, altered, expired, replayed, another run of the job) a
403 -- and in every case nothing is spawned: the step's command would
create a file, and it never exists.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path
from typing import Any

from agent.daemon import AgentState, Job
from slurmlite.credential import canonical_body, node_key, orders_key, sign_credential
from slurmlite.protocol import StepLaunch, to_dict
from tests.agent.signing import CLUSTER_KEY, signed
from tests.agent.steprig import DEADLINE, Stream, a_launch, fallback_stepenv, post_input, serving
from tests.agent.test_supervision import agent_state

fallback_stepenv()


def marker_step(area: Path, **kw: Any) -> StepLaunch:
    """A step whose only effect is a file: it must never appear for a refused order."""
    return a_launch(area, ["touch", str(area / "work" / "ran")], **kw)


def claimed_for(launch: StepLaunch, node: str) -> dict[str, Any]:
    """Signed with n1's key, but claiming ``node``: a credential n1 checks and refuses."""
    body = to_dict(launch)
    claims = {
        "op": "step",
        "job": launch.job_id,
        "step": launch.step_id,
        "restarts": launch.restarts,
        "uid": launch.uid,
        "gid": launch.gid,
        "node": node,
        "body": hashlib.sha256(canonical_body(body)).hexdigest(),
    }
    key = orders_key(node_key(CLUSTER_KEY, "n1"))
    body["credential"] = sign_credential(key, claims, now=time.time(), ttl=60)
    return body


def answers(area: Path, bodies: list[dict[str, Any]], prepare: Any = None) -> list[Any]:
    """Post each body to ``/v1/steps`` in turn: (status, detail) of each; the agent's steps after."""
    state = agent_state(area / "spool")
    if prepare is not None:
        prepare(state)
    out: list[Any] = []

    async def main() -> None:
        try:
            async with serving(state) as client:
                for body in bodies:
                    async with client.stream("POST", "/v1/steps", json=body) as r:
                        if r.status_code == 200:
                            out.append((200, await Stream(r).rest()))
                        else:
                            await r.aread()
                            out.append((r.status_code, r.json()["detail"]))
                out.append(dict(state.steps.runs))
        finally:
            await state.shutdown()

    asyncio.run(asyncio.wait_for(main(), DEADLINE))
    return out


def test_forged_and_foreign_credentials_are_401_and_start_nothing(area: Path) -> None:
    forged = signed(marker_step(area), cluster_key=b"x" * 64)  # not this cluster's key
    for_n2 = signed(marker_step(area), node="n2")  # signed with n2's key
    unsigned = {**signed(marker_step(area)), "credential": "garbage"}
    (a, b, c, runs) = answers(area, [forged, for_n2, unsigned])
    assert [a[0], b[0], c[0]] == [401, 401, 401]
    assert runs == {} and not (area / "work" / "ran").exists()


def test_valid_credentials_that_do_not_fit_are_403_and_start_nothing(area: Path) -> None:
    other_node = claimed_for(marker_step(area), "n2")
    altered = signed(marker_step(area))
    altered["argv"] = ["sh", "-c", "touch ran"]  # the command changed after signing
    expired = signed(marker_step(area), now=time.time() - 120, ttl=60)
    wrong_op = signed(marker_step(area), op="launch")
    *refused, runs = answers(area, [other_node, altered, expired, wrong_op])
    assert refused == [
        (403, "credential refused: credential is not for node n1"),
        (403, "credential refused: request altered"),
        (403, "credential refused: credential expired"),
        (403, "credential refused: wrong operation"),
    ]
    assert runs == {} and not (area / "work" / "ran").exists()


def test_a_replayed_step_is_refused(area: Path) -> None:
    body = signed(a_launch(area, ["sh", "-c", "echo run >>runs.txt"]))
    first, again, _ = answers(area, [body, body])
    assert first == (200, [{"task": 0, "exit": 0}])
    assert again == (403, "credential refused: replayed credential")
    assert (area / "work" / "runs.txt").read_text() == "run\n"  # once


def test_a_step_for_another_run_of_a_job_running_here_is_refused(area: Path) -> None:
    def requeued_run_here(state: AgentState) -> None:
        state.jobs[(7, 1)] = Job(7, 1, "batch", proc=None)  # type: ignore[arg-type]

    body = signed(marker_step(area, restarts=0))
    refused, runs = answers(area, [body], prepare=requeued_run_here)
    assert refused == (403, "credential refused: job 7 runs here with restart count 1, not 0")
    assert runs == {} and not (area / "work" / "ran").exists()


def test_input_needs_the_credential_of_a_running_step(area: Path) -> None:
    state = agent_state(area / "spool")
    body = signed(a_launch(area, ["cat"]))
    ended = signed(a_launch(area, ["true"], step_id=1))
    codes: dict[str, int] = {}

    async def main() -> None:
        try:
            async with serving(state) as client:
                async with client.stream("POST", "/v1/steps", json=ended) as r:
                    await Stream(r).rest()
                codes["ended"] = await post_input(client, ended, data=b"x")
                async with client.stream("POST", "/v1/steps", json=body) as r:
                    s = Stream(r)
                    codes["forged"] = await post_input(client, {**body, "credential": "a.b"})
                    codes["other step"] = await post_input(client, {**body, "step_id": 5})
                    codes["empty"] = (await client.post("/v1/steps/input", json={})).status_code
                    codes["ok"] = await post_input(client, body, data=b"fine\n", eof=True)
                    await s.rest()
                    codes["output"] = s.text(0) == "fine\n"
        finally:
            await state.shutdown()

    asyncio.run(asyncio.wait_for(main(), DEADLINE))
    assert codes == {
        "ended": 404,  # a real credential, but its step is over
        "forged": 401,
        "other step": 404,  # the credential names step 0
        "empty": 401,
        "ok": 200,
        "output": True,
    }
