"""Workload runs, code snapshots and secrets (``slurmlite run``, users over the API).

* ``POST /v1/runs`` ``{"job": <JobSubmit>, "run": {...}}``: a run's batch job and
  its row in one transaction; a key seen before answers its first run.
* ``GET /v1/runs``, ``GET /v1/runs/{id}``: list, and one run with its attempts.
* ``GET /v1/runs/{id}/logs``: a node's log of an attempt, fetched from that
  node's agent with a request the controller signs (``?node=&attempt=&offset=``).
* ``GET /v1/runs/{id}/node-env``: the owner's running run asks for its secrets.
* ``GET /v1/snapshots/{sha}``, ``PUT /v1/snapshots/parts``, ``POST
  /v1/snapshots/commit``, ``GET /v1/snapshots/data``: upload and download in
  parts (``controller.runs.snapshots``).
* ``PUT|DELETE /v1/secrets/{name}``, ``GET /v1/secrets``.

See ``controller.runs.service`` for who may do what.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import BaseModel, Field

from controller.api.deps import Ctl, UserCaller
from controller.api.fastsubmit import parse_submission
from controller.jobs.submit_keys import Attempt
from controller.runs.secrets import MAX_SECRET_BYTES
from controller.runs.service import submit_key
from controller.runs.snapshots import PART
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.idempotency import KEY_HEADER, valid_key
from slurmlite.wire_limits import INT32_MAX

router = APIRouter(prefix="/v1", tags=["runs"])
RunId = Annotated[int, Path(ge=1, le=INT32_MAX)]
Sha = Annotated[str, Query(pattern=r"^[0-9a-f]{64}$")]
ShaPath = Annotated[str, Path(pattern=r"^[0-9a-f]{64}$")]
Offset = Annotated[int, Query(ge=0, le=1 << 40)]
SecretName = Annotated[str, Path(pattern=r"^[A-Za-z0-9_.\-/]{1,128}$")]


class RunFields(BaseModel):
    name: str = Field(min_length=1, max_length=100)
    spec: dict[str, Any] = {}
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=255)
    snapshot: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    secrets: dict[str, Annotated[str, Field(pattern=r"^[A-Za-z0-9_.\-/]{1,128}$")]] = {}
    max_retries: int = Field(default=3, ge=0, le=1000)
    mlflow_run_id: str | None = Field(default=None, pattern=r"^[0-9A-Za-z_-]{1,64}$")


class RunCreate(BaseModel):
    job: dict[str, Any]
    run: RunFields


class SecretValue(BaseModel):
    value: str = Field(max_length=MAX_SECRET_BYTES)


class Commit(BaseModel):
    sha: str = Field(pattern=r"^[0-9a-f]{64}$")


def _limit(ctl: Any) -> int:
    return int(ctl.cfg.snapshot_max_mb) << 20


@router.post("/runs", operation_id="create_run")
async def create_run(
    body: RunCreate, caller: UserCaller, ctl: Ctl, request: Request
) -> dict[str, Any]:
    run = body.run
    known = await asyncio.to_thread(ctl.runs.existing, caller.uid, run.idempotency_key)
    if known is not None:
        return {"run_id": known, "existing": True}
    await asyncio.to_thread(ctl.runs.check, caller, run.snapshot, run.secrets)
    req = parse_submission(json.dumps(body.job).encode())
    if req.test_only:
        raise SlurmError(errors.SLURMLITE_RUN_REFUSED, "a run cannot be --test-only")
    # the job's delivery key: the run's own key, else the command's (a lost reply retried)
    sent = request.headers.get(KEY_HEADER)
    key = submit_key(run.idempotency_key) if run.idempotency_key else sent
    if key is not None and not valid_key(key):
        raise SlurmError(errors.SLURMLITE_RUN_REFUSED, f"{KEY_HEADER}: not a key")
    attempt = Attempt(key, None, ctl.runs.row_writer(caller, run.model_dump()))
    job_id, _ = await request.app.state.submits.submit(caller, req, attempt)
    return {"run_id": job_id, "existing": False}


@router.get("/runs", operation_id="list_runs")
def list_runs(
    caller: UserCaller,
    ctl: Ctl,
    all_users: bool = False,
    states: Annotated[list[str] | None, Query(max_length=20)] = None,
) -> list[dict[str, Any]]:
    wanted = [s.upper() for s in states or [] if s.isalnum()]
    return ctl.runs.listing(caller, all_users, wanted)


@router.get("/runs/{run_id}", operation_id="get_run")
def get_run(run_id: RunId, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    return ctl.runs.view(caller, run_id)


@router.get("/runs/{run_id}/node-env", operation_id="run_node_env")
def run_node_env(run_id: RunId, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    return ctl.runs.node_env(caller, run_id)


@router.get("/runs/{run_id}/logs", operation_id="run_logs")
async def run_logs(
    run_id: RunId,
    caller: UserCaller,
    ctl: Ctl,
    node: Annotated[int, Query(ge=0, le=100000)] = 0,
    attempt: Annotated[int | None, Query(ge=0, le=INT32_MAX)] = None,
    offset: Offset = 0,
    limit: Annotated[int, Query(ge=1, le=1 << 20)] = 1 << 20,
) -> dict[str, Any]:
    src = await asyncio.to_thread(ctl.runs.log_source, caller, run_id, attempt)
    which, nodes, ended = src["attempt"], src["nodes"], src["ended"]
    if node >= len(nodes):
        if not nodes:  # not started yet: nothing to show, not an error
            return {"node": None, "attempt": which, "data": "", "next": offset, "found": False,
                    "size": 0, "ended": ended}  # fmt: skip
        why = f"run {run_id} attempt {which} ran on {len(nodes)} node(s); --node is 0-based"
        raise SlurmError(errors.SLURMLITE_NO_SUCH_RUN, why)
    name = nodes[node]
    to = await asyncio.to_thread(ctl.nodes.address, name)
    if to is None:
        raise SlurmError(errors.ESLURM_INVALID_NODE_NAME, name)
    ask = {"job_id": run_id, "attempt": which, "uid": src["uid"], "offset": offset, "limit": limit}
    if "path" in src:
        ask["path"] = src["path"]  # a plain batch job: its output file
    answer = await ctl.logs.read(to, ask)
    return {"node": name, "attempt": which, "ended": ended, **answer}


# ------------------------------------------------------------------ snapshots


@router.get("/snapshots/{sha}", operation_id="snapshot_state")
def snapshot_state(sha: ShaPath, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    """Whether the caller's snapshot is stored (upload skipped) and how much of it arrived."""
    return {
        "stored": ctl.runs.owns_snapshot(caller, sha),
        "received": ctl.runs.files.received(caller.uid, sha),
        "part": PART,
    }


