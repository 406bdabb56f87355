"""The commands' lean HTTP client to the controller.

Standard library only (HTTP/1.1 written by hand), because every command
pays its import time on every run.  The socket path comes from the
configuration found through ``SLURM_CONF`` (or ``-f``), so ``SLURM_CONF``
alone is enough on the controller's host; the controller learns who we are
from the socket's peer credentials (``auth/local``).  On any other host --
the socket does not answer -- or when ``SLURM_JWT`` is set, requests go over
TCP to ``SlurmctldHost:SlurmctldPort`` and each carries its proof: the token
(header ``X-SLURM-USER-TOKEN``), else a fresh ``munge -n`` credential when
``AuthType=auth/munge`` (header ``X-Slurmlite-Munge``; one per request,
since munged decodes each only once).  A refusal prints the reason and
raises ``SLURM_PROTOCOL_AUTHENTICATION_ERROR``, so a command ends as
Slurm's do, e.g.::

    squeue: error: Authentication credential expired: token expired
    slurm_load_jobs error: Protocol authentication error

Errors come back as ``SlurmError`` with Slurm's code and message, e.g.
``SlurmError(ESLURM_INVALID_JOB_ID)`` -> "Invalid job id specified".

Waiting: a request has ``MessageTimeout`` seconds (slurm.conf, default 10,
as Slurm) in all.  Within them a connect failure (refused, no socket: the
controller is restarting) is retried with short pauses, since nothing was
sent; a lost reply (timeout, reset) is retried only where that is safe: a
``GET``, and a submission, which carries its idempotency key and deadline
(``slurmlite.idempotency`` explains why it can never make two jobs).  Then
the request fails with Slurm's words: ``Unable to contact slurm controller
(connect failure)`` when nobody answered the door, ``Socket timed out on
send/recv operation`` when the controller took the request and never
answered.

Start-up is most of a command's time, so this module builds none of the
wire dataclasses of :mod:`slurmlite.protocol` (importing ``dataclasses``
and defining them costs a command more than its request): answers come
back as :class:`Record` views with the same attribute names (a ``JobInfo``
answer has ``.job_id``, ``.state``, ``.alloc[0].node``...), and requests go
out as dicts of the same field names.  A dataclass is accepted too
(``submit(JobSubmit(...))``: the bench and tests build them).
"""

from __future__ import annotations

import json
import os
import sys
import time
from urllib.parse import urlencode

from cli.connection import TcpConnection, UnixConnection
from slurmlite import errors
from slurmlite.conftext import ClientSettings, ConfigError, client_settings
from slurmlite.errors import SlurmError
from slurmlite.idempotency import DEADLINE_HEADER, KEY_HEADER, LAST_TRY, MIN_SUBMIT_WAIT, new_key

TYPE_CHECKING = False  # importing typing costs a command ~3 ms; annotations are
if TYPE_CHECKING:  # strings, so only type checkers need these names
    from typing import Any, NoReturn

if TYPE_CHECKING:  # the shapes the Records have (never imported at run time)
    from slurmlite.protocol import CancelResult, JobInfo, NodeInfo, PartitionInfo, SubmitResult

# nested lists of objects in an answer: key -> converted to Records too
_NESTED = ("alloc", "steps")


class Record:
    """A read-only view of one JSON object of an answer: its keys are attributes.

    >>> r = Record({"job_id": 7, "alloc": [{"node": "n1", "cpus": 2}]})
    >>> (r.job_id, r.alloc[0].node)
    (7, 'n1')
    """

    def __init__(self, data: dict[str, Any]) -> None:
        for key in _NESTED:
            items = data.get(key)
            if items and isinstance(items[0], dict):
                data[key] = [Record(item) for item in items]
        self.__dict__.update(data)

    def __repr__(self) -> str:
        return f"Record({self.__dict__!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and other.__dict__ == self.__dict__


def _records(items: list[dict[str, Any]]) -> list[Any]:
    return [Record(item) for item in items]


