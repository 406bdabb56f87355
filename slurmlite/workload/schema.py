"""The workload file's keys: one table, read by validation, overrides and the docs.

A workload file (``slurmlite run --file train.yaml``) is the file format of
the managed AI runtimes (spec/clients.md §7) plus a few keys of slurmlite's
own.  Each key has a *kind* that says what its value must be:

==========  ==============================================================
``str``     text (a number or a boolean written bare is taken as its text)
``int``     a whole number, at least ``low``
``choice``  one of ``choices`` (exact spelling)
``map``     a mapping of the keys listed under it
``strmap``  a mapping of variable names to text (``env_variables``,
            ``secrets``)
``strlist`` a list of texts
``deps``    a list of pip requirement lines, or the path of a requirements
            file inside the snapshot
``any``     anything YAML can say (``parameters``: kept, not interpreted)
``refused`` known, but not supported here: the file is refused with ``why``
==========  ==============================================================

Example: ``compute.num_accelerators`` is ``Key("int", required=True, low=1)``;
``--override compute.num_accelerators=8`` is typed by it (``8``, not ``"8"``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_MAX_RETRIES", "NAME_CHARS", "PRIORITY_CLASSES", "RESERVED", "SCHEMA", "Key"]


@dataclass(frozen=True)
class Key:
    kind: str
    required: bool = False
    low: int | None = None
    max_len: int | None = None
    choices: tuple[str, ...] = ()
    why: str = ""


PRIORITY_CLASSES = ("BEST_EFFORT", "NORMAL", "CRITICAL")
DEFAULT_MAX_RETRIES = 3  # the managed runtimes' default when max_retries is unset
NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"

# variables every run gets from slurmlite: env_variables and secrets may not set them
RESERVED = (
    "NUM_NODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE",
    "CODE_SOURCE_PATH", "RUN_ID", "ATTEMPT", "MLFLOW_RUN_ID",
)  # fmt: skip

_NO_CONTAINERS = (
    "containers are not supported yet: use environment.dependencies (a virtual environment "
    "built on each node)"
)

SCHEMA: dict[str, Key] = {
    "experiment_name": Key("str", required=True, max_len=100),
    "command": Key("str", required=True),
    "compute": Key("map", required=True),
    "compute.accelerator_type": Key("str", required=True),
    "compute.num_accelerators": Key("int", required=True, low=1),
    "compute.priority_class": Key("choice", choices=PRIORITY_CLASSES),
    "compute.pool_id": Key("str"),  # the managed runtimes' capacity pool: a partition here
    "partition": Key("str"),
    "environment": Key("map"),
    "environment.version": Key("str"),
    "environment.dependencies": Key("deps"),
    "environment.docker_image": Key("refused", why=_NO_CONTAINERS),
    "code_source": Key("map"),
    "code_source.type": Key("choice", required=True, choices=("snapshot",)),
    "code_source.snapshot": Key("map", required=True),
    "code_source.snapshot.root_path": Key("str", required=True),
    "code_source.snapshot.include_paths": Key("strlist"),
    "code_source.snapshot.git": Key(
        "refused", why="git checkouts are not supported yet: snapshot a folder (root_path)"
    ),
    "code_source.snapshot.remote_volume": Key(
        "refused", why="remote volumes are not supported: snapshot a local folder (root_path)"
    ),
    "env_variables": Key("strmap"),
    "secrets": Key("strmap"),
    "timeout_minutes": Key("int", low=1),
    "max_retries": Key("int", low=0),
    "idempotency_token": Key("str", max_len=64),
    "parameters": Key("any"),
    "mlflow_run_name": Key("str"),
    "mlflow_experiment_directory": Key("str"),
    "permissions": Key("refused", why="permissions are not supported: a run is its owner's"),
    "usage_policy_name": Key("refused", why="usage policies are not supported"),
    "usage_policy_id": Key("refused", why="usage policies are not supported"),
}
