"""The agent's HTTP API (FastAPI app factory).

Open paths: ``/health`` and ``/openapi.json``.  Every other route carries a
controller-signed credential in its body and is refused with 403 — spawning
or signalling nothing — when the credential does not check out.
``/v1/launches`` carries several launch orders, each with its own
credential, checked one by one: a bad one is answered ``refused`` and
spawns nothing, the good ones start.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from pydantic import BaseModel

from agent.daemon import AgentState, OrderRefused
from slurmlite.protocol import LaunchSpec, SignalSpec, from_dict


class OrderAnswer(BaseModel):
    status: str


class Health(BaseModel):
    status: str
    node: str


class LaunchBody(BaseModel):
    credential: str
    job_id: int
    restarts: int
    step_id: str
    name: str
    uid: int
    gid: int
    user: str
    script: str
    work_dir: str
    environment: dict[str, str]
    std_out: str
    std_err: str
    std_in: str
    open_mode: str
    gpus: list[int]
    kill_wait: int
    time_limit_s: int | None = None


class LaunchBatchBody(BaseModel):
    launches: list[LaunchBody]


class LaunchAnswer(BaseModel):
    job_id: int
    restarts: int
    status: str  # started | already running | failed | refused
    error: str | None = None


class LaunchBatchAnswer(BaseModel):
    results: list[LaunchAnswer]


class SignalBody(BaseModel):
    credential: str
    job_id: int
    restarts: int
    signal: int | None
    kill_wait: int = 30
    message: str | None = None
    batch_only: bool = False
    full: bool = False


def get_state(request: Request) -> AgentState:
    return request.app.state.agent


State = Annotated[AgentState, Depends(get_state)]


def create_app(state: AgentState) -> FastAPI:
    app = FastAPI(title="slurmlite slurmd", version="0.1.0", docs_url=None, redoc_url=None)
    app.state.agent = state

    @app.get("/health", response_model=Health)
    async def health(st: State) -> Health:
        return Health(status="ok", node=st.name)

    @app.post("/v1/launch", response_model=OrderAnswer)
    async def launch(body: LaunchBody, st: State) -> OrderAnswer:
        data: dict[str, Any] = body.model_dump()
        _check(st, "launch", data)
        return OrderAnswer(status=await st.launch(from_dict(LaunchSpec, data)))

    @app.post("/v1/launches", response_model=LaunchBatchAnswer)
    async def launches(body: LaunchBatchBody, st: State) -> LaunchBatchAnswer:
        """Several launch orders in one request, each checked against its own credential.

        An order that fails its checks is answered ``refused`` and spawns
        nothing; the others go ahead.  Answers come in the orders' order.
        """

        async def one(item: LaunchBody) -> LaunchAnswer:
            data: dict[str, Any] = item.model_dump()
            try:
                st.verify_order("launch", data)
            except OrderRefused as e:
                error = f"credential refused: {e}"
                return LaunchAnswer(
                    job_id=item.job_id, restarts=item.restarts, status="refused", error=error
                )
            status = await st.launch(from_dict(LaunchSpec, data))
            return LaunchAnswer(job_id=item.job_id, restarts=item.restarts, status=status)

        return LaunchBatchAnswer(results=list(await asyncio.gather(*map(one, body.launches))))

    @app.post("/v1/signal", response_model=OrderAnswer)
    async def signal(body: SignalBody, st: State) -> OrderAnswer:
        data = body.model_dump()
        _check(st, "signal", data)
        return OrderAnswer(status=await st.signal(from_dict(SignalSpec, data)))

    return app


def _check(st: AgentState, op: str, data: dict[str, Any]) -> None:
    try:
        st.verify_order(op, data)
    except OrderRefused as e:
        raise HTTPException(status_code=403, detail=f"credential refused: {e}") from None