def _body(req: Any) -> Any:
    """A request as JSON-ready data: dicts as they are, wire dataclasses through to_dict."""
    if req is None or isinstance(req, dict):
        return req
    from slurmlite.protocol import to_dict  # only callers that built a dataclass pay for it

    return to_dict(req)


class ControllerClient:
    def __init__(
        self,
        config: ClientSettings,
        prog: str = "slurmlite",
        timeout: float | None = None,
        token: str | None = None,
    ) -> None:
        """``config``: anything with ``path``, ``socket_path`` and ``cluster_name`` (a full
        ``slurmlite.config.Config`` will do).  ``token``: a JSON Web Token (``SLURM_JWT``);
        with one, requests go over TCP and carry it.  ``timeout``: seconds a request may
        take in all, retries included (default: the config's ``MessageTimeout``).

        Which way (decided at the first request): the Unix socket when it answers
        (the controller's host; the kernel says who we are), else TCP to
        ``SlurmctldHost:SlurmctldPort`` with a munge credential when
        ``AuthType=auth/munge``; a token always goes over TCP.
        """
        self.config = config
        self.prog = prog
        self.token = (token or "").strip() or None
        if timeout is None:
            timeout = float(getattr(config, "message_timeout", 10))
        self._timeout = timeout
        self._conn: UnixConnection = UnixConnection(config.socket_path, timeout)
        self._chosen = False  # the connection's kind is decided
        self._munge = False  # over TCP with AuthType=auth/munge: credentials from munged
        self._munge_socket: str | None = None  # AuthInfo=socket=PATH; None: munge's default

    @classmethod
    def from_env(cls, prog: str, conf_path: str | None = None) -> ControllerClient:
        try:
            cfg = client_settings(conf_path)
        except (ConfigError, OSError) as e:
            raise SlurmError(errors.SLURMLITE_CONFIG_INVALID, str(e)) from None
        return cls(cfg, prog, token=os.environ.get("SLURM_JWT"))

    # ------------------------------------------------------------ transport

    def _choose(self) -> None:
        """Unix socket if it answers (and no token), else TCP with credentials; with
        ``auth/local`` the socket is the only way (a controller not listening yet is
        retried by ``request``)."""
        self._chosen = True
        if not self.token:
            try:
                self._conn.open()
                return
            except OSError:
                self._conn.close()
        cfg = self.config
        if not hasattr(cfg, "auth_type"):  # ClientSettings: the full reader knows the rest
            from slurmlite.config import load_config  # only commands far from the socket pay

            try:
                cfg = load_config(self.config.path)
            except (ConfigError, OSError) as e:
                raise SlurmError(errors.SLURMLITE_CONFIG_INVALID, str(e)) from None
        auth = cfg.auth_type  # type: ignore[attr-defined]
        if self.token and not self.token.isprintable():  # it goes into a header line
            self._auth_failed("SLURM_JWT is not a token (control characters in it)")
        if not self.token:
            if auth == "auth/jwt":
                self._auth_failed("Could not load SLURM_JWT environment variable.")
            if auth != "auth/munge":  # auth/local: the socket is the only way in
                return
            self._munge = True
            self._munge_socket = cfg.auth_info.get("socket") or None  # type: ignore[attr-defined]
        host, port = cfg.control_addr, cfg.slurmctld_port  # type: ignore[attr-defined]
        self._conn = TcpConnection(host, port, self._timeout)

    def _auth_headers(self) -> dict[str, str] | None:
        """What proves who we are over TCP: the token, else a fresh munge credential."""
        if self.token:
            return {"X-SLURM-USER-TOKEN": self.token}
        if not self._munge:
            return None
        from slurmlite import munge

        try:
            return {"X-Slurmlite-Munge": munge.encode(self._munge_socket)}
        except munge.AuthError as e:
            self._auth_failed(f"Munge encode failed: {e}")

    def _auth_failed(self, why: str) -> NoReturn:
        """Slurm's two lines: the reason (``prog: error: ...``, printed here, so the
        error carries no detail to print twice), then the command's own line with
        "Protocol authentication error", the SlurmError's text."""
        print(f"{self.prog}: error: {why}", file=sys.stderr)
        raise SlurmError(errors.SLURM_PROTOCOL_AUTHENTICATION_ERROR)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        retry: bool | None = None,
        deadline: bool = False,
    ) -> Any:
        """One request, answered within ``MessageTimeout`` or failed with Slurm's words.

        ``retry``: whether a lost reply may be retried (default: only for ``GET``);
        connect failures always are.  ``deadline``: send the moment this request
        gives up (``X-Slurmlite-Deadline``), so the controller commits nothing later.
        """
        if query:
            items = [
                (k, v) for k, v in query.items() if v is not None and v != [] and v is not False
            ]
            flat = []
            for k, v in items:
                if isinstance(v, list | tuple | set):
                    flat += [(k, str(x)) for x in v]
                else:
                    flat.append((k, "true" if v is True else str(v)))
            if flat:
                path = f"{path}?{urlencode(flat)}"
        data = json.dumps(body).encode() if body is not None else None
        status, raw = self._exchange(method, path, data, headers, retry, deadline)
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        if status == 401:  # the controller did not accept our credential
            self._auth_failed(_error_from(status, payload).full)
        if status >= 400:
            raise _error_from(status, payload)
        return payload

    def _exchange(
        self,
        method: str,
        path: str,
        data: bytes | None,
        extra: dict[str, str] | None,
        retry: bool | None,
        deadline: bool,
    ) -> tuple[int, bytes]:
        """Send until answered or ``MessageTimeout`` is spent; (status, body).

        A retried request reads each attempt's answer until :data:`LAST_TRY`
        seconds before giving up, then makes one last attempt (same key) with
        what is left: a reply lost on a dead connection is fetched again while
        the controller may still answer it.
        """
        retry = method == "GET" if retry is None else retry
        wait = max(self._timeout, MIN_SUBMIT_WAIT) if deadline else self._timeout
        give_up = time.monotonic() + wait
        extra = dict(extra or {})
        if deadline:
            extra[DEADLINE_HEADER] = f"{time.time() + wait:.3f}"
        failure = errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR
        pause = 0.05  # between connect attempts, doubling to 0.5 s
        self._conn.deadline = give_up
        if not self._chosen:
            self._choose()
        while True:
            now = time.monotonic()
            if now >= give_up:
                self._conn.close()
                raise SlurmError(failure)
            last = not retry or now >= give_up - LAST_TRY
            self._conn.deadline = give_up if last else give_up - LAST_TRY
            headers = self._auth_headers()  # a munge credential decodes once: one per try
            if extra:
                headers = {**(headers or {}), **extra}
            reused = self._conn.reused
            try:
                self._conn.open()
            except OSError:  # nothing was sent: wait a little and knock again
                self._conn.close()
                failure = errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR
                time.sleep(max(0.0, min(pause, give_up - time.monotonic())))
                pause = min(pause * 2, 0.5)
                continue
            try:
                return self._conn.request(method, path, data, headers)
            except (OSError, ValueError, IndexError) as e:
                self._conn.close()
                timed_out = isinstance(e, TimeoutError)
                failure = (
                    errors.SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT
                    if timed_out
                    else errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR
                )
                if retry:
                    if not timed_out:  # reset or closed: not at once into the same wall
                        time.sleep(max(0.0, min(0.05, give_up - time.monotonic())))
                    continue
                # only a kept-alive connection the controller closed meanwhile is worth a
                # second try; anything else might have reached it (never do a thing twice)
                if not reused or timed_out:
                    raise SlurmError(failure) from None

    def raw(
        self,
        method: str,
        path: str,
        data: bytes | None = None,
        query: dict[str, Any] | None = None,
        retry: bool | None = None,
    ) -> bytes:
        """A request whose answer is bytes, not JSON (a snapshot's part); errors as ``request``."""
        if query:
            path = f"{path}?{urlencode(query)}"
        status, raw = self._exchange(method, path, data, None, retry, False)
        if status >= 400:
            try:
                payload = json.loads(raw) if raw else None
            except ValueError:
                payload = None
            if status == 401:
                self._auth_failed(_error_from(status, payload).full)
            raise _error_from(status, payload)
        return raw

    def close(self) -> None:
        self._conn.close()

    # ---------------------------------------------------------------- calls

    def submit(self, req: Any, key: str | None = None) -> SubmitResult:
        """``req``: JobSubmit fields as a dict (or a ``JobSubmit``).

        ``key``: the submission's idempotency key (default: a fresh one for this
        call); every attempt of the call carries it, and the moment it gives up,
        so a lost reply is retried without ever making a second job."""
        headers = {KEY_HEADER: key or new_key()}
        answer = self.request("POST", "/v1/jobs", _body(req), None, headers, True, True)
        return Record(answer)  # type: ignore[return-value]

    def get_jobs(self, **filters: Any) -> list[JobInfo]:
        """Jobs as the controller shows them; filters: ``job_ids``, ``users``, ``names``,
        ``partitions``, ``states`` (a set), ``all_states``, ``with_steps``."""
        data = self.request("GET", "/v1/jobs", query=_job_filters(**filters))
        return _records(data["jobs"])

    def get_job_rows(self, fields: list[str], **filters: Any) -> tuple[list[str], list[list[Any]]]:
        """The jobs of :meth:`get_jobs` (same keyword filters), only ``fields`` of each
        (JobInfo names), as ``(field names, rows)``, each row a list in that order.

        What squeue uses for big queues: 10,000 jobs of a few fields parse in a
        fraction of the time of whole job objects.
        """
        q = {"fields": ",".join(fields), **_job_filters(**filters)}
        data = self.request("GET", "/v1/jobs", query=q)
        return list(data["fields"]), data["rows"]

    def get_accounting(
        self,
        job_ids: list[int] | None = None,
        users: list[str] | None = None,
        names: list[str] | None = None,
        states: set[str] | None = None,
        start: float | None = None,
        end: float | None = None,
    ) -> list[JobInfo]:
        q = {
            "ids": job_ids,
            "users": users,
            "names": names,
            "states": sorted(states) if states else None,
            "start": start,
            "end": end,
        }
        data = self.request("GET", "/v1/accounting", query=q)
        return _records(data["jobs"])

    def get_nodes(self) -> list[NodeInfo]:
        return _records(self.request("GET", "/v1/nodes")["nodes"])

    def get_partitions(self) -> list[PartitionInfo]:
        return _records(self.request("GET", "/v1/partitions")["partitions"])

    def get_config_items(self) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.request("GET", "/v1/config")["items"]]

    def cancel(self, req: Any) -> list[CancelResult]:
        """``req``: CancelRequest fields as a dict (or a ``CancelRequest``)."""
        return _records(self.request("POST", "/v1/jobs/cancel", _body(req))["results"])

    def update_nodes(self, upd: Any) -> None:
        """``upd``: NodeUpdate fields as a dict (or a ``NodeUpdate``)."""
        self.request("POST", "/v1/nodes/update", _body(upd))

    def reconfigure(self) -> list[str]:
        return list(self.request("POST", "/v1/reconfigure")["warnings"])

    def whoami(self) -> tuple[int, str]:
        data = self.request("GET", "/v1/whoami")
        return int(data["uid"]), str(data["user"])

    # ------------------------------------------------- job verbs (scontrol)
    # Each answers one Record per id, in order: ``.job_id``, ``.errno`` (0: done)
    # and ``.error`` (Slurm's message), so one refused id does not hide the others.

    def hold_jobs(self, job_ids: list[int], user_hold: bool = False) -> list[Any]:
        """``scontrol hold`` (``user_hold``: ``uhold``, a user hold even from an operator)."""
        body = {"job_ids": job_ids, "user_hold": user_hold}
        return _records(self.request("POST", "/v1/jobs/hold", body)["results"])

    def release_jobs(self, job_ids: list[int]) -> list[Any]:
        return _records(self.request("POST", "/v1/jobs/release", {"job_ids": job_ids})["results"])

    def requeue_jobs(self, job_ids: list[int], hold: bool = False) -> list[Any]:
        """``scontrol requeue`` (``hold``: ``requeuehold``)."""
        body = {"job_ids": job_ids, "hold": hold}
        return _records(self.request("POST", "/v1/jobs/requeue", body)["results"])

    def update_jobs(self, job_ids: list[int], changes: dict[str, Any]) -> list[Any]:
        """``scontrol update JobId=...``; ``changes``: ``time_limit`` (minutes or
        ``"UNLIMITED"``), ``name``, ``comment``, ``partition``, ``requeue``."""
        body = {"job_ids": job_ids, **changes}
        return _records(self.request("POST", "/v1/jobs/update", body)["results"])

    # ------------------------------------------------ job steps (srun, salloc)

    def create_step(self, job_id: int, req: Any) -> Any:
        """``POST /v1/jobs/{job_id}/steps`` with StepRequest fields (a dict or the
        dataclass); the answer is a StepGrant view: ``.step_id``, ``.ntasks``,
        ``.nodes`` (Records: ``.node``, ``.addr``, ``.port``, ``.tasks``) and
        ``.launches`` (dicts, forwarded to the agents unchanged).  A step that
        does not fit next to the running ones: ``SlurmError(ESLURM_NODES_BUSY)``."""
        try:
            data = self.request("POST", f"/v1/jobs/{job_id}/steps", _body(req))
        except SlurmError as e:
            if e.code == errors.SLURM_ERROR and (e.detail or "").startswith(
                "controller answered HTTP 409"
            ):
                raise SlurmError(errors.ESLURM_NODES_BUSY) from None
            raise
        data["nodes"] = [Record(node) for node in data.get("nodes", [])]
        return Record(data)

    def allocation_update(self, job_id: int, end: bool = False, exit_code: int = 0) -> Any:
        """``POST /v1/jobs/{job_id}/allocation``: keep an srun/salloc allocation alive,
        or end it (``end``) with the command's raw wait status.  The answer says how
        the job stands (``.state``, ``.reason``, ``.exit_code``); once it has ended,
        ``SlurmError(ESLURM_ALREADY_DONE)``."""
        body = {"end": end, "exit_code": exit_code}
        answer = self.request("POST", f"/v1/jobs/{job_id}/allocation", body)
        return Record(answer) if isinstance(answer, dict) else answer


