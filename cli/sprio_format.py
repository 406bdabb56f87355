"""sprio's columns: the format letters, the default formats, and how a cell is cut.

A format is ``%[.][width]letter`` fields with literal text between them
(``-o "%.15i %9r %.10Y"``); the text before the first ``%`` is printed as it
is, the text after a field's letter follows that field.  sprio's ``.``
means *right*-justified (the reverse of squeue's habit): a right-justified
cell is padded on the left and then cut to its width, keeping its first
characters, which is why the TRES column of golden ``50_sprio.txt`` reads
``cpu=250,gres/gpu=100`` for ``cpu=250,gres/gpu=1000``; a left-justified
one is cut to its width, then padded on the right.  No width: as long as
it needs.

Letters (Slurm 22.05's sprio, facts only): upper case is the weighted
factor (``%.0f``), lower case the normalised one (``%.7f``); ``i`` job id,
``r`` partition, ``u`` user, ``Y``/``y`` priority (``y`` is priority /
(2^32 - 1) as ``%16.14f``), ``S`` site factor, ``N`` nice, ``A``/``a`` age,
``B``/``b`` association, ``F``/``f`` fair-share, ``J``/``j`` job size,
``P``/``p`` partition, ``Q``/``q`` QOS, ``T``/``t`` TRES (``name=value``
entries whose weighted value is not 0, joined by commas), ``c`` cluster.

The default columns depend on the weights: ``JOBID PARTITION PRIORITY
SITE`` then one column per factor whose weight is not 0 (TRES: when
PriorityWeightTRES is set), ``USER`` after PARTITION when ``-u`` is given;
``-l`` shows every column and NICE.  The ``-w`` row (``Weights``) shows each
weight under its factor, 1 under SITE and PriorityWeightTRES as written.

Example with the golden weights (Age, Fairshare, JobSize, Partition, QOS
and TRES set; Assoc not)::

    >>> default_format({"age": 1000, "assoc": 0, "fairshare": 10000, "jobsize": 1000,
    ...                 "partition": 1000, "qos": 1000, "tres": "CPU=1000"}, False, False, False)
    '%.15i %9r %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.20T'
"""

from __future__ import annotations

from cli.format_codes import Column, known_only, pad, parse_letters
from slurmlite.scheduler.billing import tres_sort_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NORM_PRIO = 0xFFFFFFFF  # %y divides by it
#: letter -> (header, factor key or None)
LETTERS: dict[str, tuple[str, str | None]] = {
    "a": ("AGE", "age"), "A": ("AGE", "age"),
    "b": ("ASSOC", "assoc"), "B": ("ASSOC", "assoc"),
    "c": ("CLUSTER", None),
    "f": ("FAIRSHARE", "fairshare"), "F": ("FAIRSHARE", "fairshare"),
    "i": ("JOBID", None),
    "j": ("JOBSIZE", "jobsize"), "J": ("JOBSIZE", "jobsize"),
    "N": ("NICE", None),
    "p": ("PARTITION", "partition"), "P": ("PARTITION", "partition"),
    "q": ("QOS", "qos"), "Q": ("QOS", "qos"),
    "r": ("PARTITION", None),
    "S": ("SITE", None),
    "t": ("TRES", None), "T": ("TRES", None),
    "u": ("USER", None),
    "y": ("PRIORITY", None), "Y": ("PRIORITY", None),
}  # fmt: skip
_KEYS = {letter: letter for letter in LETTERS}  # a column's key is its letter
_ORDER = (("age", "a"), ("assoc", "b"), ("fairshare", "f"), ("jobsize", "j"),
          ("partition", "p"), ("qos", "q"))  # fmt: skip

LONG = "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T"
LONG_NORM = "%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t"


