"""slurm.conf values: how one raw ``Key=Value`` text becomes its typed form.

Every key the typed configuration (:mod:`slurmlite.config`) reads names a
*kind* in its field's metadata; :func:`convert` turns the text of the value
into that kind or raises :class:`ConfigError` naming the file, the line and
the key, as Slurm does (``slurm.conf:12: invalid value 'x' for CPUs``).

The kinds:

* text: ``str``, ``path``, ``host`` (as written), ``optpath`` (empty: None),
  ``list`` (comma-separated), ``params`` (``a=1,b`` -> ``{"a": "1", "b": ""}``),
  ``authalt`` (a list of alternative AuthTypes; only ``auth/jwt``);
* words from a fixed set (:data:`AUTH_TYPES`, :data:`NODE_STATES`,
  :data:`PARTITION_STATES`, ``bool``: YES/NO/TRUE/FALSE/1/0, ``reset``);
* whole numbers with bounds (``int``, ``sec``, ``pos``, ``port``, ``prio``, ...);
* structured values: ``time`` (minutes, None = UNLIMITED), ``fsec`` (positive
  seconds), ``gres`` (checked, kept as text), ``purge``, ``freq``, ``ports``
  (one per node), ``gpuout`` and ``idlegpu`` (slurmlite extensions).

Worked example: ``convert("time", "2-0", "MaxTime", "slurm.conf:3")`` is
``2880``; ``convert("port", "0", "SlurmdPort", "slurm.conf:4")`` raises
``ConfigError("slurm.conf:4: invalid value '0' for SlurmdPort")``.

:func:`expand_hosts` and :func:`per_node` read the hostlists of ``NodeName``,
``NodeAddr``, ``NodeHostname`` and ``Nodes`` with the same error style.
"""

from __future__ import annotations

from typing import Any

from slurmlite import hostlist, idlegpus
from slurmlite.conftext import ConfigError
from slurmlite.gpu_outside import parse_policy
from slurmlite.gresconf import parse_gres_spec
from slurmlite.retention import parse_purge

AUTH_TYPES = ("auth/local", "auth/munge", "auth/jwt")
NODE_STATES = ("UNKNOWN", "IDLE", "DOWN", "DRAIN", "FAIL", "FAILING", "FUTURE", "CLOUD")
PARTITION_STATES = ("UP", "DOWN", "DRAIN", "INACTIVE")
_INT_KINDS = {  # whole-number kinds: (lowest, highest) accepted value
    "int": (0, None), "sec": (0, None), "pos": (1, None), "port": (1, 65535),
    "rts": (0, 2), "prio": (0, 65533), "array": (0, 4000001), "weight": (0, 4294967295),
}  # fmt: skip
_CHOICES = {
    "auth": AUTH_TYPES, "nstate": NODE_STATES, "pstate": PARTITION_STATES,
    "bool": ("YES", "NO", "TRUE", "FALSE", "1", "0"),
    "reset": ("NONE", "NOW", "DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "YEARLY"),
}  # fmt: skip


def convert(kind: str, value: str, key: str, where: str) -> Any:
    """One raw value -> its typed form (``kind`` from the field); ConfigError if invalid."""
    bad = ConfigError(f"{where}: invalid value '{value}' for {key}")
    if kind in ("str", "path", "host"):
        return value
    if kind == "optpath":
        return value or None
    if kind == "list":
        return [item.strip() for item in value.split(",") if item.strip()]
    if kind == "authalt":  # AuthAltTypes: a list of alternative AuthTypes (only auth/jwt)
        names = [name.lower() for name in convert("list", value, key, where)]
        if any(name != "auth/jwt" for name in names):
            raise bad
        return names
    if kind == "params":  # "bf_window=60,bf_continue" -> {"bf_window": "60", "bf_continue": ""}
        pairs = (item.partition("=") for item in convert("list", value, key, where))
        return {name.strip(): arg.strip() for name, _, arg in pairs}
    if kind in _CHOICES:
        word = value.lower() if kind == "auth" else value.upper()
        if word not in _CHOICES[kind]:
            raise bad
        return word in ("YES", "TRUE", "1") if kind == "bool" else word
    if kind in ("time", "fsec", "gres", "gpuout", "idlegpu"):
        try:
            if kind == "idlegpu":  # "threshold=5,window=2h,action=requeue" or "off", as written
                return idlegpus.settings(value)
            if kind == "gpuout":  # slurmlite.gpu_outside: "settle=60,interval=15" or "ignore"
                return parse_policy(value)
            if kind == "fsec" and float(value) > 0:
                return float(value)
            if kind == "gres":
                parse_gres_spec(value)  # ValueError if malformed; NodeConf keeps the text
                return value
            if kind == "time":  # minutes; None = UNLIMITED
                from slurmlite.timefmt import duration_to_minutes, parse_duration

                seconds = parse_duration(value)
                return None if seconds is None else duration_to_minutes(seconds)
        except ValueError:
            pass
        raise bad
    if kind == "purge":  # PurgeJobAfter=12month (slurmdbd.conf(5)): Slurm's message, then ours
        try:
            return parse_purge(value)
        except ValueError as e:
            raise ConfigError(f'{where}: Bad value "{value}" for {key}: {e}') from None
    if kind == "freq":  # "30" or Slurm's "task=30,energy=0": the task seconds (default 30)
        pairs = [item.partition("=") for item in value.lower().split(",")]
        default = "30" if "=" in value else value
        task = next((v for k, _, v in pairs if k.strip() == "task"), default)
        return convert("sec", task.strip(), key, where)
    if kind == "ports":  # "6818" or "[17001-17004]": one port per node, in order
        return [convert("port", port, key, where) for port in expand_hosts(value, key, where)]
    lo, hi = _INT_KINDS[kind]
    if not value.isdecimal() or int(value) < lo or (hi is not None and int(value) > hi):
        raise bad
    return int(value)


def expand_hosts(value: str, key: str, where: str) -> list[str]:
    """A hostlist (``n[1-4]``) -> its names; ConfigError naming ``key`` if malformed."""
    try:
        return hostlist.expand(value)
    except ValueError:
        raise ConfigError(f"{where}: invalid hostlist '{value}' for {key}") from None


def per_node(expr: str, names: list[str], key: str, where: str) -> list[str]:
    """NodeAddr/NodeHostname: one host for every node, or one per node in order."""
    if not expr:
        return names
    hosts = expand_hosts(expr, key, where)
    if len(hosts) not in (1, len(names)):
        raise ConfigError(f"{where}: {key} names {len(hosts)} hosts for {len(names)} nodes")
    return hosts * len(names) if len(hosts) == 1 else hosts