def _job_filters(
    job_ids: list[int] | None = None,
    users: list[str] | None = None,
    names: list[str] | None = None,
    partitions: list[str] | None = None,
    states: set[str] | None = None,
    all_states: bool = False,
    with_steps: bool = False,
) -> dict[str, Any]:
    """The query parameters of a job listing (``GET /v1/jobs``)."""
    return {
        "ids": job_ids,
        "users": users,
        "names": names,
        "partitions": partitions,
        "states": sorted(states) if states else None,
        "all_states": all_states,
        "steps": with_steps,
    }


def _error_from(status: int, payload: Any) -> SlurmError:
    if isinstance(payload, dict):
        body = payload.get("detail") if isinstance(payload.get("detail"), dict) else payload
        if isinstance(body, dict) and "errno" in body:
            return SlurmError(int(body["errno"]), body.get("detail"))
    if status == 401:
        return SlurmError(errors.ESLURM_AUTH_CRED_INVALID)
    if status == 422 and isinstance(payload, dict) and isinstance(payload.get("message"), str):
        return SlurmError(errors.SLURM_ERROR, payload["message"])  # the controller's plain words
    if status == 422:
        return SlurmError(errors.SLURM_ERROR, f"request rejected by the controller: {payload}")
    text = payload.get("detail") if isinstance(payload, dict) else None
    if isinstance(text, str) and text:  # e.g. 413: "request body over 16 MiB"
        return SlurmError(errors.SLURM_ERROR, f"controller answered HTTP {status}: {text}")
    return SlurmError(errors.SLURM_ERROR, f"controller answered HTTP {status}")
