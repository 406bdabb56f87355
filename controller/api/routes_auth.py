"""``POST /v1/token``: a JSON Web Token for ``scontrol token`` (``auth/jwt``).

The caller is already authenticated (Unix socket, munge or a token: the
router is included with the ``get_user`` dependency); the route only asks
``controller.auth.authenticate.Authenticator.mint`` and answers the token.  Refusals
are Slurm's (``_slurm_rpc_auth_token``): auth/jwt not configured ->
``ESLURM_PLUGIN_NOT_LOADED``; a user asking for someone else ->
``ESLURM_USER_ID_MISSING``; a lifespan over ``max_token_lifespan`` ->
``ESLURM_INVALID_TIME_LIMIT``; ``disable_token_creation`` -> ``ESLURM_ACCESS_DENIED``.

Example: ``{"lifespan": 600}`` from alice -> ``{"token": "eyJ...", "username":
"alice", "lifespan": 600}``.  The request and answer models live here: they
are this route's alone (no wire dataclass in ``slurmlite.protocol``; the
command sends a plain dict).
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from controller.api.deps import Ctl, UserCaller
from controller.context import Controller

MAX_LIFESPAN = 2**31 - 2  # seconds: Slurm's "infinite" (INT_MAX - 1)

router = APIRouter(prefix="/v1", tags=["auth"])


class TokenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lifespan: int | None = Field(None, ge=1, le=MAX_LIFESPAN)  # seconds; None: the default
    username: str | None = Field(None, min_length=1, max_length=255)  # None: the caller


class TokenOut(BaseModel):
    token: str
    username: str
    lifespan: int


@router.post("/token", response_model=TokenOut)
async def token(req: TokenRequest, caller: UserCaller, ctl: Ctl) -> TokenOut:
    text, user, lifespan = ctl.authenticator().mint(caller, req.username, req.lifespan, ctl.clock())
    return TokenOut(token=text, username=user, lifespan=lifespan)


def router_for(ctl: Controller) -> APIRouter:
    """The router, once the configuration's auth/jwt key has been checked: a controller
    configured for tokens it cannot sign or check refuses to start (``ConfigError``)."""
    ctl.authenticator().check()
    return router
