"""Reading a node's log of a run from its agent, with a request the controller signs.

The user asks the controller (their own authentication; ``routes_runs``
checks they own the run or are an operator), the controller asks the agent
of the node that ran the attempt: ``POST /v1/logs`` ``{"job_id", "attempt",
"uid", "offset", "limit"}``, signed with that node's to-node key like every
order, so an agent answers nobody else.  The agent reads
``<SlurmdSpoolDir>/logs/job<ID>/attempt<N>.log`` only if the run's user owns
it (``agent.runlogs``) and answers a chunk of it as text.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from controller.nodes.agent_client import AgentAddress, Signer
from slurmlite import errors
from slurmlite.errors import SlurmError

__all__ = ["AgentLogs"]


class AgentLogs:
    def __init__(self, signer: Signer, timeout: float = 10.0) -> None:
        self._signer = signer
        self._http: httpx.AsyncClient | None = None
        self._timeout = timeout

    async def read(self, to: AgentAddress, ask: dict[str, Any]) -> dict[str, Any]:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self._timeout)
        body = json.dumps(ask).encode()
        headers = self._signer.headers(to.node, "POST", "/v1/logs", body, time.time())
        headers["content-type"] = "application/json"
        try:
            r = await self._http.post(to.url + "/v1/logs", content=body, headers=headers)
        except httpx.HTTPError as e:
            raise SlurmError(
                errors.SLURMLITE_RUN_REFUSED, f"node {to.node} unreachable for its log: {e}"
            ) from None
        if r.status_code != 200:
            raise SlurmError(
                errors.SLURMLITE_RUN_REFUSED, f"node {to.node} refused the log: {r.text[:200]}"
            )
        return r.json()  # type: ignore[no-any-return]

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
