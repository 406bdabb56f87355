"""The dashboard's actions: cancel, hold, release a job; drain, resume a node.

Each is a POST form (``<button name="action" value="cancel">``) checked for
its CSRF token (``CsrfChecked``) and carried out by the very service the
commands' API routes call, so the rules are the commands' own:

* cancel -> ``JobService.cancel`` (``scancel``), hold/release ->
  ``JobOps.hold``/``release`` (``scontrol hold``/``release``): the owner
  or an operator (``may_act_on``); a user's hold is a user hold, which only
  the user or an operator may release; an operator's is an admin hold;
* drain/resume -> ``NodeService.update`` (``scontrol update
  nodename=... state=DRAIN|RESUME``): operators only; a drain without a
  reason is refused there, as Slurm refuses it.

The answer is a 303 back to the page the form was on, with the outcome as
a flash message (Slurm's text for a refusal, e.g. ``Access/permission
denied``).  A refusal is never a 500; an action the form cannot name is a
400.  Example: bob posts ``action=cancel`` for alice's job 7 -> back to
``/ui/jobs/7`` with "job 7: Access/permission denied"; nothing changes.
"""

from __future__ import annotations

import asyncio
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, HTTPException, Path
from fastapi.responses import RedirectResponse

from controller.api.deps import Ctl
from controller.api.ui.session import CsrfChecked
from controller.jobs.operations import JobOps
from slurmlite import errors
from slurmlite.errors import SlurmError
from slurmlite.protocol import CancelRequest, NodeUpdate
from slurmlite.wire_limits import INT32_MAX

router = APIRouter()
JOB_ACTIONS = ("cancel", "hold", "release")
NODE_ACTIONS = ("drain", "resume")
NODE_NAME = r"^[A-Za-z0-9._-]{1,64}$"


def _back(where: str, message: str) -> RedirectResponse:
    return RedirectResponse(f"{where}?flash={quote(message)}", status_code=303)


def _where(back: str, default: str) -> str:
    """Only a page of the dashboard may be the way back (no open redirect)."""
    return back if back.startswith("/ui/") and "//" not in back and "\\" not in back else default


@router.post("/jobs/{job_id}/action")
async def job_action(
    job_id: Annotated[int, Path(ge=0, le=INT32_MAX)],
    viewer: CsrfChecked,
    ctl: Ctl,
    action: Annotated[str, Form()],
    back: Annotated[str, Form()] = "",
) -> RedirectResponse:
    where = _where(back, f"/ui/jobs/{job_id}")
    if action == "cancel":
        outcome = await asyncio.to_thread(ctl.jobs.cancel, viewer, CancelRequest(job_ids=[job_id]))
        for order in outcome.orders:  # the run ends on its nodes, as after scancel
            asyncio.create_task(ctl.loop.dispatch(order))
        codes = [r.errno for r in outcome.results]
    elif action in ("hold", "release"):
        ops = JobOps(ctl.jobs)
        step = ops.hold if action == "hold" else ops.release
        codes = [r.errno for r in (await asyncio.to_thread(step, viewer, [job_id])).results]
    else:
        raise HTTPException(400, f"unknown job action {action!r}: one of {', '.join(JOB_ACTIONS)}")
    ctl.loop.wake()
    failed = next((c for c in codes if c), 0)
    if failed:
        return _back(where, f"job {job_id}: {errors.message(failed)}")
    done = {"cancel": "cancelled", "hold": "held", "release": "released"}[action]
    return _back(where, f"job {job_id} {done}")


@router.post("/nodes/{name}/action")
async def node_action(
    name: Annotated[str, Path(pattern=NODE_NAME)],
    viewer: CsrfChecked,
    ctl: Ctl,
    action: Annotated[str, Form()],
    reason: Annotated[str, Form(max_length=256)] = "",
) -> RedirectResponse:
    where = "/ui/nodes"
    if action not in NODE_ACTIONS:
        raise HTTPException(
            400, f"unknown node action {action!r}: one of {', '.join(NODE_ACTIONS)}"
        )
    if not viewer.admin:  # scontrol's answer to a non-operator: "Invalid user id"
        return _back(where, f"{name}: {errors.message(errors.ESLURM_USER_ID_MISSING)}")
    update = NodeUpdate([name], action.upper(), reason.strip() or None)
    try:  # a drain without a reason is refused there, with scontrol's words
        await asyncio.to_thread(ctl.nodes.update, update, viewer.uid)
    except SlurmError as e:
        return _back(where, f"{name}: {e.full}")
    ctl.loop.wake()
    return _back(where, f"{name} {'drained' if action == 'drain' else 'resumed'}")
