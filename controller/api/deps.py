"""FastAPI dependencies: the controller object and who is calling.

``UserCaller`` accepts only requests that arrived on the Unix socket (peer
credentials from the kernel); ``NodeCaller`` accepts only requests signed
with a node key.  Anything else is refused with 401 before a route runs.

They are ``async def`` although they never wait: FastAPI runs a plain
``def`` dependency in its thread pool, and that round trip (twice per user
request) cost more than the rest of a submission's handling.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request

from controller.auth import Caller
from controller.context import Controller
from slurmlite import errors
from slurmlite.credential import CredentialError, verify_request


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


async def get_user(request: Request, ctl: Ctl) -> Caller:
    creds = getattr(request.state, "peercred", None)
    if not creds:
        raise _unauthorized(
            "no credentials: commands must use the controller's Unix socket (auth/local)"
        )
    _pid, uid, gid = creds
    return ctl.admins.caller(uid, gid)


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
