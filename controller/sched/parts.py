"""The narrow set of things a scheduling pass and the loop use.

``SchedParts`` is built once by ``controller.context.Controller`` and handed to
``SchedulerLoop`` and ``controller.sched.apply.schedule``: the store, the node
service (liveness, reconciliation, node facts for the snapshot), the priority
service (the PriorityCalcPeriod recalculation), the signer of launch and
signal orders, the clock, and the configuration in force.  Only the last
three fields change, on ``scontrol reconfigure`` (``Controller.reconfigure``
replaces them here, the one place the loop reads them from).

Nothing here reaches back into the controller object: a test can build the
parts from a temporary store, a fake clock and a recording agent client.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from controller.accounting.priorities import PriorityService
    from controller.nodes.agent_client import Signer
    from controller.nodes.service import NodeService
    from controller.store.db import Database
    from slurmlite.config import Config
    from slurmlite.scheduler.snapshot import Plan, Policy, Snapshot


@dataclass
class SchedParts:
    db: Database
    nodes: NodeService
    priorities: PriorityService
    signer: Signer
    clock: Callable[[], float]
    cfg: Config  # replaced on reconfigure, with the two below
    policy: Policy
    full_pass: Callable[[Snapshot, Policy], Plan]  # the SchedulerType's pass (the registry's)
