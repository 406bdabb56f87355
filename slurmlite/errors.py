"""The one error base class and code -> message table (DESIGN.md §4 rule 13).

Every "no" that crosses a boundary is a :class:`SlurmError` carrying one of
Slurm's own error numbers (``slurm/slurm_errno.h``) and, from :data:`MESSAGES`,
the exact text real Slurm prints for it.  The controller raises it, the API
layer turns it into JSON plus an HTTP status (:func:`http_status`), the
commands turn it back into the same exception and print Slurm's line.

Worked example::

    >>> err = SlurmError(ESLURM_INVALID_PARTITION_NAME, detail="nosuch")
    >>> str(err)
    'Invalid partition name specified'
    >>> f"sbatch: error: Batch job submission failed: {err}"
    'sbatch: error: Batch job submission failed: Invalid partition name specified'
    >>> http_status(err.code), exit_status(ESLURM_ACCESS_DENIED)   # scancel exits 210
    (400, 210)

Features slurmlite has not built yet raise :func:`not_supported` (code
``ESLURM_NOT_SUPPORTED``) so users get a clear, Slurm-shaped refusal instead
of silent misbehaviour.

A command's own "no" -- a bad option, job id, ``--format`` field or sacctmgr
word, found before anything is asked of the controller -- has no Slurm number
and never crosses the wire: it is a :class:`CommandLineError`, the one type
every command raises for it and catches only in its ``main``
(``cli.common.reported`` prints its lines and gives its exit status)::

    >>> exc = CommandLineError(["squeue: error: Invalid job id: x"])
    >>> exc.lines, exc.exit_code
    (['squeue: error: Invalid job id: x'], 1)
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # importing typing costs a command ~3 ms; annotations are
if TYPE_CHECKING:  # strings, so only type checkers need these names
    from typing import Any


# ------------------------------------------------------------ error numbers

SLURM_SUCCESS = 0
SLURM_ERROR = -1
SLURM_UNEXPECTED_MSG_ERROR = 1000
SLURM_COMMUNICATIONS_CONNECTION_ERROR = 1001
SLURM_COMMUNICATIONS_SEND_ERROR = 1002
SLURM_COMMUNICATIONS_RECEIVE_ERROR = 1003
SLURM_PROTOCOL_VERSION_ERROR = 1005
SLURM_PROTOCOL_AUTHENTICATION_ERROR = 1007
SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR = 1800
SLURMCTLD_COMMUNICATIONS_SEND_ERROR = 1801
SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR = 1802
SLURMCTLD_COMMUNICATIONS_BACKOFF = 1804
ESLURM_INVALID_PARTITION_NAME = 2000
ESLURM_DEFAULT_PARTITION_NOT_SET = 2001
ESLURM_ACCESS_DENIED = 2002
ESLURM_JOB_MISSING_REQUIRED_PARTITION_GROUP = 2003
ESLURM_REQUESTED_NODES_NOT_IN_PARTITION = 2004
ESLURM_TOO_MANY_REQUESTED_CPUS = 2005
ESLURM_INVALID_NODE_COUNT = 2006
ESLURM_JOB_SCRIPT_MISSING = 2009
ESLURM_USER_ID_MISSING = 2010
ESLURM_DUPLICATE_JOB_ID = 2011
ESLURM_PATHNAME_TOO_LONG = 2012
ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE = 2014
ESLURM_REQUESTED_PART_CONFIG_UNAVAILABLE = 2015
ESLURM_NODES_BUSY = 2016
ESLURM_INVALID_JOB_ID = 2017
ESLURM_INVALID_NODE_NAME = 2018
ESLURM_WRITING_TO_FILE = 2019
ESLURM_TRANSITION_STATE_NO_UPDATE = 2020
ESLURM_ALREADY_DONE = 2021
ESLURM_BAD_DIST = 2023
ESLURM_JOB_PENDING = 2024
ESLURM_BAD_TASK_COUNT = 2025
ESLURM_INVALID_JOB_CREDENTIAL = 2026
ESLURM_INVALID_NODE_STATE = 2028
ESLURM_INVALID_FEATURE = 2029
ESLURM_NOT_SUPPORTED = 2036
ESLURM_DISABLED = 2037
ESLURM_DEPENDENCY = 2038
ESLURM_BATCH_ONLY = 2039
ESLURM_JOB_HELD = 2042
ESLURM_INVALID_TASK_MEMORY = 2044
ESLURM_INVALID_ACCOUNT = 2045
ESLURM_INVALID_PARENT_ACCOUNT = 2046
ESLURM_INVALID_LICENSES = 2048
ESLURM_ACCOUNTING_POLICY = 2050
ESLURM_INVALID_TIME_LIMIT = 2051
ESLURM_RESERVATION_ACCESS = 2052
ESLURM_INVALID_TIME_VALUE = 2054
ESLURM_MISSING_WORK_DIR = 2063
ESLURM_INVALID_QOS = 2066
ESLURM_NODE_NOT_AVAIL = 2068
ESLURM_INVALID_CPU_COUNT = 2069
ESLURM_PARTITION_NOT_AVAIL = 2070
ESLURM_CIRCULAR_DEPENDENCY = 2071
ESLURM_INVALID_GRES = 2072
ESLURM_JOB_NOT_PENDING = 2073
ESLURM_STEP_LIMIT = 2076
ESLURM_JOB_SUSPENDED = 2077
ESLURM_CAN_NOT_START_IMMEDIATELY = 2078
ESLURM_INVALID_ARRAY = 2081
ESLURM_JOB_STARTED = 2083
ESLURM_JOB_FINISHED = 2084
ESLURM_JOB_NOT_RUNNING = 2085
ESLURM_JOB_NOT_PENDING_NOR_RUNNING = 2086
ESLURM_JOB_NOT_SUSPENDED = 2087
ESLURM_JOB_NOT_FINISHED = 2088
ESLURM_INTERNAL = 2090
ESLURM_PRIO_RESET_FAIL = 2095
ESLURM_PARTITION_DOWN = 2101
ESLURM_SUBMISSIONS_DISABLED = 2105
ESLURM_INVALID_TRES = 2115
ESLURM_INVALID_GRES_TYPE = 2119
ESLURM_INVALID_NICE = 2123
ESLURM_INVALID_TIME_MIN_LIMIT = 2124
ESLURMD_KILL_TASK_FAILED = 4001
ESLURMD_INVALID_JOB_CREDENTIAL = 4004
ESLURMD_CREDENTIAL_EXPIRED = 4007
ESLURMD_CREDENTIAL_REVOKED = 4008
ESLURMD_CREDENTIAL_REPLAYED = 4009
ESLURMD_EXECVE_FAILED = 4020
ESLURMD_PROLOG_FAILED = 4022
ESLURMD_EPILOG_FAILED = 4023
SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT = 5004
ESLURM_AUTH_CRED_INVALID = 6000
ESLURM_AUTH_EXPIRED = 6001
ESLURM_AUTH_UNABLE_TO_GENERATE_TOKEN = 6009
ESLURM_DB_CONNECTION = 7000
ESLURM_JOBS_RUNNING_ON_ASSOC = 7001
ESLURM_NO_REMOVE_DEFAULT_ACCOUNT = 7009
ESLURM_PLUGIN_NOT_LOADED = 8004

# slurmlite's own codes (no Slurm equivalent), above Slurm's ranges
SLURMLITE_CONFIG_INVALID = 9001
SLURMLITE_NO_SUCH_RUN = 9002  # slurmlite get/logs of a run id that is not a run
SLURMLITE_RUN_REFUSED = 9003  # a workload, snapshot or secret the controller cannot take
SLURMLITE_NO_SUCH_SECRET = 9004

NOT_SUPPORTED_YET = ESLURM_NOT_SUPPORTED  # code used by :func:`not_supported`

# --------------------------------------------------------------- the table

MESSAGES: dict[int, str] = {
    SLURM_SUCCESS: "No error",
    SLURM_ERROR: "Unspecified error",
    SLURM_UNEXPECTED_MSG_ERROR: "Unexpected message received",
    SLURM_COMMUNICATIONS_CONNECTION_ERROR: "Communication connection failure",
    SLURM_COMMUNICATIONS_SEND_ERROR: "Message send failure",
    SLURM_COMMUNICATIONS_RECEIVE_ERROR: "Message receive failure",
    SLURM_PROTOCOL_VERSION_ERROR: "Incompatible versions of client and server code",
    SLURM_PROTOCOL_AUTHENTICATION_ERROR: "Protocol authentication error",
    SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR: "Unable to contact slurm controller (connect failure)",
    SLURMCTLD_COMMUNICATIONS_SEND_ERROR: "Unable to contact slurm controller (send failure)",
    SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR: "Unable to contact slurm controller (receive failure)",
    SLURMCTLD_COMMUNICATIONS_BACKOFF: "Rate limit exceeded, please retry momentarily",
    ESLURM_INVALID_PARTITION_NAME: "Invalid partition name specified",
    ESLURM_DEFAULT_PARTITION_NOT_SET: "No partition specified or system default partition",
    ESLURM_ACCESS_DENIED: "Access/permission denied",
    ESLURM_JOB_MISSING_REQUIRED_PARTITION_GROUP: "User's group not permitted to use this partition",
    ESLURM_REQUESTED_NODES_NOT_IN_PARTITION: "Requested nodes not in this partition",
    ESLURM_TOO_MANY_REQUESTED_CPUS: "More processors requested than permitted",
    ESLURM_INVALID_NODE_COUNT: "Node count specification invalid",
    ESLURM_JOB_SCRIPT_MISSING: "Job script not specified",
    ESLURM_USER_ID_MISSING: "Invalid user id",
    ESLURM_DUPLICATE_JOB_ID: "Duplicate job id",
    ESLURM_PATHNAME_TOO_LONG: "Pathname of a file, directory or other parameter too long",
    ESLURM_REQUESTED_NODE_CONFIG_UNAVAILABLE: "Requested node configuration is not available",
    ESLURM_REQUESTED_PART_CONFIG_UNAVAILABLE: "Requested partition configuration not available now",
    ESLURM_NODES_BUSY: "Requested nodes are busy",
    ESLURM_INVALID_JOB_ID: "Invalid job id specified",
    ESLURM_INVALID_NODE_NAME: "Invalid node name specified",
    ESLURM_WRITING_TO_FILE: "I/O error writing script/environment to file",
    ESLURM_TRANSITION_STATE_NO_UPDATE: "Job can not be altered now, try again later",
    ESLURM_ALREADY_DONE: "Job/step already completing or completed",
    ESLURM_BAD_DIST: "Task distribution specification invalid",
    ESLURM_JOB_PENDING: "Job is pending execution",
    ESLURM_BAD_TASK_COUNT: "Task count specification invalid",
    ESLURM_INVALID_JOB_CREDENTIAL: "Error generating job credential",
    ESLURM_INVALID_NODE_STATE: "Invalid node state specified",
    ESLURM_INVALID_FEATURE: "Invalid feature specification",
    ESLURM_NOT_SUPPORTED: "Requested operation not supported on this system",
    SLURMLITE_CONFIG_INVALID: "Invalid configuration file",
    SLURMLITE_NO_SUCH_RUN: "No such run",
    SLURMLITE_RUN_REFUSED: "Run refused",
    SLURMLITE_NO_SUCH_SECRET: "No such secret",
    ESLURM_DISABLED: "Requested operation is presently disabled",
    ESLURM_DEPENDENCY: "Job dependency problem",
    ESLURM_BATCH_ONLY: "Only batch jobs are accepted or processed",
    ESLURM_JOB_HELD: "Job is in held state, pending scheduler release",
    ESLURM_INVALID_TASK_MEMORY: "Memory required by task is not available",
    ESLURM_INVALID_ACCOUNT: "Invalid account or account/partition combination specified",
    ESLURM_INVALID_PARENT_ACCOUNT: "Invalid parent account specified",
    ESLURM_INVALID_LICENSES: "Invalid license specification",
    ESLURM_ACCOUNTING_POLICY: (
        "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)"
    ),
    ESLURM_INVALID_TIME_LIMIT: "Requested time limit is invalid (missing or exceeds some limit)",
    ESLURM_RESERVATION_ACCESS: "Access denied to requested reservation",
    ESLURM_INVALID_TIME_VALUE: "Invalid time specified",
    ESLURM_MISSING_WORK_DIR: (
        "Job cannot be submitted without the current working directory specified."
    ),
    ESLURM_INVALID_QOS: "Invalid qos specification",
    ESLURM_NODE_NOT_AVAIL: "Required node not available (down, drained or reserved)",
    ESLURM_INVALID_CPU_COUNT: "CPU count specification invalid",
    ESLURM_PARTITION_NOT_AVAIL: "Required partition not available (inactive or drain)",
    ESLURM_CIRCULAR_DEPENDENCY: "Circular job dependency",
    ESLURM_INVALID_GRES: "Invalid generic resource (gres) specification",
    ESLURM_JOB_NOT_PENDING: "Job is no longer pending execution",
    ESLURM_STEP_LIMIT: "Step limit reached for this job",
    ESLURM_JOB_SUSPENDED: "Job is current suspended, requested operation disabled",
    ESLURM_CAN_NOT_START_IMMEDIATELY: "Job can not start immediately",
    ESLURM_INVALID_ARRAY: "Invalid job array specification",
    ESLURM_JOB_STARTED: "Job has already started",
    ESLURM_JOB_FINISHED: "Job has already finished",
    ESLURM_JOB_NOT_RUNNING: "Job is not running",
    ESLURM_JOB_NOT_PENDING_NOR_RUNNING: "Job is not pending nor running",
    ESLURM_JOB_NOT_SUSPENDED: "Job is not suspended",
    ESLURM_JOB_NOT_FINISHED: "Job is not finished",
    ESLURM_INTERNAL: "Slurm internal error, contact system administrator",
    ESLURM_PRIO_RESET_FAIL: "Changes to job priority are not persistent, change nice instead",
    ESLURM_PARTITION_DOWN: "Partition in DOWN state",
    ESLURM_SUBMISSIONS_DISABLED: "System submissions disabled",
    ESLURM_INVALID_TRES: "Invalid Trackable RESource (TRES) specification",
    ESLURM_INVALID_GRES_TYPE: "Invalid GRES specification (with and without type identification)",
    ESLURM_INVALID_NICE: "Invalid --nice value",
    ESLURM_INVALID_TIME_MIN_LIMIT: (
        "Invalid time-min specification (exceeds job's time or other limits)"
    ),
    ESLURMD_KILL_TASK_FAILED: "Kill task failed",
    ESLURMD_INVALID_JOB_CREDENTIAL: "Invalid job credential",
    ESLURMD_CREDENTIAL_EXPIRED: "Job credential expired",
    ESLURMD_CREDENTIAL_REVOKED: "Job credential revoked",
    ESLURMD_CREDENTIAL_REPLAYED: "Job credential replayed",
    ESLURMD_EXECVE_FAILED: "Slurmd could not execve job",
    ESLURMD_PROLOG_FAILED: "Job prolog failed",
    ESLURMD_EPILOG_FAILED: "Job epilog failed",
    SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT: "Socket timed out on send/recv operation",
    ESLURM_AUTH_CRED_INVALID: "Invalid authentication credential",
    ESLURM_AUTH_EXPIRED: "Authentication credential expired",
    ESLURM_AUTH_UNABLE_TO_GENERATE_TOKEN: "Token Generation failed.",
    ESLURM_DB_CONNECTION: "Unable to connect to database",
    ESLURM_JOBS_RUNNING_ON_ASSOC: "Job(s) active, cancel job(s) before remove",
    ESLURM_NO_REMOVE_DEFAULT_ACCOUNT: "You can not remove the default account of a user",
    ESLURM_PLUGIN_NOT_LOADED: "Required plugin type not loaded or initialized",
}

_NAMES: dict[int, str] = {
    value: key
    for key, value in sorted(globals().items())
    if key.isupper() and isinstance(value, int) and key != "NOT_SUPPORTED_YET"
    and key.startswith(("SLURM", "ESLURM"))
}  # fmt: skip

_STATUS: dict[int, int] = {
    # 401: who are you?
    SLURM_PROTOCOL_AUTHENTICATION_ERROR: 401,
    ESLURM_AUTH_CRED_INVALID: 401,
    ESLURM_AUTH_EXPIRED: 401,
    # 403: you may not
    ESLURM_ACCESS_DENIED: 403,
    ESLURM_USER_ID_MISSING: 403,
    ESLURM_PRIO_RESET_FAIL: 403,
    ESLURM_JOB_MISSING_REQUIRED_PARTITION_GROUP: 403,
    ESLURM_RESERVATION_ACCESS: 403,
    # 404: no such job
    ESLURM_INVALID_JOB_ID: 404,
    SLURMLITE_NO_SUCH_RUN: 404,
    SLURMLITE_NO_SUCH_SECRET: 404,
    # 409: the object is in the wrong state for this
    ESLURM_ALREADY_DONE: 409,
    ESLURM_TRANSITION_STATE_NO_UPDATE: 409,
    ESLURM_DUPLICATE_JOB_ID: 409,
    ESLURM_NODES_BUSY: 409,
    ESLURM_JOB_PENDING: 409,
    ESLURM_JOB_HELD: 409,
    ESLURM_JOB_NOT_PENDING: 409,
    ESLURM_JOB_SUSPENDED: 409,
    ESLURM_JOB_STARTED: 409,
    ESLURM_JOB_FINISHED: 409,
    ESLURM_JOB_NOT_RUNNING: 409,
    ESLURM_JOB_NOT_PENDING_NOR_RUNNING: 409,
    ESLURM_JOB_NOT_SUSPENDED: 409,
    ESLURM_JOB_NOT_FINISHED: 409,
    # 408: the request came after the moment its sender gave up (nothing was done)
    SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT: 408,
    # 5xx: our side
    SLURM_ERROR: 500,
    ESLURM_INTERNAL: 500,
    ESLURM_WRITING_TO_FILE: 500,
    ESLURM_DB_CONNECTION: 500,
    # ESLURM_NOT_SUPPORTED is the default 400: a request for a feature we lack is refused
    # like any other the controller cannot honour, never a server error
    ESLURM_SUBMISSIONS_DISABLED: 503,
    SLURMCTLD_COMMUNICATIONS_BACKOFF: 503,
}


def message(code: int) -> str:
    """Slurm's text for ``code``; system errnos (< 1000) use ``strerror``."""
    if code in MESSAGES:
        return MESSAGES[code]
    if 0 < code < 1000:
        return os.strerror(code)
    return f"Unknown error {code}"


