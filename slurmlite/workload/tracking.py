"""MLflow tracking of workload runs, when ``mlflow`` is installed and ``MLFLOW_TRACKING_URI`` set.

* ``slurmlite run`` creates the MLflow run before submitting (``create``): in
  the experiment named ``experiment_name``, named ``mlflow_run_name`` (or the
  experiment's name), with every key of the workload file as a parameter
  (``compute.num_accelerators`` = ``16``...) and the slurmlite run id as the
  tag ``slurmlite.run_id``.  Its id is stored with the run (``get run``
  shows it) and handed to every node's process as ``MLFLOW_RUN_ID``, so a
  ``mlflow.start_run()`` in the command logs into the same run.
* ``slurmlite node-run`` on node 0 tags each attempt (``attempt.<N>``:
  ``RUNNING on n1,n2``, then ``COMPLETED``, ``FAILED exit 3`` or ``STOPPED``),
  uploads node 0's log of the attempt as the artifact
  ``logs/attempt<N>.log`` and, when the attempt is the run's last, ends the
  MLflow run ``FINISHED``, ``FAILED`` or ``KILLED``.

Tracking never stops a run: an MLflow server that does not answer is a
warning on stderr (the command's log on the nodes).  Without ``mlflow`` or
without the variable nothing here runs; ``MLFLOW_TRACKING_URI`` set without
``mlflow`` installed is a warning at ``slurmlite run``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["attempt_ended", "attempt_started", "create", "discard", "flat_params"]

MAX_PARAM = 500  # characters of a parameter's value kept (MLflow's limit is higher)


def _client() -> Any:
    if not os.environ.get("MLFLOW_TRACKING_URI"):
        return None
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        return None
    return MlflowClient()


def _warn(what: str, e: Exception) -> None:
    print(f"slurmlite: warning: MLflow {what}: {e}", file=sys.stderr, flush=True)


def flat_params(data: Any, prefix: str = "") -> dict[str, str]:
    """``{"compute": {"num_accelerators": 16}}`` -> ``{"compute.num_accelerators": "16"}``."""
    out: dict[str, str] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            out.update(flat_params(v, f"{prefix}.{k}" if prefix else str(k)))
    else:
        out[prefix] = str(data)[:MAX_PARAM]
    return out


def create(experiment: str, run_name: str, data: dict[str, Any]) -> str | None:
    """A new MLflow run for a workload (module doc); its id, or None without tracking."""
    client = _client()
    if client is None:
        if os.environ.get("MLFLOW_TRACKING_URI"):
            print("slurmlite: warning: MLFLOW_TRACKING_URI is set but mlflow is not installed: "
                  "no MLflow run", file=sys.stderr)  # fmt: skip
        return None
    try:
        found = client.get_experiment_by_name(experiment)
        exp_id = found.experiment_id if found else client.create_experiment(experiment)
        run = client.create_run(exp_id, run_name=run_name)
        for key, value in sorted(flat_params(data).items()):
            client.log_param(run.info.run_id, key, value)
        return str(run.info.run_id)
    except Exception as e:  # a tracking server down must not stop the run
        _warn("run not created", e)
        return None


def tag_run_id(mlflow_run: str, run_id: int) -> None:
    client = _client()
    if client is not None:
        try:
            client.set_tag(mlflow_run, "slurmlite.run_id", str(run_id))
        except Exception as e:
            _warn("tag not set", e)


def discard(mlflow_run: str) -> None:
    """The MLflow run of a submission that made no run (a repeated key, a refusal)."""
    client = _client()
    if client is not None:
        try:
            client.delete_run(mlflow_run)
        except Exception as e:
            _warn("run not deleted", e)


def attempt_started(mlflow_run: str, attempt: int, nodes: str) -> None:
    client = _client()
    if client is not None:
        try:
            client.set_tag(mlflow_run, f"attempt.{attempt}", f"RUNNING on {nodes}")
        except Exception as e:
            _warn("attempt not tagged", e)


def attempt_ended(mlflow_run: str, attempt: int, how: str, log: str | None, last: bool) -> None:
    """Tag the attempt with ``how`` (COMPLETED, FAILED exit N, STOPPED), upload node 0's
    log, and end the MLflow run if this attempt was the run's ``last``."""
    client = _client()
    if client is None:
        return
    try:
        client.set_tag(mlflow_run, f"attempt.{attempt}", how)
        if log and os.path.isfile(log):
            client.log_artifact(mlflow_run, log, "logs")
        if last:
            status = {"COMPLETED": "FINISHED", "STOPPED": "KILLED"}.get(how, "FAILED")
            client.set_terminated(mlflow_run, status)
    except Exception as e:
        _warn("attempt not recorded", e)
