"""Putting a job under its user and into its cgroup, and saying why a start failed.

Three steps of a start (``agent.launcher``) that decide *as whom* and
*where* the job runs:

1. ``credentials``: the ``subprocess`` arguments that make the wrapper the
   job's user (uid, primary gid, ``initgroups`` groups: ``agent.identity``).
   A root agent refuses a uid without a password entry on this node
   (:data:`USER_NOT_FOUND`) before anything exists; a non-root agent runs
   only jobs of its own uid and says so for any other.  No switch at all
   when the agent already is exactly that user (``subprocess`` can then
   ``vfork``, ~1.7 ms of agent CPU less per start).
2. ``make_cgroup``: the run's cgroup with the job's memory on this node
   (``LaunchSpec.mem_mib``), when the node has cgroups (``agent.isolation``).
3. ``enter_cgroup``: the wrapper was started with a pipe as stdin and waits
   on it (``agent.wrapper``); its pid goes into the cgroup first, then the
   pipe is closed and the wrapper forks the job, born inside.  Should the
   move fail, the wrapper is killed *before* its stdin closes, so no job
   ever starts outside its cgroup.

Every failure is a :class:`LaunchError`: the job ends FAILED with raw status
53 (sacct ``0:53``, as Slurm 22.05 records a launch failure), reason
``JobLaunchFailure``, and ``detail`` (e.g. "User not found on host") for the
job's record.
"""

from __future__ import annotations

import os
import subprocess

from agent.cgroups import CgroupTree, JobCgroup
from agent.identity import JobUser, UnknownUser, job_user
from slurmlite.protocol import LaunchSpec, StepLaunch

Order = LaunchSpec | StepLaunch  # a batch launch or a job step: both name job, uid, gid, memory

__all__ = [
    "LAUNCH_FAILED_REASON",
    "LAUNCH_FAILED_STATUS",
    "USER_NOT_FOUND",
    "LaunchError",
    "credentials",
    "enter_cgroup",
    "make_cgroup",
    "mem_mib",
]

LAUNCH_FAILED_STATUS = 53  # raw wait status Slurm 22.05 records (sacct "0:53")
LAUNCH_FAILED_REASON = "JobLaunchFailure"
USER_NOT_FOUND = "User not found on host"  # Slurm's text for ESLURMD_UID_NOT_FOUND
CGROUP_FAILED = "cgroup setup failed"


class LaunchError(Exception):
    """The job could not be started; report it as ``exit_status``/``reason``.

    ``detail`` is the cause in a few words for the job's record (``squeue``'s
    reason column), e.g. "User not found on host"; ``None`` when only the
    agent's log has it.  ``cause`` is the longer account for the job's
    ``SystemComment`` (``slurmlite.failures``), e.g. "cannot open --output file
    /x/slurm-7.out: No such file or directory"; ``None``: the detail or message says it."""

    exit_status = LAUNCH_FAILED_STATUS

    def __init__(
        self,
        message: str,
        reason: str = LAUNCH_FAILED_REASON,
        detail: str | None = None,
        cause: str | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.detail = detail
        self.cause = cause


def credentials(spec: Order, now: float) -> tuple[dict[str, object], JobUser | None]:
    """Popen arguments that switch to the job's user ({} = stay as we are), and the user.

    The user is ``None`` only for a non-root agent whose own uid has no entry;
    ``now`` (monotonic seconds) ages the password-entry cache (``agent.identity``).
    """
    me = os.geteuid()
    if me != 0:
        if spec.uid != me:
            raise LaunchError(
                f"job {spec.job_id}: agent runs as uid {me} and cannot start a job "
                f"for uid {spec.uid}; run slurmd as root to serve several users",
                detail=f"agent is not root and cannot run uid {spec.uid}",
            )
        try:
            return {}, job_user(me, spec.gid, now)
        except UnknownUser:
            return {}, None  # a development agent under a uid without an entry
    try:
        user = job_user(spec.uid, spec.gid, now)
    except UnknownUser:
        raise LaunchError(
            f"job {spec.job_id}: uid {spec.uid} has no password entry on this node; "
            "nothing was started",
            detail=USER_NOT_FOUND,
        ) from None
    groups = list(user.groups)
    gid = os.getegid()
    if spec.uid == me and spec.gid == gid and {*groups, gid} == {*os.getgroups(), gid}:
        return {}, user
    return {"user": spec.uid, "group": spec.gid, "extra_groups": groups}, user


def mem_mib(spec: Order) -> int | None:
    """The job's memory on this node in MiB (``LaunchSpec.mem_mib``; 0/None: no limit).

    Read with ``getattr`` until every launch order carries the field."""
    value = getattr(spec, "mem_mib", None)
    return value if isinstance(value, int) and value > 0 else None


def make_cgroup(tree: CgroupTree | None, spec: Order) -> JobCgroup | None:
    """The run's cgroup with its memory limit (None without cgroups)."""
    if tree is None:
        return None
    try:
        return tree.create(spec.job_id, spec.restarts, mem_mib(spec))
    except OSError as exc:
        raise LaunchError(
            f"job {spec.job_id}: cannot create its cgroup: {exc}", detail=CGROUP_FAILED
        ) from exc


def enter_cgroup(proc: subprocess.Popen[bytes], cgroup: JobCgroup, job_id: int) -> None:
    """Move the waiting wrapper into ``cgroup``, then let it go on (its stdin ends)."""
    assert proc.stdin is not None
    try:
        cgroup.add(proc.pid)
    except OSError as exc:
        proc.kill()  # before its stdin closes: it must not fork the job outside
        proc.stdin.close()
        proc.wait()
        raise LaunchError(
            f"job {job_id}: cannot enter its cgroup: {exc}", detail=CGROUP_FAILED
        ) from exc
    proc.stdin.close()
