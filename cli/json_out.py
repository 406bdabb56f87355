"""``--json`` output: the envelope every command shares and Slurm's way of writing JSON.

Slurm 22.05's commands dump their records through the REST API's
``openapi/v0.0.38`` plugin (squeue, sinfo, scontrol) or ``openapi/dbv0.0.38``
(sacct, which reads the accounting store).  Every document has the same
envelope, then one list named for what it holds::

    {
      "meta": {
        "plugin": {"type": "openapi\\/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
        "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"}
      },
      "errors": [
      ],
      "jobs": [ ... ]
    }

Slurm's serializer (``src/serializer/json``, json-c underneath) writes it in
a style :func:`dumps` reproduces byte for byte, so that a diff against real
output shows only data: two-space indentation, ``"key": value``, an empty
list or object as its brackets on two lines (``[`` then ``]`` at the key's
indentation), ``/`` escaped as ``\\/``, and no newline after the closing
brace.  Worked example: ``{"a": [], "b": "x/y"}`` is written as::

    {
      "a": [
      ],
      "b": "x\\/y"
    }

Python's ``json.dumps`` does the scalars (strings, numbers, ``null``,
``true``); a float stays a float (``billable_tres: 1.0``).
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:
    from typing import Any, TextIO

PLUGINS = {
    "slurm": ("openapi/v0.0.38", "Slurm OpenAPI v0.0.38"),  # squeue, sinfo, scontrol
    "slurmdb": ("openapi/dbv0.0.38", "Slurm OpenAPI DB v0.0.38"),  # sacct
}


def meta(plugin: str) -> dict[str, Any]:
    """The ``meta`` block: which data_parser plugin wrote the document, and which Slurm."""
    from slurmlite.config import SLURM_VERSION  # late: slurmlite.config costs scontrol ~10 ms

    kind, name = PLUGINS[plugin]
    major, minor, micro = (int(x) for x in SLURM_VERSION.split("."))
    return {
        "plugin": {"type": kind, "name": name},
        "Slurm": {
            "version": {"major": major, "micro": micro, "minor": minor},
            "release": SLURM_VERSION,
        },
    }


def document(plugin: str, **lists: list[Any]) -> dict[str, Any]:
    """``meta``, an empty ``errors`` list, then the named lists in the order given."""
    return {"meta": meta(plugin), "errors": [], **lists}


def dumps(value: Any, indent: int = 0) -> str:
    """``value`` in Slurm's JSON layout (see the module docstring)."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return "{\n" + pad + "}"
        inner = ",\n".join(
            f"{pad}  {_scalar(str(k))}: {dumps(v, indent + 2)}" for k, v in value.items()
        )
        return "{\n" + inner + "\n" + pad + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[\n" + pad + "]"
        inner = ",\n".join(f"{pad}  {dumps(v, indent + 2)}" for v in value)
        return "[\n" + inner + "\n" + pad + "]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False).replace("/", "\\/")


def write(doc: dict[str, Any], out: TextIO | None = None) -> None:
    """Print a document as Slurm does: no newline after the last brace."""
    stream = out or sys.stdout
    stream.write(dumps(doc))
    stream.flush()


def epoch(t: float | None) -> int:
    """A time as Slurm's JSON has it: whole Unix seconds, 0 for none."""
    return int(t) if t else 0
