"""``slurmlite run --file train.yaml``: a declarative workload, run as a batch job.

    slurmlite run --file F [--override KEY=VALUE]... [--dry-run] [--watch]
                  [--idempotency-key K]

1. reads and checks the file (``slurmlite.workload.spec``; every problem is a
   ``slurmlite: error: FILE:LINE: key: why`` line, exit 1);
2. checks it against the cluster's nodes and translates it into a batch
   script (``slurmlite.workload.translate``);
3. packs ``code_source.snapshot.root_path`` (relative paths from the file's
   folder) and uploads it unless the controller has it already
   (``slurmlite.workload.snapshot``, ``controller.runs.snapshots``);
4. submits the run (``POST /v1/runs``) and prints its id, which is its job id.

``--dry-run`` stops before anything is stored: it prints the job (nodes, GPUs
per node, time limit, the batch script) and the scheduler's answer to a
``--test-only`` of it.  ``--watch`` follows the run (``cli.slurmlite_watch``).
The same idempotency key twice (``--idempotency-key`` or the file's
``idempotency_token``) answers the first run's id.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import click

PROG = "slurmlite"


def _error(lines: list[str], code: int = 1) -> None:
    for line in lines:
        click.echo(f"{PROG}: error: {line}", err=True)
    sys.exit(code)


def _class_qos(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, _, qos = item.partition("=")
        if qos:
            out[name.strip().upper()] = qos.strip()
    return out


def _upload(client: Any, path: str, sha: str, size: int) -> bool:
    """Send the snapshot unless the controller has it from this user; True if sent."""
    state = client.request("GET", f"/v1/snapshots/{sha}")
    if state["stored"]:
        return False
    part = int(state["part"])
    offset = int(state["received"])
    if offset > size:
        offset = 0
    with open(path, "rb") as f:
        f.seek(offset)
        while offset < size:
            data = f.read(part)
            client.raw(
                "PUT", "/v1/snapshots/parts", data, {"sha": sha, "offset": offset}, retry=False
            )
            offset += len(data)
    client.request("POST", "/v1/snapshots/commit", {"sha": sha}, retry=True)
    return True


@click.command("run")
@click.option("--file", "-f", "path", required=True, type=click.Path(dir_okay=False))
@click.option("--override", "overrides", multiple=True, metavar="KEY=VALUE", help="Set a key.")
@click.option("--dry-run", is_flag=True, help="Check and translate; submit nothing.")
@click.option("--watch", is_flag=True, help="Follow the run until it ends.")
@click.option("--idempotency-key", default=None, help="The same key again returns the first run.")
def run(
    path: str, overrides: tuple[str, ...], dry_run: bool, watch: bool, idempotency_key: str | None
) -> None:
    """Run the workload of a YAML file (the managed AI runtimes' format) as a batch job."""
    from cli.client import ControllerClient
    from slurmlite.errors import SlurmError
    from slurmlite.workload.spec import WorkloadError, load

    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        _error([f"cannot read {path}: {getattr(e, 'strerror', None) or e}"])
    try:
        w = load(text, path, list(overrides))
    except WorkloadError as e:
        _error(e.problems)
    client = ControllerClient.from_env(PROG)
    try:
        _submit(client, w, path, dry_run, watch, idempotency_key or w.idempotency_token)
    except SlurmError as e:
        _error([f"{e.message}{': ' + e.detail if e.detail else ''}"])
    finally:
        client.close()


def _submit(client: Any, w: Any, path: str, dry_run: bool, watch: bool, key: str | None) -> None:
    from slurmlite.config import load_config
    from slurmlite.idempotency import KEY_HEADER, new_key
    from slurmlite.sbatch_request import build_submit
    from slurmlite.workload import tracking
    from slurmlite.workload.snapshot import SnapshotError, pack
    from slurmlite.workload.spec import WorkloadError
    from slurmlite.workload.translate import translate

    cfg = load_config(client.config.path)
    nodes = [(n.name, n.gres, list(n.partitions)) for n in client.get_nodes()]
    sha, size, tar_path = "", 0, None
    try:
        if w.root_path:
            root = Path(path).parent / os.path.expanduser(w.root_path)
            fd, tar_path = tempfile.mkstemp(prefix="slurmlite-snapshot-", suffix=".tar")
            with os.fdopen(fd, "wb") as out:
                sha, size, _files = pack(
                    str(root), w.include_paths, out, cfg.snapshot_max_mb << 20, w.root_path
                )
        job = translate(w, nodes, _class_qos(cfg.priority_class_qos), sha)
        cmd = build_submit(
            [], os.environ, os.getcwd(), lambda: job.script.encode(), socket.gethostname(), ""
        )
        assert cmd.fields is not None
        if dry_run:
            _dry_run(client, w, job, cmd.fields, sha, size)
            return
        if sha and tar_path:
            sent = _upload(client, tar_path, sha, size)
            how = f"{size} bytes uploaded" if sent else "unchanged, already on the controller"
            click.echo(f"{PROG}: code snapshot {sha[:12]}: {how}", err=True)
    except (WorkloadError, SnapshotError) as e:
        _error(e.problems if isinstance(e, WorkloadError) else [str(e)])
    finally:
        if tar_path:
            os.unlink(tar_path)
    mlflow_run = tracking.create(w.experiment_name, w.mlflow_run_name or w.experiment_name, w.data)
    run = {
        "mlflow_run_id": mlflow_run,
        "name": w.experiment_name,
        "spec": w.data,
        "idempotency_key": key,
        "snapshot": sha or None,
        "secrets": w.secrets,
        "max_retries": w.max_retries,
    }
    try:
        answer = client.request(
            "POST", "/v1/runs", {"job": cmd.fields, "run": run}, None, {KEY_HEADER: new_key()}, True
        )
    except BaseException:
        if mlflow_run:
            tracking.discard(mlflow_run)
        raise
    run_id = int(answer["run_id"])
    click.echo(str(run_id))
    if answer.get("existing"):
        click.echo(f"{PROG}: idempotency key {key!r} already made run {run_id}", err=True)
        if mlflow_run:
            tracking.discard(mlflow_run)
    elif mlflow_run:
        tracking.tag_run_id(mlflow_run, run_id)
    if watch:
        from cli.slurmlite_watch import watch_run

        sys.exit(watch_run(client, run_id))


def _dry_run(client: Any, w: Any, job: Any, fields: dict[str, Any], sha: str, size: int) -> None:
    from slurmlite.errors import SlurmError

    limit = f"{job.time_limit} min" if job.time_limit else "the partition's default"
    click.echo(f"Workload {w.experiment_name}: {job.nodes} node(s) x {job.gpus_per_node} GPU(s)")
    click.echo(f"  per node: --gres={job.gres}, one task; time limit: {limit}")
    if job.partition or job.qos:
        click.echo(f"  partition: {job.partition or '(default)'}; QOS: {job.qos or '(default)'}")
    retries = f"max_retries {w.max_retries} (node failures do not count)"
    click.echo(f"  retries: {retries}")
    if sha:
        click.echo(f"  code snapshot: {sha[:12]} ({size} bytes), not uploaded (dry run)")
    if w.secrets:
        click.echo(f"  secrets: {', '.join(f'{k} <- {v}' for k, v in w.secrets.items())}")
    click.echo("Batch script:")
    click.echo(job.script, nl=False)
    try:
        answer = client.submit({**fields, "test_only": True})
        click.echo(f"Scheduler: {answer.test_only_message}")
    except SlurmError as e:
        click.echo(f"Scheduler: it cannot run: {e.message}{': ' + e.detail if e.detail else ''}")
