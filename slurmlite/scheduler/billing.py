"""What a job costs: TRES weight strings and the billing count.

Slurm measures a job in TRES ("trackable resources", spec §5.7): ``cpu``,
``mem`` (MiB), ``node``, ``gres/gpu`` (and ``gres/gpu:<type>``), ``license/<n>``
... A *weight string* gives some of them a weight::

    TRESBillingWeights="CPU=1.0,Mem=0.25G,GRES/gpu=8.0"    (a partition key)
    PriorityWeightTRES=CPU=1000,Mem=0,GRES/gpu=2000        (a global key)

Parsing rules (:func:`parse_tres_weights`): items are ``name=number[unit]``
separated by commas; names are case-insensitive (``CPU`` is ``cpu``); a unit
letter K, M, G, T or P means "per that many": memory is counted in MiB, so
``Mem=0.25G`` is 0.25 per GiB = 0.25/1024 per MiB; for a count TRES such as
``cpu`` each letter is a factor of 1024 (``K`` = per 1024 CPUs).

Billing (:func:`billing`) is what fair-share charges per second of run time
(spec §3.1).  With no weights at all it is simply the job's CPU count.  With
weights it is the weighted sum of the job's TRES; TRES without a weight cost
nothing, so GPUs count only when a ``GRES/gpu=`` weight is set.  Under
``PriorityFlags=MAX_TRES`` the per-node kinds (cpu, mem, node, every gres)
contribute only their largest weighted value, the others still add up.

Worked example: a job with 4 CPUs, 16000 MiB and 2 GPUs, weights
``CPU=1.0,Mem=0.25G,GRES/gpu=8.0``::

    sum:      4 x 1.0 + 16000 x 0.25/1024 + 2 x 8.0 = 4 + 3.90625 + 16 = 23.90625
    MAX_TRES: max(4, 3.90625, 16)                                      = 16.0
    no weights: 4 (CPUs)

Reference: ``S:src/common/slurm_protocol_api.c`` (weight strings),
``S:src/common/assoc_mgr.c`` (weighted sum), ``S:src/slurmctld/job_mgr.c``
(billing defaults to CPUs), ``S:doc/man/man5/slurm.conf.5`` (TRESBillingWeights).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: Slurm's built-in TRES in the order of their ids (1 = cpu ...); what sprio and
#: sacct list first.  Others (gres/..., license/..., bb/...) follow by name.
BUILTIN_TRES = ("cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages")
_FAMILIES = ("gres", "license", "bb")  # "<family>/<name>"
_PER_NODE = ("cpu", "mem", "node")  # with every gres: MAX_TRES takes their maximum
_UNITS = "KMGTP"
_ITEM = re.compile(
    r"\s*([A-Za-z][\w/:.-]*)\s*=\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)([A-Za-z]?)\s*"
)


class TresWeightError(ValueError):
    """A weight string slurmlite cannot read (Slurm refuses to start on one)."""


def tres_name(name: str) -> str:
    """Canonical (lower-case) TRES name; TresWeightError if it is no TRES."""
    canon = name.strip().lower()
    family, slash, rest = canon.partition("/")
    if canon in BUILTIN_TRES or (slash and family in _FAMILIES and rest):
        return canon
    raise TresWeightError(f"TRES weight '{name}' is not a configured TRES type")


def parse_tres_weights(text: str | None) -> dict[str, float]:
    """``"CPU=1.0,Mem=0.25G,GRES/gpu=8.0"`` -> ``{"cpu": 1.0, "mem": 0.25/1024, "gres/gpu": 8.0}``.

    An empty or missing string gives ``{}`` (which :func:`billing` reads as
    "bill CPUs").  Raises :class:`TresWeightError` on a malformed item.
    """
    weights: dict[str, float] = {}
    for item in (text or "").strip().strip('"').split(","):
        if not item.strip():
            continue
        m = _ITEM.fullmatch(item)
        if m is None:
            raise TresWeightError(f'"{item.strip()}" is an invalid TRES weight entry')
        name, number, unit = tres_name(m.group(1)), float(m.group(2)), m.group(3).upper()
        if unit:
            if unit not in _UNITS:
                raise TresWeightError(f"Invalid unit type '{unit}' in '{item.strip()}'")
            base = 2 if name in ("mem", "bb") or name.startswith("bb/") else 0  # MiB-based
            steps = _UNITS.index(unit) + 1 - base  # K=1 ... P=5 above the base unit
            if steps > 0:
                number /= 1024.0**steps
        weights[name] = number
    return weights


def tres_sort_key(name: str) -> tuple[int, str]:
    """Order of TRES in Slurm's strings: built-ins by id, then the rest by name."""
    return (BUILTIN_TRES.index(name), "") if name in BUILTIN_TRES else (len(BUILTIN_TRES), name)


def job_tres(
    *, cpus: int, mem: int = 0, nodes: int = 1, gpus: int = 0, gpu_type: str | None = None
) -> dict[str, float]:
    """A job's TRES counts as billing and the TRES priority factor read them.

    ``mem`` is MiB for the whole job.  A typed GPU request counts both as
    ``gres/gpu`` and ``gres/gpu:<type>``, as Slurm accounts it.
    """
    counts: dict[str, float] = {"cpu": cpus, "mem": mem, "node": nodes}
    if gpus:
        counts["gres/gpu"] = gpus
        if gpu_type:
            counts[f"gres/gpu:{gpu_type.lower()}"] = gpus
    return counts


def billing(
    tres: Mapping[str, float], weights: Mapping[str, float] | None, *, max_tres: bool = False
) -> float:
    """The billing count of a job holding ``tres`` under ``weights`` (see module doc).

    ``weights`` empty or None -> the CPU count.  ``max_tres`` is
    ``PriorityFlags=MAX_TRES``.
    """
    if not weights:
        return float(tres.get("cpu", 0))
    per_node = 0.0
    total = 0.0
    for name, count in tres.items():
        name = name.lower()
        if name == "billing":
            continue
        value = count * weights.get(name, 0.0)
        if max_tres and (name in _PER_NODE or name.startswith("gres/")):
            per_node = max(per_node, value)
        else:
            total += value
    return per_node + total


def charge(elapsed: float, billing_count: float, usage_factor: float = 1.0) -> float:
    """Undecayed usage of a finished job: ``elapsed x billing`` (billing-seconds),
    times its QOS ``UsageFactor`` (1 unless a QOS says otherwise)."""
    return max(0.0, elapsed) * billing_count * usage_factor
