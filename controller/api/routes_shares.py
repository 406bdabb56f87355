"""``GET /v1/shares``: the fair-share table that ``sshare`` prints.

The table, its usage and its TRESRunMins are worked out by
``controller.accounting.shares`` (the priority service's ``shares``): every
association in tree order, what ``sshare -a -l`` shows.  Which rows a
caller sees is the command's choice; every authenticated user gets them all.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from controller.api.deps import Ctl, UserCaller
from controller.api.schemas import SharesAnswerModel
from slurmlite.protocol import to_dict

router = APIRouter(prefix="/v1", tags=["accounts"])


@router.get("/shares", response_model=SharesAnswerModel)
def shares(caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    """Every association with its shares, usage and fair-share values (``sshare -a -l``)."""
    return to_dict(ctl.priorities.shares(ctl.clock()))
