"""Compare a ``--json`` document with a golden capture by shape: keys, nesting, value types.

The values of two clusters' documents differ (ids, times, hosts), so the
comparison is structural, record by record:

* the top level has the same keys in the same order, and ``meta`` is equal
  (plugin, Slurm version -- those must be exact);
* each of our records (a job, a step...) has exactly the keys of a golden
  record of its list, in the same order, *with the optional ones*: a key
  that only some golden records have (``job_resources``: only jobs that held
  nodes) may be missing from ours, never added;
* each value has a type one of the golden records has for that key
  (``array_task_id`` is ``null`` or a number; ``billable_tres`` ``null`` or
  a float), recursively for objects and lists of objects.  Integers and
  floats are different types, as Slurm keeps them apart.

Worked example: golden ``{"jobs": [{"a": 1, "b": null}, {"a": 2, "b": 3.0}]}``
accepts ``{"jobs": [{"a": 5, "b": 1.5}]}`` but reports ``jobs[0].b: str``
for ``"b": "x"`` and ``jobs[0]: keys [...]`` for a record with an extra key.

A golden file (``golden/slurm-22.05``) holds the command line, then the
document, with Slurm's ``[exit N]`` straight after the closing brace (the
JSON has no newline of its own).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def load_golden(path: Path) -> tuple[str, dict[str, Any], str, int]:
    """(command, document, raw document text, exit code) of a golden ``--json`` capture."""
    first, _, rest = path.read_text().partition("\n")
    m = re.search(r"\[exit (\d+)\]\s*$", rest)
    assert m, f"{path.name}: no [exit N] line"
    text = rest[: m.start()]
    return first[2:], json.loads(text), text, int(m.group(1))


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    return "object"


@dataclass
class Shape:
    """What the golden's records of one list allow: key order, keys, types, sub-shapes."""

    order: list[str] = field(default_factory=list)  # the longest key sequence seen
    always: set[str] | None = None  # keys every golden record has
    types: dict[str, set[str]] = field(default_factory=dict)
    subs: dict[str, Shape] = field(default_factory=dict)  # object or list-of-object values

    def learn(self, record: dict[str, Any]) -> None:
        if len(record) > len(self.order):
            self.order = list(record)
        keys = set(record)
        self.always = keys if self.always is None else self.always & keys
        for key, value in record.items():
            self.types.setdefault(key, set()).add(kind(value))
            for item in _objects(value):
                self.subs.setdefault(key, Shape()).learn(item)


def _objects(value: Any) -> list[dict[str, Any]]:
    """The objects ``value`` holds: itself, or the objects of a list.  An object whose
    keys are data (``sockets`` by number) is compared as free-form: none returned."""
    if isinstance(value, dict):
        return [] if any(k.isdigit() for k in value) else [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []


def learn(records: list[dict[str, Any]]) -> Shape:
    shape = Shape()
    for record in records:
        shape.learn(record)
    return shape


def record_differences(shape: Shape, record: dict[str, Any], where: str) -> list[str]:
    diffs = []
    expected = [k for k in shape.order if k in record or k in (shape.always or set())]
    if list(record) != expected:
        extra = [k for k in record if k not in shape.order]
        missing = [k for k in expected if k not in record]
        diffs.append(f"{where}: keys differ (extra {extra}, missing {missing}, or order)")
    for key, value in record.items():
        allowed = shape.types.get(key)
        if allowed is not None and kind(value) not in allowed:
            diffs.append(f"{where}.{key}: {kind(value)}, golden {sorted(allowed)}")
        sub = shape.subs.get(key)
        if sub is not None:
            for i, item in enumerate(_objects(value)):
                diffs += record_differences(sub, item, f"{where}.{key}[{i}]")
    return diffs


def document_differences(golden: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    """Every way ``ours`` departs from the golden document's shape (empty: same shape)."""
    diffs = []
    if list(ours) != list(golden):
        diffs.append(f"top-level keys {list(ours)}, golden {list(golden)}")
    if ours.get("meta") != golden.get("meta"):
        diffs.append(f"meta {ours.get('meta')}, golden {golden.get('meta')}")
    for key, value in golden.items():
        if key == "meta" or not isinstance(value, list):
            continue
        shape = learn([v for v in value if isinstance(v, dict)])
        for i, record in enumerate(ours.get(key) or []):
            diffs += record_differences(shape, record, f"{key}[{i}]")
    return diffs
