"""Job reasons: Slurm's closed vocabulary, one named constant per word.

Every job carries a reason (DESIGN.md §4 rule 4: every "no" has a name).  A
pending job's reason says why it waits (squeue ``%r``, scontrol ``Reason=``);
an ended job's says why it ended the way it did.  The words are Slurm's, as
its commands print them (``S:src/common/job_state_reason.c``, spec §1.4), so
they are case-sensitive: ``Priority``, never ``priority``.

The code names a reason through its constant (``reasons.RESOURCES``), never
by a string typed in place, and the plan a scheduling pass makes is checked
against ``PENDING`` when it is written to the store (``check_pending``): a
word outside the vocabulary is a bug in the pass, refused with
``UnknownReason`` before squeue could show it.

Example::

    >>> check_pending(PRIORITY)
    'Priority'
    >>> check_pending("WaitingForGodot")
    Traceback (most recent call last):
    ...
    slurmlite.reasons.UnknownReason: unknown pending reason: 'WaitingForGodot'
    >>> check_pending(TIME_LIMIT)  # a reason, but for an ended job only
    Traceback (most recent call last):
    ...
    slurmlite.reasons.UnknownReason: unknown pending reason: 'TimeLimit'
"""

from __future__ import annotations

# ----------------------------------------------------------- why a job waits

# -- set by the scheduling passes (slurmlite.scheduler)
NONE = "None"  # nothing keeps it: not looked at yet, or it starts in this pass
PRIORITY = "Priority"  # a higher job of its partition could not start: it waits its turn
RESOURCES = "Resources"  # it was tried; the CPUs, memory or GPUs it needs are in use
REQ_NODE_NOT_AVAIL = "ReqNodeNotAvail"  # a -w node is down, drained or held for a higher job
BAD_CONSTRAINTS = "BadConstraints"  # no node of its partition could ever hold the request
PARTITION_TIME_LIMIT = "PartitionTimeLimit"  # its --time is above the partition's MaxTime
PARTITION_NODE_LIMIT = "PartitionNodeLimit"  # it asks for more nodes than the partition has
PARTITION_DOWN = "PartitionDown"  # its partition is State=DOWN
PARTITION_INACTIVE = "PartitionInactive"  # its partition is INACTIVE or gone from slurm.conf
PARTITION_CONFIG = "PartitionConfig"  # the partition's configuration forbids the request
RESERVATION = "Reservation"  # waiting for its advance reservation
LICENSES = "Licenses"  # waiting for licenses
SCHED_DEFER = "SchedDefer"  # SchedulerParameters=defer: not tried at submit

# -- set by the controller before a pass looks at the job
DEPENDENCY = "Dependency"  # a --dependency is not satisfied yet
DEPENDENCY_NEVER_SATISFIED = "DependencyNeverSatisfied"  # a dependency can no longer be met
BEGIN_TIME = "BeginTime"  # --begin is in the future (also right after a requeue)
JOB_HELD_USER = "JobHeldUser"  # its owner held it (sbatch -H, scontrol hold/uhold)
JOB_HELD_ADMIN = "JobHeldAdmin"  # an operator held it, or a failed launch requeued it held
JOB_HOLD_MAX_REQUEUE = "JobHoldMaxRequeue"  # held after too many requeues
JOB_ARRAY_TASK_LIMIT = "JobArrayTaskLimit"  # the array's %N throttle is reached
CLEANING = "Cleaning"  # a requeued job whose previous run is still completing
PROLOG = "Prolog"  # its prolog is still running
ACCOUNT_NOT_ALLOWED = "AccountNotAllowed"  # the partition does not allow its account
QOS_NOT_ALLOWED = "QOSNotAllowed"  # the partition does not allow its QOS
INVALID_ACCOUNT = "InvalidAccount"  # its account is unknown or was removed
INVALID_QOS = "InvalidQOS"  # its QOS is unknown or was removed

