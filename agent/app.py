"""The agent's HTTP API (FastAPI app factory).

Open paths: ``/health`` and ``/openapi.json``.  Every other route but the
job-step routes (``agent.steproutes``: srun calls them, with the step's
credential, 401 without a valid one) must come
in a request the controller signed for this node (``ControllerSigned``:
else 401, before the body is looked at) and carries a controller-signed
credential in its body, refused with 403 — spawning or signalling nothing —
when it does not check out or was used before (``agent.orders``), and with
409 when it comes from an older controller epoch (``agent.fencing``).
``/v1/launches`` carries several launch orders, each with its own
credential, checked one by one: a bad one is answered ``refused`` and
spawns nothing, the good ones start.  ``/v1/note`` appends one line to a
running batch job's stderr (op ``note``, ``slurmlite.protocol.NoteSpec``):
the controller's word to the user while the job goes on.  ``/v1/tail``
answers the end of a batch job's output files (op ``tail``,
``slurmlite.protocol.TailSpec``, read as the job's user: ``agent.tail``)
for the dashboard's job page.

Bodies are typed: a number out of its field's range, a NUL character in
text (``slurmlite.wire_limits``: the kernel refuses it in paths and the
environment) or malformed JSON is a 422 naming the field, before any
credential is looked at.  Each number's range is looked up by its field's
name in the table the controller checks submissions against, so a launch
built from an accepted job always passes (a ``--time`` of 99,999,999
minutes is a ``time_limit_s`` past 2**31, and within ``time_limit_s``'s
range).  Bodies are capped (``slurmlite.bodylimit``: an
order 16 MiB, a batch of them 64 MiB, anything else 1 MiB; 413 beyond).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import Depends, FastAPI, HTTPException, Request
from pydantic import AfterValidator, BaseModel, Field

from agent.daemon import AgentState, OrderRefused
from agent.steproutes import add_step_routes
from agent.tail import MAX_TAIL, output_tails
from slurmlite.bodylimit import BodyLimit, MiB
from slurmlite.credential import CredentialError
from slurmlite.protocol import LaunchSpec, NoteSpec, SignalSpec, TailSpec, from_dict
from slurmlite.wire_limits import INT32_MAX, bounds, no_nul

MAX_ORDER_BODY = 16 * MiB  # one launch: a 4 MiB script and its environment, with room
MAX_ORDERS_BODY = 64 * MiB  # one pass's launches for this node
MAX_NOTE = 4096  # characters of a note's line (the controller's are some 150)


class OrderAnswer(BaseModel):
    status: str


class Health(BaseModel):
    status: str
    node: str


def _ranged(field: str) -> Any:
    lo, hi = bounds(field)
    return Annotated[int, Field(ge=lo, le=hi)]


Text = Annotated[str, AfterValidator(no_nul)]
JobId = _ranged("job_id")
Count = _ranged("restarts")  # 0 .. 2**31 - 1
UserId = _ranged("uid")
SignalNumber = _ranged("signal")


class LaunchBody(BaseModel):
    credential: Text
    job_id: JobId
    restarts: Count
    step_id: Text
    name: Text
    uid: UserId
    gid: UserId
    user: Text
    script: Text
    work_dir: Text
    environment: dict[Text, Text]
    std_out: Text
    std_err: Text
    std_in: Text
    open_mode: Text
    gpus: list[Count]
    kill_wait: _ranged("kill_wait")  # type: ignore[valid-type]
    time_limit_s: _ranged("time_limit_s") | None = None  # type: ignore[valid-type]
    mem_mib: _ranged("mem_mib") = 0  # type: ignore[valid-type]
    script_args: list[Text] = []  # noqa: RUF012  (pydantic copies a default)


class LaunchBatchBody(BaseModel):
    launches: list[LaunchBody]


class LaunchAnswer(BaseModel):
    job_id: int
    restarts: int
    status: str  # started | already running | failed | refused
    error: str | None = None
    code: int | None = None  # a refusal's HTTP-like code: 409 for an older controller epoch


class LaunchBatchAnswer(BaseModel):
    results: list[LaunchAnswer]


class SignalBody(BaseModel):
    credential: Text
    job_id: JobId
    restarts: Count
    signal: SignalNumber | None
    kill_wait: Count = 30
    message: Text | None = None
    batch_only: bool = False
    full: bool = False


def _one_line(text: str) -> str:
    if "\n" in text or "\r" in text:
        raise ValueError("one line: no line break")
    return text


class NoteBody(BaseModel):
    credential: Text
    job_id: JobId
    restarts: Count
    line: Annotated[Text, AfterValidator(_one_line), Field(max_length=MAX_NOTE)]


class TailBody(BaseModel):
    credential: Text
    job_id: JobId
    restarts: Count
    uid: UserId
    gid: UserId
    paths: Annotated[list[Annotated[Text, Field(max_length=4096)]], Field(max_length=2)]
    limit: Annotated[int, Field(ge=1, le=MAX_TAIL)]


class TailFile(BaseModel):
    path: str
    found: bool  # a regular file of the job's user, read
    data: str


class TailAnswer(BaseModel):
    files: list[TailFile]


# a launched run can be signalled or noted next (OpenAPI links: clients and schemathesis follow them)
RUN_LINKS = {
    "SignalRun": {
        "operationId": "signal",
        "requestBody": {"job_id": "$request.body#/job_id", "restarts": "$request.body#/restarts"},
        "description": "Signal (or terminate) the run just launched.",
    },
    "NoteRun": {
        "operationId": "note",
        "requestBody": {"job_id": "$request.body#/job_id", "restarts": "$request.body#/restarts"},
        "description": "Add a line to the stderr of the run just launched.",
    },
}


def get_state(request: Request) -> AgentState:
    return request.app.state.agent


State = Annotated[AgentState, Depends(get_state)]


async def controller_signed(request: Request) -> None:
    """401 unless the controller signed this request for this node (``agent.orders``)."""
    try:
        request.app.state.agent.check_request(
            request.headers, request.method, request.url.path, await request.body()
        )
    except CredentialError as e:
        raise HTTPException(status_code=401, detail=f"request refused: {e}") from None


ControllerSigned = [Depends(controller_signed)]


def create_app(state: AgentState) -> FastAPI:
    app = FastAPI(title="slurmlite slurmd", version="0.1.0", docs_url=None, redoc_url=None)
    app.state.agent = state
    limits = {
        ("POST", "/v1/launch"): MAX_ORDER_BODY,
        ("POST", "/v1/launches"): MAX_ORDERS_BODY,
        ("POST", "/v1/steps"): MAX_ORDER_BODY,
    }
    app.add_middleware(BodyLimit, limits=limits)

    @app.get("/health", response_model=Health)
    async def health(st: State) -> Health:
        return Health(status="ok", node=st.name)

    @app.post(
        "/v1/launch",
        response_model=OrderAnswer,
        dependencies=ControllerSigned,
        openapi_extra={"responses": {"200": {"links": RUN_LINKS}}},
    )
    async def launch(body: LaunchBody, st: State) -> OrderAnswer:
        data: dict[str, Any] = body.model_dump()
        _check(st, "launch", data)
        return OrderAnswer(status=await st.launch(from_dict(LaunchSpec, data)))

    @app.post("/v1/launches", response_model=LaunchBatchAnswer, dependencies=ControllerSigned)
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
                    job_id=item.job_id,
                    restarts=item.restarts,
                    status="refused",
                    error=error,
                    code=e.status,
                )
            status = await st.launch(from_dict(LaunchSpec, data))
            return LaunchAnswer(job_id=item.job_id, restarts=item.restarts, status=status)

        return LaunchBatchAnswer(results=list(await asyncio.gather(*map(one, body.launches))))

    @app.post(
        "/v1/signal",
        response_model=OrderAnswer,
        dependencies=ControllerSigned,
        operation_id="signal",
    )
    async def signal(body: SignalBody, st: State) -> OrderAnswer:
        data = body.model_dump()
        _check(st, "signal", data)
        return OrderAnswer(status=await st.signal(from_dict(SignalSpec, data)))

    @app.post(
        "/v1/note", response_model=OrderAnswer, dependencies=ControllerSigned, operation_id="note"
    )
    async def note(body: NoteBody, st: State) -> OrderAnswer:
        """Append the line to the run's stderr: written | not written | not running."""
        data = body.model_dump()
        _check(st, "note", data)
        return OrderAnswer(status=await st.note(from_dict(NoteSpec, data)))

    @app.post(
        "/v1/tail", response_model=TailAnswer, dependencies=ControllerSigned, operation_id="tail"
    )
    async def tail(body: TailBody, st: State) -> TailAnswer:
        """The end of each named output file, read as the job's user (``agent.tail``)."""
        data = body.model_dump()
        _check(st, "tail", data)
        files = await asyncio.to_thread(output_tails, from_dict(TailSpec, data), st.timer())
        return TailAnswer(files=[TailFile(**f) for f in files])  # type: ignore[arg-type]

    @app.post("/v1/logs", response_model=LogChunk, dependencies=ControllerSigned)
    async def run_log(body: LogAsk, st: State) -> LogChunk:
        """A chunk of this node's log of a run's attempt (``agent.runlogs``), for the controller."""
        if body.path is not None:  # a batch job's output file (the controller names it)
            got = await asyncio.to_thread(
                st.run_logs.read_file, body.path, body.uid, body.offset, body.limit
            )
        else:
            got = await asyncio.to_thread(
                st.run_logs.read, body.job_id, body.attempt, body.uid, body.offset, body.limit
            )
        return LogChunk(**got)

    add_step_routes(app)
    return app


class LogAsk(BaseModel):
    job_id: int = Field(ge=0, le=INT32_MAX)
    attempt: int = Field(ge=0, le=INT32_MAX)
    uid: int = Field(ge=0, le=2**32 - 1)
    offset: int = Field(ge=0, le=1 << 40)
    limit: int = Field(ge=1, le=1 << 20)
    path: str | None = Field(default=None, max_length=4096, pattern=r"^/[^\x00]*$")


class LogChunk(BaseModel):
    found: bool
    data: str
    next: int
    size: int


def _check(st: AgentState, op: str, data: dict[str, Any]) -> None:
    try:
        st.verify_order(op, data)
    except OrderRefused as e:
        raise HTTPException(status_code=e.status, detail=f"credential refused: {e}") from None
