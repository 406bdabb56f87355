"""``scontrol show config`` (slurmlite/config_show.py): Slurm's key names and value formats,
and the lines clients such as submitit and snakemake read with regexes."""

from __future__ import annotations

import re

from slurmlite.config import Config, parse_config
from slurmlite.config_show import config_items


def parse(text: str, path: str = "/etc/slurm/slurm.conf") -> Config:
    return parse_config(text, path)


def test_config_items_use_slurms_names_and_formats():
    cfg = parse(
        "ClusterName=lab\nSlurmctldHost=head(10.0.0.1)\nMinJobAge=120\nDefMemPerCPU=4000\n"
        "DefMemPerGPU=8000\nSchedulerParameters=bf_window=60,bf_continue\n"
        "SlurmliteStoreURL=postgresql://slurm:secret@db:5432/slurm\n",
        "/etc/slurm/slurm.conf",
    )
    items = config_items(cfg)
    shown = dict(items)
    assert shown["ClusterName"] == "lab"
    assert shown["SlurmctldHost[0]"] == "head(10.0.0.1)"
    assert shown["MinJobAge"] == "120 sec"
    assert (shown["KillWait"], shown["SlurmdTimeout"]) == ("30 sec", "300 sec")
    assert (shown["MaxArraySize"], shown["MaxJobCount"]) == ("1001", "10000")
    assert (shown["SlurmctldPort"], shown["SlurmdPort"]) == ("6817", "6818")
    assert shown["DefMemPerCPU"] == "4000"
    assert shown["JobDefaults"] == "DefMemPerGPU=8000"
    assert shown["SchedulerParameters"] == "bf_window=60,bf_continue"
    assert shown["SchedulerType"] == "sched/backfill"
    assert shown["SelectType"] == "select/cons_tres"
    assert shown["SelectTypeParameters"] == "CR_CORE_MEMORY"
    assert shown["PriorityType"] == "priority/multifactor"
    # durations kept in minutes print as Slurm's D-HH:MM:SS; booleans as Yes/No
    assert (shown["PriorityMaxAge"], shown["PriorityDecayHalfLife"]) == ("7-00:00:00",) * 2
    assert (shown["PriorityCalcPeriod"], shown["PriorityFavorSmall"]) == ("00:05:00", "No")
    assert shown["AuthType"] == "auth/local"
    assert shown["SLURM_CONF"] == "/etc/slurm/slurm.conf"
    assert shown["SLURM_VERSION"] == "22.05.8"
    assert shown["SlurmctldLogFile"] == "(null)"
    assert shown["SlurmUser"] == "root(0)"
    assert shown["SlurmliteStoreURL"] == "postgresql://slurm:****@db:5432/slurm"  # no password
    assert len(shown) == len(items)  # one line per key
    names = [k for k, _ in items]
    slurm_part = names[: names.index("SlurmliteAdminUsers")]
    assert slurm_part == sorted(slurm_part, key=str.lower)  # extensions come last


def test_unset_memory_default_shows_unlimited():
    shown = dict(config_items(parse("SlurmliteHeartbeatInterval=0.5\n")))
    assert (shown["DefMemPerCPU"], shown["JobDefaults"]) == ("UNLIMITED", "(null)")
    assert shown["SlurmliteHeartbeatInterval"] == "0.5 sec"


def test_clients_can_read_min_job_age_and_max_array_size():
    # submitit / snakemake read `scontrol show config` with regexes (spec/clients.md §3).
    cfg = parse("MinJobAge=600\nMaxArraySize=5000\n")
    text = "\n".join(f"{k:<23} = {v}" for k, v in config_items(cfg))
    assert re.search(r"^MinJobAge\s*=\s*(\d+) sec$", text, re.M).group(1) == "600"
    assert re.search(r"^MaxArraySize\s*=\s*(\d+)$", text, re.M).group(1) == "5000"