def default_format(weights: dict[str, Any], norm: bool, long: bool, users: bool) -> str:
    """sprio's format when neither ``-o`` nor SPRIO_FORMAT gives one."""
    if long:
        return LONG_NORM if norm else LONG
    parts = ["%.15i", "%9r"]
    if users:
        parts.append("%.8u")
    parts += ["%10y"] if norm else ["%.10Y", "%.10S"]
    for key, letter in _ORDER:
        if weights.get(key):
            parts.append(f"%10{letter}" if norm else f"%.10{letter.upper()}")
    if weights.get("tres"):
        parts.append("%20t" if norm else "%.20T")
    return " ".join(parts)


def parse_format(text: str) -> tuple[list[Column], list[str]]:
    """``(columns, errors)``: a column's key is its letter; an unknown letter is
    reported and left out, with the text after it (``cli.format_codes`` grammar)."""
    columns, problems = parse_letters(text, _KEYS, "job")
    return known_only(columns), problems


def _weighted(value: float) -> str:
    return f"{value:.0f}"


def _tres(job: dict[str, Any], norm: bool) -> str:
    """``cpu=500,gres/gpu=1000``: the TRES whose weighted value is not 0, in Slurm's order."""
    weighted = job["factors"]["weighted"]["tres"]
    names = sorted((n for n, v in weighted.items() if v), key=tres_sort_key)
    if norm:
        values = job["factors"]["norm"]["tres"]
        return ",".join(f"{n}={values.get(n, 0.0):.2f}" for n in names)
    return ",".join(f"{n}={weighted[n]:.0f}" for n in names)


def priority_of(job: dict[str, Any]) -> float:
    """The priority sprio prints: an operator's value, else the factors added up (>= 1)."""
    f = job["factors"]
    if f.get("direct"):
        return float(job["priority"])
    w = f["weighted"]
    total = w["age"] + w["assoc"] + w["fairshare"] + w["jobsize"] + w["partition"] + w["qos"]
    total += w["site"] - w["nice"]
    for name in sorted(w["tres"], key=tres_sort_key):
        total += w["tres"][name]
    return max(1.0, total)


def job_value(f: Column, job: dict[str, Any], ctx: dict[str, Any]) -> str:
    """The text of field ``f`` for ``job`` (a JobPriorityInfo dict)."""
    letter, factors = f.key, job["factors"]
    direct = bool(factors.get("direct"))
    key = LETTERS[letter][1]
    if key is not None:
        if letter.isupper():
            return _weighted(factors["weighted"][key])
        return f"{factors['norm'][key] if ctx['weights'].get(key) else 0.0:.7f}"
    if letter == "i":
        return str(job["job_id"])
    if letter == "r":
        return job["partition"]
    if letter == "u":
        return job["user"]
    if letter == "c":
        return ctx.get("cluster", "")
    if letter == "Y":
        return str(int(priority_of(job)))
    if letter == "y":
        value = float(job["priority"]) if direct else priority_of(job) / NORM_PRIO
        return f"{value:16.14f}"
    if letter == "S":
        return "0" if direct else _weighted(factors["weighted"]["site"])
    if letter == "N":
        return "0" if direct else _weighted(factors["weighted"]["nice"])
    return _tres(job, letter == "t")  # t, T


def weights_value(f: Column, ctx: dict[str, Any]) -> str:
    """The text of field ``f`` on the ``-w`` row."""
    letter = f.key
    key = LETTERS[letter][1]
    if key is not None:
        return str(ctx["weights"].get(key, 0))
    if letter == "i":
        return "Weights"
    if letter == "S":
        return "1"
    if letter == "T":
        return ctx["weights"].get("tres", "")
    return ""


def line(columns: list[Column], value: Any) -> str:
    """One output line: ``value(column)`` for each column, cut and followed by its
    text (the text before the first ``%`` is a column of text only)."""
    parts = []
    for f in columns:
        if f.shown:
            parts.append(pad(value(f), f.width, f.right))
        parts.append(f.suffix)
    return "".join(parts)


def header_value(f: Column) -> str:
    return LETTERS[f.key][0]