@router.put("/snapshots/parts", operation_id="snapshot_part")
async def snapshot_part(
    sha: Sha, offset: Offset, caller: UserCaller, ctl: Ctl, request: Request
) -> dict[str, Any]:
    data = await request.body()
    try:
        got = await asyncio.to_thread(
            ctl.runs.files.append, caller.uid, sha, offset, data, _limit(ctl)
        )
    except ValueError as e:
        raise SlurmError(errors.SLURMLITE_RUN_REFUSED, str(e)) from None
    return {"received": got}


@router.post("/snapshots/commit", operation_id="snapshot_commit")
async def snapshot_commit(body: Commit, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    try:
        size = await asyncio.to_thread(ctl.runs.files.commit, caller.uid, body.sha)
    except ValueError as e:
        raise SlurmError(errors.SLURMLITE_RUN_REFUSED, str(e)) from None
    await asyncio.to_thread(ctl.runs.snapshot_stored, caller, body.sha, size)
    return {"sha": body.sha, "size": size}


@router.get("/snapshots/data/{sha}", operation_id="snapshot_data")
async def snapshot_data(
    sha: ShaPath,
    caller: UserCaller,
    ctl: Ctl,
    offset: Offset = 0,
    length: Annotated[int, Query(ge=1, le=PART)] = PART,
) -> Response:
    if not await asyncio.to_thread(ctl.runs.may_read_snapshot, caller, sha):
        raise SlurmError(errors.SLURMLITE_RUN_REFUSED, f"no snapshot {sha[:12]} of {caller.user}")
    data = await asyncio.to_thread(ctl.runs.files.read, sha, offset, length)
    return Response(data, media_type="application/octet-stream")


# -------------------------------------------------------------------- secrets


@router.put("/secrets/{name:path}", operation_id="set_secret")
def set_secret(name: SecretName, body: SecretValue, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    ctl.runs.set_secret(caller, name, body.value)
    return {"name": name}


@router.get("/secrets", operation_id="list_secrets")
def list_secrets(caller: UserCaller, ctl: Ctl) -> list[dict[str, Any]]:
    return ctl.runs.secrets(caller)


@router.delete("/secrets/{name:path}", operation_id="delete_secret")
def delete_secret(name: SecretName, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    ctl.runs.delete_secret(caller, name)
    return {"name": name}
