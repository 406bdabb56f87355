"""FastAPI dependencies: the controller object and who is calling.

``UserCaller`` accepts requests that arrived on the Unix socket (peer
credentials from the kernel) or, over TCP, carry a munge credential or a
JSON Web Token (``controller.auth.authenticate``); ``NodeCaller`` accepts only requests
signed with a node key.  Anything else is refused with 401 before a route
runs: an expired proof with ``ESLURM_AUTH_EXPIRED``, any other failure with
``ESLURM_AUTH_CRED_INVALID``.

They are ``async def`` although they rarely wait (only ``unmunge``, in a
thread): FastAPI runs a plain ``def`` dependency in its thread pool, and
that round trip (twice per user request) cost more than the rest of a
submission's handling.  FastAPI resolves a dependency once per request, so
a munge credential is decoded once even where both the router and the
route ask for the caller (a second decode would be refused as a replay).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from controller.auth.callers import Caller
from controller.context import Controller
from slurmlite import errors
from slurmlite.credential import CredentialError, verify_request
from slurmlite.errors import SlurmError


async def get_controller(request: Request) -> Controller:
    return request.app.state.controller


Ctl = Annotated[Controller, Depends(get_controller)]


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(
        status_code=401,
        detail={
            "errno": errors.ESLURM_AUTH_CRED_INVALID,
            "error": errors.message(errors.ESLURM_AUTH_CRED_INVALID),
            "detail": detail,
        },
    )


NO_CREDENTIALS = (
    "no credentials: use the controller's Unix socket (auth/local), "
    "a munge credential (AuthType=auth/munge) or SLURM_JWT (auth/jwt)"
)


async def get_user(request: Request, ctl: Ctl) -> Caller:
    creds = getattr(request.state, "peercred", None)
    if creds:
        _pid, uid, gid = creds
        return ctl.admins.caller(uid, gid)
    try:
        caller = await ctl.identify(request.headers)
    except SlurmError as e:  # expired or invalid munge credential / token
        raise HTTPException(status_code=401, detail=e.as_answer()) from None
    if caller is None:
        raise _unauthorized(NO_CREDENTIALS)
    return caller


async def get_node(request: Request, ctl: Ctl) -> str:
    body = await request.body()
    try:
        return verify_request(
            ctl.cluster_key,
            request.headers,
            request.method,
            request.url.path,
            body,
            ctl.clock(),
            ctl.nonces,
        )
    except CredentialError as e:
        raise _unauthorized(str(e)) from None


UserCaller = Annotated[Caller, Depends(get_user)]
NodeCaller = Annotated[str, Depends(get_node)]
