"""The route sprio reads: each pending job's priority and its factors.

    GET /v1/priorities?ids=7,8&users=alice&partitions=debug

answers a ``slurmlite.protocol_policy.PriorityListing``, made as JSON text by
``controller.accounting.priority_listing`` (which jobs, which factors).
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query, Response

from controller.accounting.priority_listing import listing_json
from controller.api.deps import Ctl, UserCaller
from controller.api.schemas import NoNul, PriorityListingModel

router = APIRouter(prefix="/v1", tags=["priority"])
ListQuery = Annotated[list[NoNul] | None, Query()]  # NUL: 422 (PostgreSQL cannot compare it)


def _words(values: list[str] | None) -> list[str] | None:
    """``["7,8", "9"]`` -> ``["7", "8", "9"]``; None when nothing was given."""
    if not values:
        return None
    return [w for v in values for w in v.split(",") if w]


@router.get("/priorities", response_model=PriorityListingModel)
async def priorities(
    caller: UserCaller,
    ctl: Ctl,
    ids: ListQuery = None,
    users: ListQuery = None,
    partitions: ListQuery = None,
) -> Response:
    """Pending jobs' priorities and factors (sprio).  An id that is no number matches nothing."""
    id_words = _words(ids)
    job_ids = None
    if id_words is not None:
        job_ids = [int(w) for w in id_words if w.isdigit() and int(w) < 2**31]
    text = await asyncio.to_thread(
        listing_json,
        ctl.priorities,
        caller,
        job_ids,
        _words(users),
        _words(partitions),
        ctl.clock(),
    )
    return Response(content=text, media_type="application/json")
