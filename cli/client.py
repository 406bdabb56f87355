"""The commands' lean HTTP client to the controller.

Standard library only (``http.client`` over the controller's Unix socket),
because every command pays its import time on every run.  The socket path
comes from the configuration found through ``SLURM_CONF`` (or ``-f``), so
``SLURM_CONF`` alone is enough on the controller's host; the controller
learns who we are from the socket's peer credentials (``auth/local``).

Errors come back as ``SlurmError`` with Slurm's code and message, e.g.
``SlurmError(ESLURM_INVALID_JOB_ID)`` -> "Invalid job id specified".

Start-up is most of a command's time, so this module builds none of the
wire dataclasses of :mod:`slurmlite.protocol` (importing ``dataclasses``
and defining them costs a command more than its request): answers come
back as :class:`Record` views with the same attribute names (a ``JobInfo``
answer has ``.job_id``, ``.state``, ``.alloc[0].node``...), and requests go
out as dicts of the same field names.  A dataclass is accepted too
(``submit(JobSubmit(...))``: the bench and tests build them).
"""

from __future__ import annotations

import _socket
import json
from urllib.parse import urlencode

from slurmlite import errors
from slurmlite.conftext import ClientSettings, ConfigError, client_settings
from slurmlite.errors import SlurmError

TYPE_CHECKING = False  # importing typing costs a command ~3 ms; annotations are
if TYPE_CHECKING:  # strings, so only type checkers need these names
    from typing import Any

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


class _UnixConnection:
    """Just enough HTTP/1.1 over a Unix socket: keep-alive, Content-Length or chunked bodies.

    ``http.client`` would do, but importing it (email parser, ssl) costs a
    command about 18 ms of its start-up, a third of its time budget.
    """

    def __init__(self, path: str, timeout: float) -> None:
        self._path = path
        self._timeout = timeout
        self._sock: _socket.socket | None = None
        self._buf = b""

    @property
    def connected(self) -> bool:
        return self._sock is not None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock, self._buf = None, b""

    def request(self, method: str, target: str, body: bytes | None) -> tuple[int, bytes]:
        if self._sock is None:
            # _socket, not socket: the wrapper module's enums cost ~3 ms of start-up
            sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            sock.settimeout(self._timeout)
            sock.connect(self._path)
            self._sock = sock
        data = body or b""
        head = f"{method} {target} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(data)}\r\n"
        if body is not None:
            head += "Content-Type: application/json\r\n"
        self._sock.sendall(head.encode() + b"\r\n" + data)
        status_line, headers = self._read_head()
        status = int(status_line.split(b" ", 2)[1])
        if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            payload = self._read_chunked()
        else:
            payload = self._read_exact(int(headers.get(b"content-length", b"0")))
        if headers.get(b"connection", b"").lower() == b"close":
            self.close()
        return status, payload

    def _fill(self) -> None:
        assert self._sock is not None
        chunk = self._sock.recv(262144)
        if not chunk:
            raise ConnectionError("controller closed the connection")
        self._buf += chunk

    def _read_line(self) -> bytes:
        while b"\r\n" not in self._buf:
            self._fill()
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._fill()
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def _read_head(self) -> tuple[bytes, dict[bytes, bytes]]:
        status_line = self._read_line()
        headers: dict[bytes, bytes] = {}
        while line := self._read_line():
            key, _, value = line.partition(b":")
            headers[key.strip().lower()] = value.strip()
        return status_line, headers

    def _read_chunked(self) -> bytes:
        parts = []
        while size := int(self._read_line().split(b";")[0], 16):
            parts.append(self._read_exact(size))
            self._read_line()
        while self._read_line():  # trailers
            pass
        return b"".join(parts)


class ControllerClient:
    def __init__(
        self, config: ClientSettings, prog: str = "slurmlite", timeout: float = 60.0
    ) -> None:
        """``config``: anything with ``socket_path`` and ``cluster_name`` (a full
        ``slurmlite.config.Config`` will do)."""
        self.config = config
        self.prog = prog
        self._conn = _UnixConnection(config.socket_path, timeout)

    @classmethod
    def from_env(cls, prog: str, conf_path: str | None = None) -> ControllerClient:
        try:
            cfg = client_settings(conf_path)
        except (ConfigError, OSError) as e:
            raise SlurmError(errors.SLURMLITE_CONFIG_INVALID, str(e)) from None
        return cls(cfg, prog)

    # ------------------------------------------------------------ transport

    def request(
        self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None
    ) -> Any:
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
        for _attempt in (0, 1):
            reused = self._conn.connected
            try:
                status, raw = self._conn.request(method, path, data)
                break
            except (OSError, ValueError, IndexError):
                self._conn.close()
                # only a kept-alive connection the controller closed meanwhile is worth a
                # second try; anything else might have reached it (never submit twice)
                if not reused:
                    raise SlurmError(errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR) from None
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        if status >= 400:
            raise _error_from(status, payload)
        return payload

    def close(self) -> None:
        self._conn.close()

    # ---------------------------------------------------------------- calls

    def submit(self, req: Any) -> SubmitResult:
        """``req``: JobSubmit fields as a dict (or a ``JobSubmit``)."""
        return Record(self.request("POST", "/v1/jobs", _body(req)))  # type: ignore[return-value]

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
    if status == 422:
        return SlurmError(errors.SLURM_ERROR, f"request rejected by the controller: {payload}")
    return SlurmError(errors.SLURM_ERROR, f"controller answered HTTP {status}")
