"""``scontrol show config``: the configuration as Slurm prints it.

Each known slurm.conf key with Slurm's name and value format, e.g.
``PriorityMaxAge = 7-00:00:00`` (minutes shown as a duration),
``KillWait = 30 sec``, ``PriorityFavorSmall = No``, unset values as
``(null)``; sorted by name, slurmlite's own keys last (``SlurmliteVersion``
from the package metadata among them).
"""

from __future__ import annotations

import re

from slurmlite.config import GLOBAL_KEYS, PRIORITY_WEIGHT_KEYS, SLURM_VERSION, Config
from slurmlite.timefmt import fmt_limit_fixed
from slurmlite.version import slurmlite_version


def config_items(cfg: Config) -> list[tuple[str, str]]:
    """``scontrol show config`` lines as ``(Key, value)``: Slurm's names and formats,
    sorted by name as Slurm prints them, then the slurmlite extensions."""
    import pwd

    # the Slurm dialect spoken, and (with slurmlite's own keys) which slurmlite speaks it
    items = {"SLURM_CONF": cfg.path, "SLURM_VERSION": SLURM_VERSION}
    items["SlurmliteVersion"] = slurmlite_version()
    for key, attr, kind in GLOBAL_KEYS.values():
        value = getattr(cfg, attr)
        if isinstance(value, bool):
            value = "Yes" if value else "No"
        elif isinstance(value, dict):
            value = ",".join(k if v == "" else f"{k}={v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ",".join(value)
        elif kind == "time":  # minutes: 10080 -> "7-00:00:00", 5 -> "00:05:00"
            value = fmt_limit_fixed(value)
        elif kind in ("sec", "fsec"):  # 300 -> "300 sec", 0.5 -> "0.5 sec"
            value = f"{value if isinstance(value, int) else format(value, 'g')} sec"
        items[key] = "(null)" if value in (None, "") else str(value)
    host = items.pop("SlurmctldHost")
    items["SlurmctldHost[0]"] = host if cfg.control_addr == host else f"{host}({cfg.control_addr})"
    items["DefMemPerCPU"] = str(cfg.def_mem_per_cpu or "UNLIMITED")
    gpu_mem = items.pop("DefMemPerGPU")
    items["JobDefaults"] = f"DefMemPerGPU={gpu_mem}" if cfg.def_mem_per_gpu else "(null)"
    items.update((k, str(cfg.priority_weights[k[14:].lower()])) for k in PRIORITY_WEIGHT_KEYS)
    items["SelectTypeParameters"] = cfg.select_type_parameters.upper()
    try:  # Slurm shows the user with its uid: slurm(64030)
        items["SlurmUser"] += f"({pwd.getpwnam(cfg.slurm_user).pw_uid})"
    except KeyError:
        pass
    items["SlurmliteStoreURL"] = re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1****@", cfg.store_url)
    return sorted(items.items(), key=lambda kv: (kv[0].startswith("Slurmlite"), kv[0].lower()))
