"""The agent's HTTP API (FastAPI app factory).

Open paths: ``/health`` and ``/openapi.json``.  Every other route carries a
controller-signed credential in its body and is refused with 403 — spawning
or signalling nothing — when the credential does not check out.
"""

from __future__ import annotations

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
