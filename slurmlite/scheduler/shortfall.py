"""What a node lacks for a job: named shortfalls, the fit rules' own "no".

Node selection (``select.py``) decides with a handful of rules whether a
node can hold a job's share.  When a rule says no, it says it with a
``Shortfall``: on which node, which resource, how much the job wanted there
and how much the node has free and in all.  ``slurmlite explain``
(``explain_nodes.py``) turns these values into words; it never checks a rule
itself (DESIGN.md §4 rule 16: the filter counts its own rejections).

The resources, in the order the rules are checked (``select.node_shortfalls``):

============ ================================================ ===================
resource     the rule                                         fields
============ ================================================ ===================
``state``    the node is usable (not down, drained, ...)      —
``excluded`` ``--exclude`` does not name it                    —
``features`` it carries the ``--constraint`` features         ``asked``, ``have``
``gpu_type`` it has GPUs, of the ``--gres=gpu:TYPE`` asked    ``asked``, ``have``,
                                                              ``total``
``idle``     ``--exclusive``: nothing else runs on it         —
``cpus``     enough free CPUs                                 ``wanted``, ``free``,
                                                              ``total``
``memory``   enough free MiB (by the job's memory rule)       the same
``gpus``     enough free GPUs                                 the same
============ ================================================ ===================

Example: n1 (4 CPUs, 1 free) and a share of 2 CPUs ->
``Shortfall("n1", CPUS, wanted=2, free=1, total=4)``, which explain prints
as ``CPUs: needs 2, 1 of 4 free``.
"""

from __future__ import annotations

from typing import NamedTuple

STATE = "state"  # down, drained, not responding, completing or never registered
EXCLUDED = "excluded"  # named by --exclude
FEATURES = "features"  # lacks a feature --constraint asks for
GPU_TYPE = "gpu_type"  # no GPUs at all, or not of the type asked
IDLE = "idle"  # --exclusive and something else holds part of it
CPUS = "cpus"  # fewer free CPUs than the share
MEMORY = "memory"  # fewer free MiB than the share
GPUS = "gpus"  # fewer free GPUs than the share

RESOURCES = (STATE, EXCLUDED, FEATURES, GPU_TYPE, IDLE, CPUS, MEMORY, GPUS)


class Shortfall(NamedTuple):
    """One rule a node breaks for a job's share (see the module docstring).

    Amounts are CPUs, MiB or GPUs (the resource's unit); text fields are
    empty where the resource has none (``have=""``: no features, untyped GPUs).
    A named tuple rather than a dataclass: selection may make one for every
    node it turns down, and a tuple is the cheapest immutable value to build.
    """

    node: str
    resource: str  # one of RESOURCES
    wanted: int = 0  # what the share asks of this node
    free: int = 0  # what the node has free now
    total: int = 0  # what the node has in all
    asked: str = ""  # features / GPU type the job asks for
    have: str = ""  # features / GPU type the node has