# -- accounting limits (slurmlite.scheduler.limits sets the QOS ones it enforces)
ACCOUNTING_POLICY = "AccountingPolicy"  # a limit of the accounting policy, not named further
ASSOC_GRP_CPU_LIMIT = "AssocGrpCpuLimit"  # the association's GrpTRES cpu is used up
ASSOC_GRP_JOBS_LIMIT = "AssocGrpJobsLimit"  # the association's GrpJobs is reached
ASSOC_GRP_MEM_LIMIT = "AssocGrpMemLimit"  # the association's GrpTRES mem is used up
ASSOC_GRP_NODE_LIMIT = "AssocGrpNodeLimit"  # the association's GrpTRES node is used up
ASSOC_GRP_GRES = "AssocGrpGRES"  # the association's GrpTRES gres/... is used up
ASSOC_GRP_SUBMIT_JOBS_LIMIT = "AssocGrpSubmitJobsLimit"  # the association's GrpSubmitJobs
ASSOC_GRP_WALL_LIMIT = "AssocGrpWallLimit"  # the association's GrpWall is used up
ASSOC_MAX_JOBS_LIMIT = "AssocMaxJobsLimit"  # the association's MaxJobs is reached
ASSOC_MAX_WALL_PER_JOB = "AssocMaxWallDurationPerJobLimit"  # --time above its MaxWall
ASSOC_MAX_SUBMIT_JOB_LIMIT = "AssocMaxSubmitJobLimit"  # the association's MaxSubmitJobs
QOS_GRP_CPU_LIMIT = "QOSGrpCpuLimit"  # the QOS's GrpTRES cpu is used up
QOS_GRP_JOBS_LIMIT = "QOSGrpJobsLimit"  # the QOS's GrpJobs is reached
QOS_GRP_MEM_LIMIT = "QOSGrpMemLimit"  # the QOS's GrpTRES mem is used up
QOS_GRP_NODE_LIMIT = "QOSGrpNodeLimit"  # the QOS's GrpTRES node is used up
QOS_GRP_GRES = "QOSGrpGRES"  # the QOS's GrpTRES gres/... is used up
QOS_GRP_SUBMIT_JOBS_LIMIT = "QOSGrpSubmitJobsLimit"  # the QOS's GrpSubmitJobs is reached
QOS_MAX_JOBS_PER_USER = "QOSMaxJobsPerUserLimit"  # its user runs MaxJobsPerUser jobs already
QOS_MAX_WALL_PER_JOB = "QOSMaxWallDurationPerJobLimit"  # its --time is above the QOS MaxWall
QOS_MAX_SUBMIT_PER_USER = "QOSMaxSubmitJobPerUserLimit"  # MaxSubmitJobsPerUser (at submit)
QOS_USAGE_THRESHOLD = "QOSUsageThreshold"  # its fair-share usage is above the QOS threshold
MAX_JOBS_PER_ACCOUNT = "MaxJobsPerAccount"  # its account runs MaxJobsPerAccount jobs
QOS_MAX_CPU_PER_JOB = "QOSMaxCpuPerJobLimit"  # MaxTRESPerJob cpu: the job is too big
QOS_MAX_MEMORY_PER_JOB = "QOSMaxMemoryPerJob"  # MaxTRESPerJob mem: the job is too big
QOS_MAX_NODE_PER_JOB = "QOSMaxNodePerJobLimit"  # MaxTRESPerJob node: the job is too big
QOS_MAX_GRES_PER_JOB = "QOSMaxGRESPerJob"  # MaxTRESPerJob gres/...: the job is too big
QOS_MAX_CPU_PER_USER = "QOSMaxCpuPerUserLimit"  # MaxTRESPerUser cpu: its user holds enough
QOS_MAX_MEMORY_PER_USER = "QOSMaxMemoryPerUser"  # MaxTRESPerUser mem: its user holds enough
QOS_MAX_NODE_PER_USER = "QOSMaxNodePerUserLimit"  # MaxTRESPerUser node: its user holds enough
QOS_MAX_GRES_PER_USER = "QOSMaxGRESPerUser"  # MaxTRESPerUser gres/...: its user holds enough
# the limits a user's own running jobs hold: when they end the job runs (a waiting
# srun/salloc and ``slurmlite explain`` name the limit and those jobs)
USER_LIMITS: frozenset[str] = frozenset(
    {
        QOS_MAX_JOBS_PER_USER,
        QOS_MAX_CPU_PER_USER,
        QOS_MAX_MEMORY_PER_USER,
        QOS_MAX_NODE_PER_USER,
        QOS_MAX_GRES_PER_USER,
        ASSOC_MAX_JOBS_LIMIT,
    }
)

# ------------------------------------------------------ why a job ended so

