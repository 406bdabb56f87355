"""The idle-GPU policy: ``SlurmliteIdleGpuPolicy`` in slurm.conf (slurmlite extension).

A GPU held by a job that never uses it is a GPU nobody else can use.  The
policy says when the controller treats a running job's GPUs as idle and what
it then does (``controller.sched.idlegpus`` applies it; the state machine is
``slurmlite.idlewatch``).  It is off unless slurm.conf turns it on, globally
and/or on a ``PartitionName=`` line::

    SlurmliteIdleGpuPolicy=threshold=5,window=2:00:00,grace=30,action=requeue
    PartitionName=interactive Nodes=ALL SlurmliteIdleGpuPolicy=action=warn
    PartitionName=bench Nodes=ALL SlurmliteIdleGpuPolicy=off

The value is a comma list of ``key=value`` (any subset, in any order), or the
single word ``off``:

=============  =======  =====================================================
``threshold``  5        percent; a GPU whose mean utilization over an interval
                        is below it was idle in that interval (0-100)
``window``     2:00:00  how long all the job's GPUs must stay idle before the
                        job is *flagged* (above 0)
``grace``      30:00    from the flag to the action (0: at once)
``action``     warn     ``warn`` (flag only), ``requeue`` or ``cancel``
=============  =======  =====================================================

Durations are Slurm's time format as ``--time`` reads it (``120`` = 120
minutes, ``30:00`` = 30 minutes, ``2:00:00``, ``1-0`` = one day) or a number
with a unit: ``90s``, ``30m``, ``2h``, ``1d``.

A QOS may carry the same setting (``sacctmgr modify qos gpu-debug set
IdleGpuPolicy=off``; ``IdleGpuPolicy=-1`` takes it away again).  A job's
policy is made of three *layers*, the most general first: the global line,
its partition's, its QOS's.  The most specific layer that says anything
decides whether the policy applies (``off``: not at all); the keys of every
layer that is not ``off`` are laid over the defaults in that order.  Worked
example: with the three lines above, a job in ``interactive`` is only
warned after 2 hours under 5 %, one in ``bench`` is never judged, any other
is requeued 30 minutes after the flag -- unless its QOS says otherwise.
``policy_for(cfg, "interactive")`` ->
``IdleGpuPolicy(threshold=5.0, window=7200, grace=1800, action="warn")``.

The text is checked where slurm.conf is read (``slurmlite.config`` keeps it
as written: ``scontrol show config`` shows it so) and where sacctmgr sets
it; :func:`policy_for` gives the typed policy of a job's partition and QOS,
``None`` where none applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slurmlite.config import Config

ACTIONS = ("warn", "requeue", "cancel")
OFF = "off"
DEFAULTS = {"threshold": "5", "window": "2:00:00", "grace": "30:00", "action": "warn"}
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@dataclass(frozen=True)
class IdleGpuPolicy:
    """The policy that applies to one partition's jobs."""

    threshold: float = 5.0  # percent
    window: int = 7200  # seconds
    grace: int = 1800  # seconds
    action: str = "warn"  # one of ACTIONS

    @property
    def acts(self) -> bool:
        """Whether the flag is followed by an action (requeue, cancel), not a warning only."""
        return self.action != "warn"


def settings(text: str) -> dict[str, str]:
    """Check one ``SlurmliteIdleGpuPolicy`` value; its keys as written (ValueError if bad).

    ``"window=2h,action=cancel"`` -> ``{"window": "2h", "action": "cancel"}``;
    ``"off"`` -> ``{"off": ""}``.
    """
    if text.strip().lower() == OFF:
        return {OFF: ""}
    out: dict[str, str] = {}
    for item in (i.strip() for i in text.split(",")):
        key, eq, value = item.partition("=")
        key, value = key.strip().lower(), value.strip()
        if key not in DEFAULTS or not eq:
            raise ValueError(f"'{item}' is not threshold=, window=, grace= or action=")
        _typed(key, value)
        out[key] = value
    return out


def policy_for(cfg: Config, partition: str, qos: str = "") -> IdleGpuPolicy | None:
    """The policy of a job of ``partition`` whose QOS has the setting ``qos`` (as
    sacctmgr stored it; "": none) -- module doc; None: the job is not judged."""
    own = next((p.idle_gpu_policy for p in cfg.partitions if p.name == partition), {})
    layers = [layer for layer in (cfg.idle_gpu_policy, own, settings(qos) if qos else {}) if layer]
    if not layers or OFF in layers[-1]:
        return None
    merged = dict(DEFAULTS)
    for layer in layers:
        merged.update(layer if OFF not in layer else {})
    return IdleGpuPolicy(
        threshold=_typed("threshold", merged["threshold"]),
        window=_typed("window", merged["window"]),
        grace=_typed("grace", merged["grace"]),
        action=_typed("action", merged["action"]),
    )


def enabled_partitions(cfg: Config) -> dict[str, IdleGpuPolicy]:
    """Every partition with a policy for jobs whose QOS has none, by name."""
    found = {p.name: policy_for(cfg, p.name) for p in cfg.partitions}
    return {name: policy for name, policy in found.items() if policy is not None}


def duration(text: str) -> int:
    """Seconds of a policy duration (module doc): ``"90s"`` -> 90, ``"30:00"`` -> 1800."""
    text = text.strip().lower()
    if text[:-1].isdecimal() and text[-1:] in _UNITS:
        return int(text[:-1]) * _UNITS[text[-1]]
    from slurmlite.timefmt import parse_duration  # not at import: slurm.conf readers stay light

    seconds = parse_duration(text)
    if seconds is None:
        raise ValueError(f"'{text}' is not a duration")
    return seconds


def _typed(key: str, value: str):  # type: ignore[no-untyped-def]
    """One value, typed and range-checked (ValueError naming the key if bad)."""
    try:
        if key == "threshold":
            number = float(value)
            if 0 <= number <= 100:
                return number
        elif key == "action":
            if value.lower() in ACTIONS:
                return value.lower()
        else:
            seconds = duration(value)
            if seconds > 0 or (key == "grace" and seconds == 0):
                return seconds
    except ValueError:
        pass
    raise ValueError(f"invalid {key} '{value}'")