def error_name(code: int) -> str:
    """``2017`` -> ``"ESLURM_INVALID_JOB_ID"`` (``"UNKNOWN_<code>"`` if absent)."""
    return _NAMES.get(code, f"UNKNOWN_{code}")


def http_status(code: int) -> int:
    """HTTP status the API answers with: 401/403/404/409/5xx, else 400."""
    return _STATUS.get(code, 400)


def exit_status(code: int) -> int:
    """Process exit status a command uses for ``code`` (Slurm: code & 0xff)."""
    return code & 0xFF


class SlurmError(Exception):
    """An error with Slurm's number and text; ``detail`` adds context.

    ``str(err)`` is exactly the table text, so commands can print Slurm's
    lines unchanged; ``err.full`` appends the detail for logs and ``-v``.
    """

    def __init__(self, code: int, detail: str | None = None) -> None:
        self.code = code
        self.message = message(code)
        self.detail = detail
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"SlurmError({error_name(self.code)}, detail={self.detail!r})"

    @property
    def full(self) -> str:
        return f"{self.message}: {self.detail}" if self.detail else self.message

    def as_answer(self) -> dict[str, object]:
        """The JSON body the controller answers with (its HTTP status: ``http_status``)."""
        return {"errno": self.code, "error": self.message, "detail": self.detail}

    @property
    def http_status(self) -> int:
        return http_status(self.code)

    def to_dict(self) -> dict[str, Any]:
        """JSON body the API sends: code, name, message, detail."""
        return {
            "code": self.code,
            "name": error_name(self.code),
            "message": self.message,
            "detail": self.detail,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SlurmError:
        """Rebuild from :meth:`to_dict` output (the message comes from our table)."""
        return cls(int(data["code"]), data.get("detail"))


def not_supported(feature: str) -> SlurmError:
    """Refusal for a feature slurmlite does not implement yet.

    ``raise not_supported("--switches")`` -> code ``ESLURM_NOT_SUPPORTED``,
    detail ``"--switches is not supported by slurmlite yet"``.
    """
    return SlurmError(NOT_SUPPORTED_YET, detail=f"{feature} is not supported by slurmlite yet")


class CommandLineError(Exception):
    """A command must stop: print ``lines`` to stderr, exit ``exit_code``.

    The lines are complete (``sacct: fatal: Bad job/step specified: x``), so
    the boundary prints them as they are.  getopt's refusals
    (``slurmlite.getopt.OptionError``) and sbatch's are kinds of it.
    """

    def __init__(self, lines: list[str], exit_code: int = 1) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines
        self.exit_code = exit_code