NON_ZERO_EXIT_CODE = "NonZeroExitCode"  # FAILED: the batch shell exited non-zero
RAISED_SIGNAL = "RaisedSignal"  # FAILED: the batch shell was killed by a signal
TIME_LIMIT = "TimeLimit"  # TIMEOUT: it ran past its time limit
NODE_DOWN = "NodeDown"  # NODE_FAIL: a node it ran on stopped answering
OUT_OF_MEMORY = "OutOfMemory"  # OUT_OF_MEMORY: the OOM killer ended it
INACTIVE_LIMIT = "InactiveLimit"  # an srun/salloc went silent past InactiveLimit
JOB_LAUNCH_FAILURE = "JobLaunchFailure"  # the agent could not start it
SYSTEM_FAILURE = "SystemFailure"  # the cluster failed it (no fault of the job)
DEADLINE = "DeadLine"  # DEADLINE: --deadline passed
# slurmlite: its GPUs stayed idle (slurmlite.idlegpus); a RUNNING job shows it while flagged,
# a job the policy cancelled keeps it
GPUS_IDLE = "GpusIdle"

# ------------------------------------------------------------ the vocabulary

PENDING: frozenset[str] = frozenset(
    {
        NONE, PRIORITY, RESOURCES, REQ_NODE_NOT_AVAIL, BAD_CONSTRAINTS,
        PARTITION_TIME_LIMIT, PARTITION_NODE_LIMIT, PARTITION_DOWN, PARTITION_INACTIVE,
        PARTITION_CONFIG, RESERVATION, LICENSES, SCHED_DEFER,
        DEPENDENCY, DEPENDENCY_NEVER_SATISFIED, BEGIN_TIME, JOB_HELD_USER, JOB_HELD_ADMIN,
        JOB_HOLD_MAX_REQUEUE, JOB_ARRAY_TASK_LIMIT, CLEANING, PROLOG,
        ACCOUNT_NOT_ALLOWED, QOS_NOT_ALLOWED, INVALID_ACCOUNT, INVALID_QOS,
        ACCOUNTING_POLICY, ASSOC_GRP_CPU_LIMIT, ASSOC_GRP_JOBS_LIMIT, ASSOC_GRP_MEM_LIMIT,
        ASSOC_GRP_NODE_LIMIT, ASSOC_GRP_GRES, ASSOC_GRP_SUBMIT_JOBS_LIMIT,
        ASSOC_GRP_WALL_LIMIT, ASSOC_MAX_JOBS_LIMIT, ASSOC_MAX_WALL_PER_JOB,
        ASSOC_MAX_SUBMIT_JOB_LIMIT, QOS_GRP_CPU_LIMIT, QOS_GRP_JOBS_LIMIT, QOS_GRP_MEM_LIMIT,
        QOS_GRP_NODE_LIMIT, QOS_GRP_GRES, QOS_GRP_SUBMIT_JOBS_LIMIT, QOS_MAX_JOBS_PER_USER,
        QOS_MAX_WALL_PER_JOB, QOS_MAX_SUBMIT_PER_USER, QOS_USAGE_THRESHOLD,
        MAX_JOBS_PER_ACCOUNT, QOS_MAX_CPU_PER_JOB, QOS_MAX_MEMORY_PER_JOB,
        QOS_MAX_NODE_PER_JOB, QOS_MAX_GRES_PER_JOB, QOS_MAX_CPU_PER_USER,
        QOS_MAX_MEMORY_PER_USER, QOS_MAX_NODE_PER_USER, QOS_MAX_GRES_PER_USER,
    }
)  # fmt: skip
"""Every reason a pending job may carry."""

ENDED: frozenset[str] = frozenset(
    {
        NON_ZERO_EXIT_CODE, RAISED_SIGNAL, TIME_LIMIT, NODE_DOWN, OUT_OF_MEMORY,
        INACTIVE_LIMIT, JOB_LAUNCH_FAILURE, SYSTEM_FAILURE, DEADLINE, GPUS_IDLE,
    }
)  # fmt: skip
"""Reasons recorded on jobs that ended (besides ``None``)."""

REASONS: frozenset[str] = PENDING | ENDED
"""The whole closed vocabulary."""


class UnknownReason(ValueError):
    """A reason outside the vocabulary: a bug of the code that chose it."""


def check_reason(name: str) -> str:
    """Return ``name`` if it is in the vocabulary, else raise ``UnknownReason``."""
    if name not in REASONS:
        raise UnknownReason(f"unknown job reason: {name!r}")
    return name


def check_pending(name: str) -> str:
    """Return ``name`` if a pending job may carry it, else raise ``UnknownReason``."""
    if name not in PENDING:
        raise UnknownReason(f"unknown pending reason: {name!r}")
    return name
