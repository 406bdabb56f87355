"""A workload file -> a checked :class:`Workload`, every problem named by key and line.

``load(text, label, overrides)`` parses the YAML (keeping the line of every
key), applies the ``--override key=value`` words to the parsed mapping
(typed by ``slurmlite.workload.schema``), then checks everything it can
without the cluster: unknown keys (with the closest known one), kinds,
ranges, the accelerator type's form, the total GPUs a multiple of those per
node, variable names, the secrets' form.  It raises :class:`WorkloadError`
with *all* the problems found, each a line such as::

    train.yaml:7: compute.num_acelerators: unknown key (did you mean num_accelerators?)
    --override compute.num_accelerators=x: not a whole number

What needs the cluster (a GPU type or count no node has, a priority class
without a QOS) is checked when translating (``slurmlite.workload.translate``);
what needs the disk (the root path, the snapshot's size) when packing
(``slurmlite.workload.snapshot``).  Never a traceback: a file YAML cannot
read is one problem with YAML's own line.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from slurmlite.workload.schema import DEFAULT_MAX_RETRIES, NAME_CHARS, RESERVED, SCHEMA, Key

__all__ = ["OVERRIDE", "Workload", "WorkloadError", "load", "parse_accelerator"]

OVERRIDE = "--override"
_ACCEL = re.compile(r"GPU_([0-9]+)x([A-Za-z0-9_.-]*)")
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_COMMAND_LINES = 1000


class WorkloadError(Exception):
    """The file cannot run: ``problems`` are complete lines, in file order."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class Workload:
    """A checked workload file (the keys' values; absent ones at their defaults)."""

    experiment_name: str
    command: str
    gpus_per_node: int
    gpu_type: str  # "" = any type
    num_accelerators: int
    priority_class: str | None = None
    partition: str | None = None
    environment_version: str | None = None
    dependencies: list[str] | str = field(default_factory=list)
    root_path: str | None = None
    include_paths: list[str] = field(default_factory=list)
    env_variables: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    timeout_minutes: int | None = None
    max_retries: int = DEFAULT_MAX_RETRIES
    idempotency_token: str | None = None
    parameters: Any = None
    mlflow_run_name: str | None = None
    data: dict[str, Any] = field(default_factory=dict)  # the file as checked, overrides applied

    @property
    def nodes(self) -> int:
        return self.num_accelerators // self.gpus_per_node


def parse_accelerator(text: str) -> tuple[int, str] | None:
    """``GPU_8xH100`` -> (8, "H100"); ``GPU_2x`` -> (2, "") (any type); None if malformed."""
    m = _ACCEL.fullmatch(text)
    if m is None or int(m.group(1)) < 1:
        return None
    return int(m.group(1)), m.group(2)


# ---------------------------------------------------------------- reading


