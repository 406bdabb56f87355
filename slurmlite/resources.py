"""Value parsers for resource options: sizes, counts, GPUs, ``--export``.

Pure functions; each raises ``ValueError`` whose message is the text Slurm
prints after ``<cmd>: error:`` so a command can show it unchanged.

Memory (``--mem``, ``--mem-per-cpu``, ``--mem-per-gpu``) -> MiB
    An integer, optionally followed by ``K``, ``M``, ``G`` or ``T`` (either
    case), optionally followed by ``B``: ``500`` = 500 MiB, ``2G`` = 2048,
    ``1536K`` = 2 (kibibytes round *up*), ``1TB`` = 1048576.  ``0`` is valid
    (for ``--mem``: the whole memory of each node).  ``12X``, ``-1``, ``G``
    are invalid.

Node counts (``-N``) -> (min, max)
    ``2`` -> (2, 2); ``2-4`` -> (2, 4); ``-4`` -> (1, 4); ``k``/``m``
    multiply by 1024 / 1048576.  ``abc`` -> ``"abc" is not a valid node
    count``; ``4-2`` -> ``Maximum node count 2 is less than minimum node
    count 4``.  slurmlite also refuses ``0`` (a job needs a node).

Time limits (``-t``) -> minutes
    The forms of spec §10.1 via ``slurmlite.timefmt``, rounded up to whole
    minutes; ``0``, ``UNLIMITED``, ``INFINITE``, ``-1`` -> None (unlimited).

Positive integers (``-n``, ``-c``, ``--ntasks-per-node``)
    ``Invalid numeric value "0" for --ntasks.`` (Slurm exits 1 for these.)

GPUs
    ``--gres=gpu[:type][:N]`` (``N`` defaults to 1, ``gres:`` prefix allowed,
    ``none`` means no GRES) and ``--gpus``/``--gpus-per-node=[type:]N``.
    slurmlite's only GRES is ``gpu``; anything else is ``Invalid generic
    resource (gres) specification``.  The TRES text Slurm shows keeps the
    request's own spelling: ``--gres=gpu:2`` -> ``gres:gpu:2``,
    ``--gpus-per-node=a100:2`` -> ``gres:gpu:a100:2``.

``--signal=[{R|B}:]SIG[@secs]`` -> (signal number, seconds, flags)
    ``SIG`` a name (``USR2``, ``SIGUSR2``) or a number; ``secs`` 0..65535,
    60 when left out; ``B`` targets the batch shell, ``R`` a reservation's
    end: ``B:USR1@90`` -> (10, 90, "B"), ``TERM`` -> (15, 60, "").

``--export``
    ``ALL`` (default): the whole submit environment.  ``NONE``/``NIL``: only
    the ``SLURM_*`` variables.  Otherwise a comma list (commas inside quotes
    do not split): ``ALL`` merges the whole environment, ``VAR=value`` sets
    a value, ``VAR`` copies the caller's value if it has one; later items
    overwrite earlier ones, and the caller's ``SLURM_*`` variables are added
    last (Slurm always exports them).  Example: environment ``{A: 1, B: 2,
    SLURM_CONF: c}`` with ``B,C=3`` -> ``{B: 2, C: 3, SLURM_CONF: c}``.

Reference: Slurm 22.05 ``proc_args.c`` (sizes, counts), ``env.c`` (export),
``gres.c`` (GRES strings); spec §5.6, §6.1, §6.4.
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Mapping

from slurmlite.states import parse_signal
from slurmlite.timefmt import duration_to_minutes, parse_duration

GRES_ERROR = "Invalid generic resource (gres) specification"

_MEM_RE = re.compile(r"\s*\+?(\d+)(?:([KkMmGgTt])[Bb]?)?")
_MEM_FACTOR = {"k": None, "m": 1, "g": 1024, "t": 1024 * 1024}
_INT_RE = re.compile(r"\s*([+-]?\d+)")
_MAX_INT = 2**31 - 1


def parse_mem(text: str) -> int:
    """Memory size -> MiB (see the module docstring)."""
    m = _MEM_RE.fullmatch(text)
    if not m:
        raise ValueError(f"invalid memory size {text!r}")
    number, unit = int(m.group(1)), (m.group(2) or "m").lower()
    factor = _MEM_FACTOR[unit]
    return -(-number // 1024) if factor is None else number * factor


def _leading_int(text: str) -> tuple[int | None, str]:
    """strtol-like: the leading integer (None if no digits) and the rest."""
    m = _INT_RE.match(text)
    if not m:
        return None, text
    return int(m.group(1)), text[m.end() :]


def _node_number(text: str) -> int:
    number, rest = _leading_int(text)
    if number is None:
        if text.strip():
            raise ValueError(f'"{text}" is not a valid node count')
        return -1  # empty side of a range: "-4"
    for suffix, factor in (("k", 1024), ("m", 1024 * 1024)):
        if rest[:1].lower() == suffix:
            number, rest = number * factor, rest[1:]
    if rest.strip():
        raise ValueError(f'"{text}" is not a valid node count')
    return number


def parse_node_count(text: str) -> tuple[int, int]:
    """``-N`` value -> (min, max); see the module docstring."""
    if "-" in text:
        low_text, _, high_text = text.partition("-")
        low = max(_node_number(low_text), 1)
        high = _node_number(high_text)
    else:
        low = high = _node_number(text)
        if low < 0:
            raise ValueError(f'"{text}" is not a valid node count')
    if high != 0 and high < low:
        raise ValueError(f"Maximum node count {high} is less than minimum node count {low}")
    if high == 0:
        raise ValueError(f'"{text}" is not a valid node count')
    return low, high


def parse_positive_int(text: str, option: str) -> int:
    """``"4"`` -> 4; ``Invalid numeric value "0" for --ntasks.`` otherwise."""
    number, rest = _leading_int(text)
    if number is None or rest or not 0 < number <= _MAX_INT:
        raise ValueError(f'Invalid numeric value "{text}" for {option}.')
    return number


def parse_nice(text: str) -> int:
    """``--nice=N`` (sbatch passes ``100`` for a bare ``--nice``).

    The range is +/- 2147483645; like Slurm, only the leading integer counts
    (``--nice=5x`` is 5, ``--nice=x`` is 0).
    """
    number, _ = _leading_int(text)
    value = number or 0
    if abs(value) > 2**31 - 3:
        raise ValueError("Invalid --nice value, out of range (+/- 2147483645)")
    return value


def parse_time_limit(text: str) -> int | None:
    """``--time`` -> minutes (rounded up); None = UNLIMITED, ``0`` included.

    >>> parse_time_limit("10:30"), parse_time_limit("0"), parse_time_limit("infinite")
    (11, None, None)
    """
    seconds = parse_duration(text)
    return (duration_to_minutes(seconds) or None) if seconds is not None else None


def parse_open_mode(text: str) -> str:
    """``--open-mode``: a word starting with ``a`` or ``t`` (either case)."""
    first = text[:1].lower()
    if first not in ("a", "t"):
        raise ValueError(f"invalid open mode {text!r}")
    return "append" if first == "a" else "truncate"


def parse_signal_warning(text: str) -> tuple[int, int, str]:
    """``--signal=[{R|B}:]SIG[@secs]`` -> (signal number, seconds before the limit, flags).

    >>> parse_signal_warning("USR2@90"), parse_signal_warning("b:10")
    ((12, 90, ''), (10, 60, 'B'))
    """
    flags, _, rest = text.rpartition(":")
    name, at, secs = rest.partition("@")
    flags = flags.upper()
    if any(f not in "BR" for f in flags) or (at and not secs.isdigit()):
        raise ValueError("Invalid --signal specification")
    seconds = int(secs) if at else 60
    if seconds > 65535:
        raise ValueError("Invalid --signal specification")
    try:
        number = parse_signal(name)
    except ValueError:
        raise ValueError("Invalid --signal specification") from None
    return number, seconds, "".join(sorted(set(flags)))


# ---------------------------------------------------------------------- GPUs


class GpuRequest(namedtuple("GpuRequest", "count type", defaults=(None,))):  # noqa: PYI024
    """``count`` GPUs (int), of model ``type`` (str or None) when given
    (``gpu:a100:2``).  A plain namedtuple: ``typing`` costs commands start-up time."""

    __slots__ = ()


def _gpu_count(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise ValueError(GRES_ERROR)
    return int(text)


def parse_gres(text: str) -> GpuRequest | None:
    """``--gres`` value -> GPU request; None for ``none``.

    >>> parse_gres("gpu:a100:2"), parse_gres("gres:gpu")
    (GpuRequest(count=2, type='a100'), GpuRequest(count=1, type=None))
    """
    if text.lower() == "none":
        return None
    items = [item.removeprefix("gres:") for item in text.split(",")]
    if len(items) != 1:  # several GRES: only one kind (gpu) exists here
        raise ValueError(GRES_ERROR)
    name, *rest = items[0].split(":")
    if name != "gpu" or len(rest) > 2 or any(not part for part in rest):
        raise ValueError(GRES_ERROR)
    if not rest:
        return GpuRequest(1)
    if len(rest) == 1:
        return GpuRequest(_gpu_count(rest[0])) if rest[0].isdigit() else GpuRequest(1, rest[0])
    if rest[0].isdigit():
        raise ValueError(GRES_ERROR)
    return GpuRequest(_gpu_count(rest[1]), rest[0])


def parse_gpus(text: str) -> GpuRequest:
    """``--gpus`` / ``--gpus-per-node`` value ``[type:]N``."""
    parts = text.split(":")
    if len(parts) == 1:
        return GpuRequest(_gpu_count(parts[0]))
    if len(parts) == 2 and parts[0] and not parts[0].isdigit():
        return GpuRequest(_gpu_count(parts[1]), parts[0])
    raise ValueError(GRES_ERROR)


def gres_tres(text: str) -> str:
    """``--gres`` text as Slurm stores it: ``gpu:2`` -> ``gres:gpu:2``."""
    return ",".join(f"gres:{item.removeprefix('gres:')}" for item in text.split(","))


def gpus_tres(text: str) -> str:
    """``--gpus``/``--gpus-per-node`` text as stored: ``2`` -> ``gres:gpu:2``."""
    return f"gres:gpu:{text}"


def gpu_fields(gres: str | None, gpus_per_node: str | None, gpus: str | None) -> dict[str, object]:
    """The JobSubmit GPU fields for ``--gres``, ``--gpus-per-node``, ``--gpus``.

    >>> gpu_fields("gpu:a100:2", None, None)
    {'gpus_per_node': 2, 'gpu_type': 'a100', 'tres_per_node': 'gres:gpu:a100:2'}
    >>> gpu_fields(None, None, "3")
    {'gpus_total': 3, 'gpu_type': None, 'tres_per_job': 'gres:gpu:3'}

    ``--gres=gpu`` together with ``--gpus-per-node`` is a GRES error.
    """
    fields: dict[str, object] = {}
    node = parse_gres(gres) if gres is not None else None
    tres = gres_tres(gres) if node is not None and gres is not None else None
    if gpus_per_node is not None:
        if node is not None:
            raise ValueError(GRES_ERROR)
        node, tres = parse_gpus(gpus_per_node), gpus_tres(gpus_per_node)
    if node is not None:
        fields.update(gpus_per_node=node.count, gpu_type=node.type, tres_per_node=tres)
    if gpus is not None:
        job = parse_gpus(gpus)
        fields.update(gpus_total=job.count, gpu_type=fields.get("gpu_type") or job.type)
        fields["tres_per_job"] = gpus_tres(gpus)
    return fields


# -------------------------------------------------------------------- export


def split_export(text: str) -> tuple[list[str], list[str]]:
    """Split on commas outside quotes; a fully quoted item loses its quotes.

    Returns (items, warnings); an unbalanced quote gives a warning and the
    rest of the text as the last item.
    """
    items: list[str] = []
    warnings: list[str] = []
    start, quote = 0, ""
    for i, ch in enumerate(text + "\0"):
        if ch in "'\"" and (not quote or quote == ch):
            quote = "" if quote else ch
        elif ch in ",\0" and not quote:
            items.append(text[start:i])
            start = i + 1
    if quote:
        warnings.append(f"Improperly formed environment variable ({text[start:]})")
        items.append(text[start:])
    cleaned = []
    for item in items:
        if len(item) >= 2 and item[0] in "'\"" and item[-1] == item[0]:
            item = item[1:-1]
        cleaned.append(item)
    return [item for item in cleaned if item], warnings


def export_environment(text: str, env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The environment a job starts from for ``--export=text``.

    Returns (environment, warnings); see the module docstring for the rules.
    """
    slurm_vars = {k: v for k, v in env.items() if k.startswith("SLURM_")}
    upper = text.upper()
    if upper == "ALL":
        return dict(env), []
    if upper in ("NONE", "NIL"):
        return slurm_vars, []
    result: dict[str, str] = {}
    items, warnings = split_export(text)
    for item in items:
        if item.upper() == "ALL":
            result.update(env)
        elif "=" in item:
            name, _, value = item.partition("=")
            result[name] = value
        elif item in env:
            result[item] = env[item]
    result.update(slurm_vars)
    return result, warnings
