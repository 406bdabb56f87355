"""The controller's side of an agent's checks, for tests: signed orders and signed requests.

They mirror ``controller.nodes.agent_client.Signer`` (a test in test_orders.py checks
that both sign alike), with knobs to forge: another key, another node, an
expiry in the past.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import httpx

from slurmlite.credential import (
    canonical_body,
    node_key,
    orders_key,
    sign_credential,
    sign_request,
    to_node_key,
)
from slurmlite.protocol import LaunchSpec, NoteSpec, SignalSpec, StepLaunch, TailSpec, to_dict

CLUSTER_KEY = b"k" * 64  # tests.agent.test_supervision.agent_state's cluster key
NODE = "n1"  # and its node name


def signed(
    spec: LaunchSpec | SignalSpec | StepLaunch | NoteSpec | TailSpec,
    node: str = NODE,
    cluster_key: bytes = CLUSTER_KEY,
    now: float | None = None,
    ttl: float = 60,
    **claims: Any,
) -> dict[str, Any]:
    """The order's body with a credential as the controller makes it for ``node``.

    A ``StepLaunch`` is signed as the controller signs a step's order for one
    node (op ``step``; its ``step`` claim is the step's number)."""
    body = to_dict(spec)
    if isinstance(spec, LaunchSpec):
        op = "launch"
    elif isinstance(spec, StepLaunch):
        op = "step"
    elif isinstance(spec, NoteSpec):
        op = "note"
    elif isinstance(spec, TailSpec):
        op = "tail"
    else:
        op = "terminate" if spec.signal is None else "signal"
    uid = getattr(spec, "uid", 0)
    gid = getattr(spec, "gid", 0)
    made = {
        "op": op,
        "job": spec.job_id,
        "step": body.get("step_id", "batch"),
        "restarts": spec.restarts,
        "uid": uid,
        "gid": gid,
        "node": node,
        "nodes": [node],
        "script_sha256": hashlib.sha256(body.get("script", "").encode()).hexdigest(),
        "body": hashlib.sha256(canonical_body(body)).hexdigest(),
        "epoch": 0,  # what Signer signs without a lease; agent.fencing
        "store": "",
        **claims,
    }
    key = orders_key(node_key(cluster_key, node))
    body["credential"] = sign_credential(key, made, now=now or time.time(), ttl=ttl)
    return body


def request_headers(
    path: str,
    body: bytes,
    node: str = NODE,
    cluster_key: bytes = CLUSTER_KEY,
    now: float | None = None,
) -> dict[str, str]:
    key = to_node_key(node_key(cluster_key, node))
    headers = sign_request(key, node, "POST", path, body, time.time() if now is None else now)
    headers["content-type"] = "application/json"
    return headers


async def post(
    client: httpx.AsyncClient, path: str, payload: dict[str, Any], **kw: Any
) -> httpx.Response:
    """POST ``payload`` in a request signed as the controller signs it (``kw``: node, key)."""
    body = json.dumps(payload).encode()
    return await client.post(path, content=body, headers=request_headers(path, body, **kw))
