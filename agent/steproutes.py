"""The agent's job-step routes: ``POST /v1/steps`` and ``POST /v1/steps/input``.

srun, not the controller, calls these, so they carry no controller
signature; what authorises them is the step's credential, which the
controller signed for this node alone (``agent.orders``).  The checks, in
order, each before anything is spawned or touched:

1. **a credential signed for this node** (``step_credential``, a
   dependency that reads the raw body before it is validated): missing,
   malformed, forged with another key -> 401, as every route of the agent
   answers a stranger (``tests/api/test_open_paths.py``);
2. the body's fields (types, ranges, no NUL) -> 422;
3. ``/v1/steps``: the claims (``OrderGate.verify``, op ``step``): this node,
   this job, step, restart count, uid and gid, the SHA-256 of the whole body
   as received, not expired, nonce never seen (a replay starts nothing) ->
   403; then the job: when this node runs the job's batch script, it must
   be the same run (restart count) -> 403 otherwise; a job not running here
   is an allocation (or another node's batch job): the credential suffices.
   ``/v1/steps/input``: the step must be one this agent started with that
   very credential and still running -> 404 otherwise; expiry does not
   matter there (an interactive step outlives its credential).

Answers: ``/v1/steps`` streams NDJSON (``agent.steps``), also when the
step cannot start (one ``{"error": "..."}`` line); ``/v1/steps/input``
answers ``{"status": "ok"}`` once the input is handed to the tasks
(``agent.stepio``: at most ``BACKLOG`` bytes left waiting per task).

Example: srun posts its StepLaunch for n1; a second post of the same body
(a replay) -> 403 "replayed credential", nothing spawned.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.responses import StreamingResponse
from pydantic import AfterValidator, BaseModel, Field

from agent.configless import local_conf
from agent.daemon import AgentState, OrderRefused
from agent.runlogs import MARKER
from slurmlite.credential import CredentialError
from slurmlite.protocol import StepLaunch, from_dict
from slurmlite.wire_limits import bounds, no_nul

__all__ = ["StepBody", "StepInputBody", "add_step_routes"]

NDJSON = "application/x-ndjson"


def _ranged(name: str) -> Any:
    lo, hi = bounds(name)
    return Annotated[int, Field(ge=lo, le=hi)]


Text = Annotated[str, AfterValidator(no_nul)]
Count = _ranged("restarts")
UserId = _ranged("uid")
Cells = Annotated[int, Field(ge=0, le=65535)]


class StepBody(BaseModel):
    credential: Text
    job_id: _ranged("job_id")  # type: ignore[valid-type]
    step_id: Count
    restarts: Count
    node: Text
    node_index: Count
    uid: UserId
    gid: UserId
    user: Text
    argv: list[Text] = Field(min_length=1)
    work_dir: Text
    environment: dict[Text, Text]
    tasks: list[Count] = Field(min_length=1)
    ntasks: Count
    num_nodes: Count
    cpus_per_task: Count
    gpus: list[Count]
    gpus_per_task: Count | None
    master_addr: Text
    master_port: _ranged("port")  # type: ignore[valid-type]
    label: bool
    unbuffered: bool
    stdin_task: Count | None
    std_out: Text
    std_err: Text
    std_in: Text
    pty: bool
    kill_on_bad_exit: bool
    mem_mib: _ranged("mem_mib")  # type: ignore[valid-type]
    kill_wait: _ranged("kill_wait")  # type: ignore[valid-type]
    time_limit_s: _ranged("time_limit_s") | None = None  # type: ignore[valid-type]


class StepInputBody(BaseModel):
    credential: Text
    job_id: _ranged("job_id")  # type: ignore[valid-type]
    step_id: Count
    data: str = ""
    eof: bool = False
    signal: _ranged("signal") | None = None  # type: ignore[valid-type]
    rows: Cells | None = None
    cols: Cells | None = None


class InputAnswer(BaseModel):
    status: str


def _state(request: Request) -> AgentState:
    return request.app.state.agent


State = Annotated[AgentState, Depends(_state)]


async def step_credential(request: Request) -> dict[str, Any]:
    """401 unless the body carries a credential signed for this node (expiry not checked).

    Returns the raw body, parsed: the credential's body hash is checked
    against it, exactly as received."""
    try:
        raw = json.loads(await request.body())
    except ValueError:
        return {}  # malformed JSON: the body's validation answers 422
    credential = raw.get("credential") if isinstance(raw, dict) else None
    if not isinstance(credential, str):
        raise HTTPException(status_code=401, detail="request refused: no step credential")
    try:
        _state(request).gate.signed_claims(credential)
    except CredentialError as e:
        raise HTTPException(status_code=401, detail=f"request refused: {e}") from None
    return raw


Raw = Annotated[dict[str, Any], Depends(step_credential)]


def add_step_routes(app: FastAPI) -> None:
    @app.post(
        "/v1/steps",
        response_class=StreamingResponse,
        responses={200: {"content": {NDJSON: {}}, "description": "the step's output, as NDJSON"}},
    )
    async def start_step(
        body: StepBody, raw: Raw, st: State, request: Request
    ) -> StreamingResponse:
        """Run this node's tasks of a job step; their output and exits as NDJSON lines."""
        try:
            st.verify_order("step", raw)
            st.check_step_job(body.job_id, body.restarts)
        except OrderRefused as e:
            raise HTTPException(status_code=e.status, detail=f"credential refused: {e}") from None
        launch = from_dict(StepLaunch, body.model_dump())
        launch.environment = local_conf(launch.environment, st.cfg.path)
        if MARKER in launch.environment:  # a workload run's step: its node log (agent.runlogs)
            where = st.run_logs.prepare(launch.job_id, launch.uid, launch.gid)
            launch.environment["SLURMLITE_LOG_DIR"] = where
        if request.client is not None:  # where srun runs, as Slurm tells the tasks
            launch.environment["SLURM_LAUNCH_NODE_IPADDR"] = request.client.host
        return StreamingResponse(await st.start_step(launch), media_type=NDJSON)

    @app.post("/v1/steps/input", response_model=InputAnswer)
    async def step_input(body: StepInputBody, raw: Raw, st: State) -> InputAnswer:
        """stdin bytes, end of file, a signal or the window size for a running step."""
        run = st.steps.find(body.credential)
        if run is None or (run.launch.job_id, run.launch.step_id) != (body.job_id, body.step_id):
            raise HTTPException(status_code=404, detail="no such step running on this node")
        try:
            data = base64.b64decode(body.data, validate=True)
        except (binascii.Error, ValueError):
            raise HTTPException(status_code=422, detail="data is not base64") from None
        await run.feed(data, body.eof, body.signal, body.rows, body.cols)
        return InputAnswer(status="ok")
