"""``scontrol --json show job|node|partition``: the records of ``cli/json_*.py`` in one document.

``scontrol`` selects what to show exactly as for its text records (a job id,
``ID_TASK``, node names, a partition name; unknown ones are the same errors)
and hands the selection here; each function prints one v0.0.38 document
(``cli/json_out.py``) whose list may be empty, and returns None so that the
``show`` verb can ``return`` its result.  Slurm 22.05 accepts ``--json``
before the verb (``scontrol --json show job 5``); our getopt also finds it
after the words (``scontrol show job 5 --json``).  Other verbs ignore it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any


def jobs(views: Sequence[Any], client: Any) -> None:
    """Jobs (``None`` entries: array tasks ``show job ID_TASK`` did not ask for)."""
    from cli import json_out
    from cli.json_jobs import job_record

    cluster = client.config.cluster_name
    records = [job_record(v, cluster) for v in views if v is not None]
    json_out.write(json_out.document("slurm", jobs=records))


def nodes(found: Sequence[Any], layout: Callable[[Any], Any]) -> None:
    """Nodes; ``layout(node)``: (boards, sockets, cores, threads) from slurm.conf or None."""
    from cli import json_out
    from cli.json_nodes import node_record

    records = [node_record(n, layout(n)) for n in found]
    json_out.write(json_out.document("slurm", nodes=records))


def partitions(found: Sequence[Any]) -> None:
    from cli import json_out
    from cli.json_nodes import partition_record

    records = [partition_record(p) for p in found]
    json_out.write(json_out.document("slurm", partitions=records))
