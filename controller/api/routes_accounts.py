"""Routes of the accounting database (``sacctmgr``): accounts, users, QOS.

Anyone authenticated may read; only administrators change anything
(``SlurmUser``, root, ``SlurmliteAdminUsers``, or a user whose AdminLevel is
Operator or Administrator).  Anyone else gets 403 with
ESLURM_ACCESS_DENIED and the detail slurmdbd sends in that case, "Your user
doesn't have privilege to perform this action".

    GET  /v1/assocs                 everything sacctmgr shows (Accounts.dump)
    POST /v1/accounts/add           {"names": ["vision"], "parent": "root",
                                     "changes": {"fairshare": 3}, "commit": true}
    POST /v1/accounts/modify        {"names": [...], "changes": {...}}
    POST /v1/accounts/delete        {"names": [...]}
    POST /v1/users/add              {"names": ["alice"], "accounts": ["vision"],
                                     "default_account": "vision"}
    POST /v1/users/modify           {"names": [...], "accounts": [...] (where), "changes": {...}}
    POST /v1/users/delete           {"names": [...], "accounts": [...] (where)}
    POST /v1/qos/add | modify | delete   {"names": [...], "changes": {"max_tres_pu": "gres/gpu=4"}}

``commit: false`` answers what would change without changing it (sacctmgr
asks before committing).  Bad values are 4xx (422 for a body the models
refuse, 400 with sacctmgr's text for a refusal); nothing here answers 5xx
for a client's mistake.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import IntegrityError

from controller.api.deps import Ctl, UserCaller
from controller.auth.callers import Caller
from controller.context import Controller
from slurmlite import errors
from slurmlite.errors import SlurmError

router = APIRouter(prefix="/v1", tags=["accounts"])

INT32 = 2**31 - 1
DENIED = "Your user doesn't have privilege to perform this action"
Name = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\x00,=\s]+$")]
Names = Annotated[list[Name], Field(min_length=1, max_length=1000)]
Text = Annotated[str, Field(max_length=1024, pattern=r"^[^\x00]*$")]
Count = Annotated[int, Field(ge=-1, le=INT32)]  # -1: clear the limit


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AssocChanges(_Strict):
    """Association settings (accounts and users); a field left out stays as it is."""

    fairshare: Count | Literal["parent"] | None = None
    priority: Count | None = None
    qos: Annotated[list[Name], Field(max_length=100)] | None = None
    qos_add: Annotated[list[Name], Field(max_length=100)] | None = None
    qos_remove: Annotated[list[Name], Field(max_length=100)] | None = None
    default_qos: Annotated[str, Field(max_length=64, pattern=r"^[^\x00,=\s]*$")] | None = None
    description: Text | None = None  # accounts
    organization: Text | None = None  # accounts
    parent: Name | None = None  # accounts
    default_account: Name | None = None  # users
    admin_level: Annotated[str, Field(max_length=32)] | None = None  # users


class QosChanges(_Strict):
    description: Text | None = None
    priority: Count | None = None
    usage_factor: Annotated[float, Field(ge=0, le=1e6)] | None = None
    max_wall: Count | None = None  # minutes
    max_jobs_pu: Count | None = None
    max_submit_pu: Count | None = None
    max_tres_pu: Text | None = None  # "cpu=8,gres/gpu=4"; "-1" clears
    max_tres_pj: Text | None = None
    flags: Text | None = None
    idle_gpu_policy: Text | None = None  # slurmlite.idlegpus: "window=1h"; "-1" clears


class AccountAdd(_Strict):
    names: Names
    parent: Name | None = None
    changes: AssocChanges = Field(default_factory=AssocChanges)
    commit: bool = True


class AccountModify(_Strict):
    names: Names
    changes: AssocChanges
    commit: bool = True


class NamesOnly(_Strict):
    names: Names
    commit: bool = True


class UserAdd(_Strict):
    names: Names
    accounts: Annotated[list[Name], Field(max_length=1000)] = []
    default_account: Name | None = None
    admin_level: Annotated[str, Field(max_length=32)] | None = None
    changes: AssocChanges = Field(default_factory=AssocChanges)
    commit: bool = True


class UserModify(_Strict):
    names: Names
    accounts: Annotated[list[Name], Field(max_length=1000)] | None = None
    changes: AssocChanges
    commit: bool = True


class UserDelete(_Strict):
    names: Names
    accounts: Annotated[list[Name], Field(max_length=1000)] | None = None
    commit: bool = True


class QosEdit(_Strict):
    names: Names
    changes: QosChanges = Field(default_factory=QosChanges)
    commit: bool = True


async def _admin_write(
    ctl: Controller, caller: Caller, work: Callable[[], dict[str, Any]], commit: bool
) -> dict[str, Any]:
    """Run ``work`` (a change) for an administrator; refuse anyone else."""
    if not (caller.admin or ctl.accounts.is_admin(caller.user)):
        raise SlurmError(errors.ESLURM_ACCESS_DENIED, DENIED)
    try:
        answer = await asyncio.to_thread(work)
    except IntegrityError:  # a concurrent change took the same name first
        raise SlurmError(
            errors.SLURM_UNEXPECTED_MSG_ERROR, " Conflicting change; try again."
        ) from None
    if commit:
        ctl.priorities.invalidate()  # shares, QOS priorities: read again at the next evaluation
        ctl.loop.wake()  # a QOS limit or an account may decide what starts now
    return answer


def _assoc(c: AssocChanges) -> dict[str, Any]:
    return c.model_dump(exclude_none=True)


@router.get("/assocs")
async def show(ctl: Ctl) -> dict[str, Any]:
    return await asyncio.to_thread(ctl.accounts.dump)


@router.post("/accounts/add")
async def add_accounts(body: AccountAdd, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return ctl.accounts.add_accounts(body.names, body.parent, _assoc(body.changes), body.commit)

    return await _admin_write(ctl, caller, work, body.commit)


@router.post("/accounts/modify")
async def modify_accounts(body: AccountModify, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return ctl.accounts.modify_accounts(body.names, _assoc(body.changes), body.commit)

    return await _admin_write(ctl, caller, work, body.commit)


@router.post("/accounts/delete")
async def delete_accounts(body: NamesOnly, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return ctl.accounts.delete_accounts(body.names, body.commit)

    return await _admin_write(ctl, caller, work, body.commit)


@router.post("/users/add")
async def add_users(body: UserAdd, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return ctl.accounts.add_users(
            body.names,
            body.accounts,
            body.default_account,
            body.admin_level,
            _assoc(body.changes),
            body.commit,
        )

    return await _admin_write(ctl, caller, work, body.commit)


@router.post("/users/modify")
async def modify_users(body: UserModify, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return ctl.accounts.modify_users(
            body.names, _assoc(body.changes), body.accounts, body.commit
        )

    return await _admin_write(ctl, caller, work, body.commit)


@router.post("/users/delete")
async def delete_users(body: UserDelete, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return ctl.accounts.delete_users(body.names, body.accounts, body.commit)

    return await _admin_write(ctl, caller, work, body.commit)


@router.post("/qos/add")
async def add_qos(body: QosEdit, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return ctl.accounts.add_qos(body.names, body.changes.model_dump(), body.commit)

    return await _admin_write(ctl, caller, work, body.commit)


@router.post("/qos/modify")
async def modify_qos(body: QosEdit, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return ctl.accounts.modify_qos(body.names, body.changes.model_dump(), body.commit)

    return await _admin_write(ctl, caller, work, body.commit)


@router.post("/qos/delete")
async def delete_qos(body: NamesOnly, caller: UserCaller, ctl: Ctl) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        return ctl.accounts.delete_qos(body.names, body.commit)

    return await _admin_write(ctl, caller, work, body.commit)