def _read(text: str, label: str) -> tuple[Any, dict[str, int]]:
    """The YAML's value and the line (1-based) of every dotted key in it."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{label}:{mark.line + 1}" if mark is not None else label
        problem = getattr(e, "problem", None) or str(e)
        raise WorkloadError([f"{where}: not valid YAML: {problem}"]) from None
    if node is None:
        raise WorkloadError([f"{label}: the file is empty"])
    lines: dict[str, int] = {}
    dupes: list[str] = []
    builder = yaml.constructor.SafeConstructor()

    def walk(n: yaml.Node, path: str) -> Any:
        if isinstance(n, yaml.MappingNode):
            out: dict[str, Any] = {}
            for k, v in n.value:
                key = str(builder.construct_object(k, deep=True))
                dotted = f"{path}.{key}" if path else key
                if key in out:
                    dupes.append(f"{label}:{k.start_mark.line + 1}: {dotted}: given twice")
                lines[dotted] = k.start_mark.line + 1
                out[key] = walk(v, dotted)
            return out
        if isinstance(n, yaml.SequenceNode):
            return [walk(v, path) for v in n.value]
        return builder.construct_object(n, deep=True)

    try:
        value = walk(node, "")
    except yaml.YAMLError as e:
        raise WorkloadError([f"{label}: not valid YAML: {e}"]) from None
    if dupes:
        raise WorkloadError(dupes)
    return value, lines


# -------------------------------------------------------------- overrides


def _key_of(dotted: str) -> tuple[str, Key] | None:
    """The schema key a dotted override names (``env_variables.LR`` -> env_variables)."""
    if dotted in SCHEMA:
        return dotted, SCHEMA[dotted]
    head, _, _ = dotted.rpartition(".")
    while head:
        key = SCHEMA.get(head)
        if key is not None and key.kind in ("strmap", "any"):
            return head, key
        head, _, _ = head.rpartition(".")
    return None


def _typed(word: str, key: Key, whole: bool) -> Any:
    """An override's text as the value its key takes (``whole``: the key itself, not an
    entry of a mapping); ValueError with the reason if it cannot be."""
    if not whole:
        return word if key.kind == "strmap" else yaml.safe_load(word)
    if key.kind == "int":
        if not re.fullmatch(r"-?[0-9]+", word.strip()):
            raise ValueError("not a whole number")
        return int(word)
    if key.kind in ("strlist", "deps", "any", "map", "strmap"):
        value = yaml.safe_load(word) if word.strip() else ""
        if key.kind == "strlist" and isinstance(value, str):
            return [value]
        return value
    return word


def apply_overrides(data: dict[str, Any], words: list[str], lines: dict[str, int]) -> list[str]:
    """Set each ``key=value`` in ``data`` (lines: "--override"); the problems found."""
    problems = []
    for word in words:
        dotted, eq, value = word.partition("=")
        dotted = dotted.strip()
        found = _key_of(dotted) if eq else None
        if not eq:
            problems.append(f"{OVERRIDE} {word}: expected KEY=VALUE")
            continue
        if found is None:
            hint = _hint(dotted.rpartition(".")[2], _siblings(dotted.rpartition(".")[0]))
            problems.append(f"{OVERRIDE} {word}: unknown key {dotted}{hint}")
            continue
        try:
            typed = _typed(value, found[1], found[0] == dotted)
        except (ValueError, yaml.YAMLError) as e:
            problems.append(f"{OVERRIDE} {word}: {e}")
            continue
        where = data
        parts = dotted.split(".")
        for part in parts[:-1]:
            if not isinstance(where.get(part), dict):
                where[part] = {}
            where = where[part]
        where[parts[-1]] = typed
        lines[dotted] = 0
    return problems


# ------------------------------------------------------------- validation


def _siblings(parent: str) -> list[str]:
    prefix = f"{parent}." if parent else ""
    return [
        k[len(prefix) :] for k in SCHEMA if k.startswith(prefix) and "." not in k[len(prefix) :]
    ]


def _hint(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


class _Checker:
    def __init__(self, label: str, lines: dict[str, int]) -> None:
        self.label = label
        self.lines = lines
        self.problems: list[tuple[int, str]] = []

    def where(self, dotted: str) -> str:
        line = self.lines.get(dotted)
        if line is None:  # a missing key: the line of the mapping that should hold it
            parent = dotted.rpartition(".")[0]
            line = self.lines.get(parent) if parent else None
        if line == 0:
            return OVERRIDE
        return f"{self.label}:{line}" if line else self.label

    def bad(self, dotted: str, text: str) -> None:
        order = self.lines.get(dotted, 10**9)  # file order; overrides (0) first, missing last
        self.problems.append((order, f"{self.where(dotted)}: {dotted}: {text}"))

    def mapping(self, value: Any, path: str) -> dict[str, Any]:
        """Check a mapping's keys against the schema; recurse into known ones."""
        out: dict[str, Any] = {}
        names = _siblings(path)
        for name, sub in value.items():
            dotted = f"{path}.{name}" if path else name
            key = SCHEMA.get(dotted)
            if key is None:
                self.bad(dotted, f"unknown key{_hint(name, names)}")
                continue
            checked = self.value(sub, dotted, key)
            if checked is not None:
                out[name] = checked
        for name in names:
            dotted = f"{path}.{name}" if path else name
            if SCHEMA[dotted].required and name not in value:
                self.bad(dotted, "required key missing")
        return out

    def value(self, v: Any, dotted: str, key: Key) -> Any:  # noqa: C901 - one branch per kind
        kind = key.kind
        if kind == "refused":
            self.bad(dotted, key.why)
            return None
        if kind == "map":
            if not isinstance(v, dict):
                self.bad(dotted, f"must be a mapping of keys, not {_shown(v)}")
                return None
            return self.mapping(v, dotted)
        if kind == "any":
            return v
        if kind == "int":
            if isinstance(v, bool) or not isinstance(v, int):
                self.bad(dotted, f"must be a whole number, not {_shown(v)}")
                return None
            if key.low is not None and v < key.low:
                self.bad(dotted, f"must be at least {key.low}, not {v}")
                return None
            return v
        if kind == "strlist":
            if not isinstance(v, list) or not all(_scalar(x) for x in v):
                self.bad(dotted, f"must be a list of texts, not {_shown(v)}")
                return None
            return [str(x) for x in v]
        if kind == "deps":
            if isinstance(v, str):
                return v
            if not isinstance(v, list) or not all(_scalar(x) for x in v):
                self.bad(dotted, "must be a list of pip requirements or a requirements file")
                return None
            return [str(x) for x in v]
        if kind == "strmap":
            if not isinstance(v, dict):
                self.bad(dotted, f"must be a mapping of NAME: value, not {_shown(v)}")
                return None
            out = {}
            for name, sub in v.items():
                entry = f"{dotted}.{name}"
                if not _VAR.fullmatch(name):
                    self.bad(entry, "not a variable name (letters, digits, _)")
                elif name in RESERVED or name.startswith(("SLURM_", "SLURMLITE_")):
                    self.bad(entry, "set by slurmlite for every run; choose another name")
                elif not _scalar(sub) or sub is None:
                    self.bad(entry, f"must be a text, not {_shown(sub)}")
                else:
                    out[name] = _text(sub)
            return out
        if not _scalar(v) or v is None:
            self.bad(dotted, f"must be a text, not {_shown(v)}")
            return None
        text = _text(v)
        if kind == "choice" and text not in key.choices:
            self.bad(dotted, f"must be one of {', '.join(key.choices)}, not {text!r}")
            return None
        if key.max_len is not None and len(text) > key.max_len:
            self.bad(dotted, f"at most {key.max_len} characters, not {len(text)}")
            return None
        return text


def _scalar(v: Any) -> bool:
    return not isinstance(v, dict | list)


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _shown(v: Any) -> str:
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    if v is None:
        return "nothing"
    return repr(v) if isinstance(v, str) else str(v)


def load(text: str, label: str = "workload", overrides: list[str] | None = None) -> Workload:
    """The checked workload of ``text`` (``label`` names it in messages) with ``overrides``."""
    data, lines = _read(text, label)
    if not isinstance(data, dict):
        raise WorkloadError([f"{label}: must be a mapping of keys (experiment_name: ...)"])
    early = apply_overrides(data, overrides or [], lines)
    check = _Checker(label, lines)
    clean = check.mapping(data, "")
    _semantics(clean, check)
    problems = early + [text for _, text in sorted(check.problems, key=lambda p: p[0])]
    if problems:
        raise WorkloadError(problems)
    compute = clean["compute"]
    per_node, gpu_type = parse_accelerator(compute["accelerator_type"])  # type: ignore[misc]
    env = clean.get("environment", {})
    snap = clean.get("code_source", {}).get("snapshot", {})
    return Workload(
        experiment_name=clean["experiment_name"],
        command=clean["command"],
        gpus_per_node=per_node,
        gpu_type=gpu_type,
        num_accelerators=compute["num_accelerators"],
        priority_class=compute.get("priority_class"),
        partition=clean.get("partition") or compute.get("pool_id"),
        environment_version=env.get("version"),
        dependencies=env.get("dependencies", []),
        root_path=snap.get("root_path"),
        include_paths=snap.get("include_paths", []),
        env_variables=clean.get("env_variables", {}),
        secrets=clean.get("secrets", {}),
        timeout_minutes=clean.get("timeout_minutes"),
        max_retries=clean.get("max_retries", DEFAULT_MAX_RETRIES),
        idempotency_token=clean.get("idempotency_token"),
        parameters=clean.get("parameters"),
        mlflow_run_name=clean.get("mlflow_run_name"),
        data=data,
    )


def _semantics(clean: dict[str, Any], check: _Checker) -> None:
    """The checks that tie keys together or look inside a text."""
    name = clean.get("experiment_name")
    if name is not None and (not name or any(c not in NAME_CHARS for c in name)):
        check.bad("experiment_name", "only letters, digits, _ and - (at most 100)")
    command = clean.get("command")
    if command is not None:
        if not command.strip():
            check.bad("command", "must not be empty")
        elif command.count("\n") + 1 > MAX_COMMAND_LINES:
            check.bad("command", f"at most {MAX_COMMAND_LINES} lines")
    compute = clean.get("compute", {})
    accel = compute.get("accelerator_type")
    parsed = parse_accelerator(accel) if accel is not None else None
    if accel is not None and parsed is None:
        check.bad(
            "compute.accelerator_type",
            f"must be GPU_<GPUs per node>x<type>, e.g. GPU_8xH100 or GPU_1x (any type), not {accel!r}",
        )
    total = compute.get("num_accelerators")
    if parsed is not None and total is not None and total % parsed[0]:
        check.bad(
            "compute.num_accelerators",
            f"{total} is not a multiple of the {parsed[0]} GPUs per node of {accel}",
        )
    env = clean.get("environment", {})
    if "version" in env and not isinstance(env.get("dependencies", []), list):
        check.bad("environment.version", "only with an inline list of dependencies")
    secrets, variables = clean.get("secrets", {}), clean.get("env_variables", {})
    for both in sorted(set(secrets) & set(variables)):
        check.bad(f"secrets.{both}", "also set in env_variables; a name is one or the other")
    for var, secret in secrets.items():
        if not re.fullmatch(r"[A-Za-z0-9_.\-/]{1,128}", secret):
            check.bad(f"secrets.{var}", f"not a secret name: {secret!r}")
