"""sinfo's fields and cells: format parsing and rendering, all pure (spec §8.2).

Formats
-------
``-o`` text is ``prefix%[.][width]letter suffix%...``: ``.`` right-justifies,
the width pads (and cuts), the text up to the next ``%`` is printed after the
field (``"%P,%m"`` -> ``debug*,4000``).  ``-O`` text is
``name[:[.]width[suffix]],...``; without ``:`` a field is 20 wide, left, with
no separator at all.  Both become ``cli.format_codes.Column`` s keyed by the
``-O`` name; a bad letter or name is reported and printed literally / skipped.

Rendering
---------
A :class:`Group` (one output line, built by :mod:`cli.sinfo`) is printed
field by field: left-justified values are cut and padded, right-justified
ones padded and cut (headers of node lists are never cut).  ``%P`` marks the
default partition with ``*`` (in the last column when the name does not fit);
the default formats size the partition and node-list columns to the longest
value, at least 9.  Node states are Slurm's numbers (base in the low four
bits, DRAIN 0x200, COMPLETING 0x400, NOT_RESPONDING 0x800...), printed
through :func:`slurmlite.states.node_state_sinfo`: ``alloc``, ``drng``,
``down*``.

Worked example, nodes n1 n2 allocated in partitions debug (default) and long,
default format (golden ``50_sinfo_default.txt``)::

    PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
    debug*       up   infinite      2  alloc n[1-2]
    long         up   infinite      2  alloc n[1-2]

Facts from Slurm 22.05 ``src/sinfo/{opts,print}.c``, in our own words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from cli.format_codes import Column, pad, parse_letters, parse_names
from slurmlite import hostlist, states, timefmt

TYPE_CHECKING = False  # importing typing costs a command ~3 ms (annotations are strings)

if TYPE_CHECKING:  # records are client Records (tests: these dataclasses)
    from slurmlite.protocol import NodeInfo, PartitionInfo

# the default formats of sinfo, -l, -s, -N, -N -l, -R, -R -l
DEFAULT_FORMAT = "partition:9 ,available:.5 ,time:.10 ,nodes:.6 ,statecompact:.6 ,nodelist:0"
LONG_FORMAT = (
    "partition:9 ,available:.5 ,time:.10 ,size:.10 ,root:.4 ,oversubscribe:.8 ,"
    "groups:.10 ,nodes:.6 ,statelong:.11 ,nodelist:0"
)
SUMMARIZE_FORMAT = "partition:9 ,available:.5 ,time:.10 ,nodeaiot:.16 ,nodelist:0"
NODE_FORMAT = "nodelist:0 ,nodes:.6 ,partition:.9 ,statecompact:6"
NODE_LONG_FORMAT = (
    "nodelist:0 ,nodes:.6 ,partition:.9 ,statelong:.11 ,cpus:4 ,socketcorethread:.8 ,"
    "memory:.6 ,disk:.8 ,weight:.6 ,features:.8 ,reason:20"
)
REASONS_FORMAT = "reason:20 ,user:9 ,timestamp:19 ,nodelist:0"
REASONS_LONG_FORMAT = "reason:20 ,userlong:12 ,timestamp:19 ,statecompact:6 ,nodelist:0"
LETTERS = dict(
    zip(
        "aAbBcCdDeEfFgGhHIlLmMnNoOpPrRsStTuUvVwXYZz",
        "available nodeai features_act maxcpuspernode cpus cpusstate disk nodes freemem "
        "reason features nodeaiot groups gres oversubscribe timestamp priorityjobfactor time "
        "defaulttime memory preemptmode nodehost nodelist nodeaddr cpusload prioritytier "
        "partition root partitionname size allocnodes statecompact statelong user userlong "
        "version cluster weight sockets cores threads socketcorethread".split(),
        strict=True,
    )
)
_HEADER_TEXT = """
available=AVAIL nodeai=NODES(A/I) features_act=ACTIVE_FEATURES maxcpuspernode=MAX_CPUS_PER_NODE
cpus=CPUS cpusstate=CPUS(A/I/O/T) disk=TMP_DISK nodes=NODES freemem=FREE_MEM reason=REASON
features=AVAIL_FEATURES nodeaiot=NODES(A/I/O/T) groups=GROUPS gres=GRES timestamp=TIMESTAMP
oversubscribe=OVERSUBSCRIBE priorityjobfactor=PRIO_JOB_FACTOR time=TIMELIMIT memory=MEMORY
defaulttime=DEFAULTTIME preemptmode=PREEMPT_MODE nodehost=HOSTNAMES nodelist=NODELIST
nodeaddr=NODE_ADDR cpusload=CPU_LOAD prioritytier=PRIO_TIER partition=PARTITION root=ROOT
partitionname=PARTITION size=JOB_SIZE allocnodes=ALLOCNODES statecompact=STATE statelong=STATE
user=USER userlong=USER version=VERSION cluster=CLUSTER weight=WEIGHT sockets=SOCKETS
cores=CORES threads=THREADS socketcorethread=S:C:T allocmem=ALLOCMEM comment=COMMENT
extra=EXTRA gresused=GRES_USED port=PORT statecomplete=STATECOMPLETE
"""
HEADERS = dict(item.split("=") for item in _HEADER_TEXT.split())
_ALIASES = {"share": "oversubscribe"}
# fields that never split lines
_NO_FLAG = {"nodeai", "nodes", "nodeaiot", "nodelist", "allocnodes", "cluster"}
_FLAG_OF = {"cpusstate": "cpus", "partitionname": "partition", "statelong": "state",
            "statecompact": "state", "user": "reason_user", "userlong": "reason_user"}  # fmt: skip
NODE_STR_FLAGS = ("extra", "features", "features_act", "gres", "gresused", "comment",
                   "reason", "timestamp", "reason_user")  # fmt: skip
EXACT_FLAGS = ("cpus", "sockets", "cores", "threads", "socketcorethread", "disk", "memory",
                "weight", "cpusload", "freemem", "port", "version")  # fmt: skip
_UNCUT_HEADERS = {"nodelist", "nodehost", "nodeaddr"}

# node state numbers (slurm.h): base in the low bits, flags above
_BASE_NUM = {"UNKNOWN": 0, "DOWN": 1, "IDLE": 2, "ALLOCATED": 3, "MIXED": 5, "FUTURE": 6}
_FLAG_BITS = {
    "NET": 0x10, "RESERVED": 0x20, "CLOUD": 0x80, "DRAIN": 0x200, "COMPLETING": 0x400,
    "NOT_RESPONDING": 0x800, "POWERED_DOWN": 0x1000, "FAIL": 0x2000, "POWERING_UP": 0x4000,
    "MAINT": 0x8000, "MAINTENANCE": 0x8000, "REBOOT_REQUESTED": 0x10000,
    "POWERING_DOWN": 0x40000, "REBOOT_ISSUED": 0x100000, "PLANNED": 0x200000,
    "INVALID_REG": 0x400000, "POWER_DOWN": 0x800000, "POWER_UP": 0x1000000,
}  # fmt: skip
DRAIN, COMPLETING, NO_RESPOND = 0x200, 0x400, 0x800
FLAG_MASK = ~0xF


class Query:
    """Which partitions to show and how to group their nodes."""

    __slots__ = ("node_mode", "exact", "list_reasons", "partitions")

    def __init__(
        self,
        node_mode: bool = False,  # -N
        exact: bool = False,  # -e
        list_reasons: bool = False,  # -R
        partitions: list[str] | None = None,  # -p
    ) -> None:
        self.node_mode, self.exact, self.list_reasons = node_mode, exact, list_reasons
        self.partitions = partitions


class Group:
    """One output line: a partition and the nodes that look alike in it.

    ``first`` is the line's first node (its node columns describe it),
    ``mins``/``maxs`` the ranges of the numeric attributes, ``n_*`` the
    node counts (allocated, idle, other) and ``c_*`` the CPU counts.
    """

    __slots__ = ("part", "part_inx", "first", "nodes", "addrs", "hosts", "state", "mins",
                 "maxs", "n_alloc", "n_idle", "n_other", "c_alloc", "c_idle", "c_other",
                 "c_total", "alloc_mem")  # fmt: skip

    def __init__(
        self, part: PartitionInfo | None, part_inx: int, first: NodeInfo | None = None
    ) -> None:
        self.part, self.part_inx, self.first = part, part_inx, first
        self.nodes: list[str] = []
        self.addrs: list[str] = []
        self.hosts: list[str] = []
        self.state = 0
        self.mins: dict[str, float] = {}
        self.maxs: dict[str, float] = {}
        self.n_alloc = self.n_idle = self.n_other = 0
        self.c_alloc = self.c_idle = self.c_other = self.c_total = 0
        self.alloc_mem = 0

    @property
    def total(self) -> int:
        return len(self.nodes)


# ------------------------------------------------------------ format parsing


# The grammar and the Column are cli.format_codes'; a column's key is its -O name.
_EVERY_LETTER = (
    "%a"
    + "".join(f"|%{c}" for c in "bcdefghijklmnopqrstuvwxyz")
    + "".join(f"|%{c} " for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
)


def parse_format(fmt: str) -> tuple[list[Column], list[str]]:
    """``-o`` text -> columns, plus the warnings sinfo prints (and goes on); ``%all``
    is every letter sinfo knows, the others skipped silently."""
    return parse_letters(fmt, LETTERS, "node", every=_EVERY_LETTER)


def _long_key(name: str) -> str | None:
    key = _ALIASES.get(name.lower(), name.lower())
    return key if key in HEADERS or key == "all" else None


def parse_long_format(fmt: str) -> tuple[list[Column], list[str]]:
    """``-O`` text -> columns, plus ``sinfo: error:`` warnings (sinfo goes on);
    ``all`` stands for every ``%`` letter."""
    columns, errors = parse_names(fmt, _long_key, skip_space=True)
    if any(c.key == "all" for c in columns):
        every = parse_format("%all")[0]
        columns = [c for col in columns for c in (every if col.key == "all" else [col])]
    return columns, errors


def match_flags(fields: Iterable[Column]) -> set[str]:
    """The attributes that split lines, given the displayed fields."""
    keys = {f.key for f in fields if f.shown} - _NO_FLAG
    return {_FLAG_OF.get(k, k) for k in keys}


# ------------------------------------------------------------------ nodes


def node_state(node: NodeInfo) -> int:
    """Slurm's node state number; a partly used, undrained node counts as MIXED."""
    flags = {f.upper() for f in node.flags}
    base = node.state.upper()
    if base == "COMPLETING":
        base, flags = "IDLE", flags | {"COMPLETING"}
    number = _BASE_NUM.get(base, 0)
    for flag in flags:
        number |= _FLAG_BITS.get(flag, 0)
    if not number & DRAIN and 0 < node.alloc_cpus < node.cpus and number & 0xF == 3:
        number = (number & FLAG_MASK) | 5
    return number


def _state_parts(number: int) -> tuple[str, list[str]]:
    base = next((b for b, n in _BASE_NUM.items() if n == number & 0xF), "UNKNOWN")
    flags = [f for f, bit in _FLAG_BITS.items() if number & bit and f != "MAINTENANCE"]
    return base, flags


def state_text(number: int, form: str) -> str:
    """``compact`` (%t), ``long`` (%T) or ``complete`` text of a state number."""
    base, flags = _state_parts(number)
    if form == "complete":
        return states.node_state_long(base, flags).lower()
    return states.node_state_sinfo(base, flags, long=form == "long")


def sct(node: NodeInfo) -> tuple[int, int, int]:
    sockets = getattr(node, "sockets", None) or node.cpus
    return sockets, getattr(node, "cores", None) or 1, getattr(node, "threads", None) or 1


def gres_used(node: NodeInfo) -> str:
    """``GresUsed``: ``gpu:(null):1(IDX:0)``, ``gpu:a100:0(IDX:N/A)``, ``(null)``.

    GPUs used outside slurmlite count as used (``NodeInfo.outside_gpus``)."""
    if not node.gres or node.gres == "(null)" or not node.gpus:
        return "(null)"
    parts = node.gres.split(":")
    kind = parts[1] if len(parts) > 2 else "(null)"
    used = sorted({*node.alloc_gpus, *node.outside_gpus})
    return f"{parts[0]}:{kind}:{len(used)}(IDX:{_ranges(used) if used else 'N/A'})"


def _ranges(values: Sequence[int]) -> str:
    """Sorted GPU indices as Slurm's bitmap text: [0, 1, 3] -> ``0-1,3``."""
    runs: list[list[int]] = []
    for v in values:
        if runs and runs[-1][1] == v - 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


NUMERIC_ATTRS = {  # attribute -> value of one node (None = unset, shown as N/A)
    "cpus": lambda n: n.cpus, "sockets": lambda n: sct(n)[0], "cores": lambda n: sct(n)[1],
    "threads": lambda n: sct(n)[2], "disk": lambda n: getattr(n, "tmp_disk", 0) or 0,
    "memory": lambda n: n.real_memory, "weight": lambda n: n.weight,
    "cpusload": lambda n: n.cpu_load, "freemem": lambda n: n.free_mem,
}  # fmt: skip
NODE_ATTRS = {
    "extra": lambda n: getattr(n, "extra", None), "comment": lambda n: getattr(n, "comment", None),
    "features": lambda n: ",".join(n.features) or None, "gres": lambda n: n.gres,
    "features_act": lambda n: ",".join(n.features) or None, "gresused": gres_used,
    "reason": lambda n: n.reason, "timestamp": lambda n: n.reason_time,
    "reason_user": lambda n: n.reason_user, "port": lambda n: n.port,
    "version": lambda n: n.version,
}  # fmt: skip


def as_number(value: float | None) -> float:
    return float("inf") if value is None else value


# --------------------------------------------------------------- rendering


def _no_uid(name: str) -> int | None:
    return None


class Context:
    """What a cell may need besides its line."""

    __slots__ = ("convert", "cluster", "uid_of", "part_width", "node_width")

    def __init__(
        self,
        convert: bool = True,  # False with --noconvert
        cluster: str | None = None,  # set only with -M
        uid_of: Callable[[str], int | None] = _no_uid,
        part_width: int = 0,  # >0: default formats size PARTITION to this
        node_width: int = 0,  # >0: default -N formats size NODELIST to this
    ) -> None:
        self.convert, self.cluster, self.uid_of = convert, cluster, uid_of
        self.part_width, self.node_width = part_width, node_width


def convert_num(value: float, convert: bool = True) -> str:
    """Counts as sinfo prints them: 2048 -> ``2K``, 2560 -> ``2.50K``, 1000 -> ``1000``.

    Slurm divides by 1024 while the value stays a multiple of 512 (so halves
    are still "exact"); ``--noconvert`` turns this off.
    """
    num, unit = float(value), 0
    if int(num) == 0:
        return "0"
    while convert and num >= 1024 and int(num) % 512 == 0 and unit < 5:
        num, unit = num / 1024, unit + 1
    suffix = " KMGTP"[unit].strip()
    return f"{int(num)}{suffix}" if num == int(num) else f"{num:.2f}{suffix}"


def _min_max(g: Group, name: str, fmt: Callable[[float], str], ranged: bool) -> str:
    lo, hi = g.mins.get(name, 0), g.maxs.get(name, 0)
    if lo == hi:
        return fmt(hi)
    return f"{fmt(lo)}-{fmt(hi)}" if ranged else f"{fmt(lo)}+"


def _partition_text(g: Group, width: int, star: bool) -> str:
    if g.part is None:
        return "n/a"
    name = g.part.name
    if star and g.part.default:
        name = name + "*" if len(name) < width or width == 0 else name[: width - 1] + "*"
    return name


_AVAIL = {"UP": "up", "DOWN": "down", "DRAIN": "drain", "INACTIVE": "inactive"}


def _cell(key: str, g: Group, width: int, ctx: Context) -> str:
    part, node = g.part, g.first
    plain = lambda v: str(int(v))  # noqa: E731
    conv = lambda v: convert_num(v, ctx.convert)  # noqa: E731
    na = lambda v: "N/A" if v == float("inf") else f"{v:.2f}"  # noqa: E731
    na_int = lambda v: "N/A" if v == float("inf") else str(int(v))  # noqa: E731
    if key in ("statecompact", "statelong", "statecomplete"):
        if not g.total:
            return "n/a"
        return state_text(g.state, key[5:])
    if key in ("partition", "partitionname"):
        return _partition_text(g, width, key == "partition")
    if key in ("available", "time", "defaulttime", "groups", "allocnodes", "root", "size"):
        if part is None:
            return "n/a"
        default = part.default_time
        return {
            "available": _AVAIL.get(part.state.upper(), "unknown"),
            "time": timefmt.fmt_limit_sinfo(part.max_time),
            "defaulttime": "n/a" if default is None else timefmt.fmt_compact(default * 60),
        }.get(key) or {"groups": "all", "allocnodes": "all", "root": "no", "size": "1-infinite"}[
            key
        ]
    simple: dict[str, Callable[[], str]] = {
        "nodes": lambda: str(g.total),
        "nodeai": lambda: f"{g.n_alloc}/{g.n_idle}",
        "nodeaiot": lambda: f"{g.n_alloc}/{g.n_idle}/{g.n_other}/{g.total}",
        "cpusstate": lambda: f"{g.c_alloc}/{g.c_idle}/{g.c_other}/{g.c_total}",
        "nodelist": lambda: hostlist.compress_sorted(g.nodes) if g.nodes else "",
        "nodeaddr": lambda: hostlist.compress(g.addrs) if g.addrs else "",
        "nodehost": lambda: hostlist.compress(g.hosts) if g.hosts else "",
        "cpus": lambda: _min_max(g, "cpus", conv, False),
        "sockets": lambda: _min_max(g, "sockets", conv, False),
        "cores": lambda: _min_max(g, "cores", conv, False),
        "threads": lambda: _min_max(g, "threads", conv, False),
        "socketcorethread": lambda: ":".join(
            _min_max(g, n, conv, False) for n in ("sockets", "cores", "threads")
        ),
        "disk": lambda: _min_max(g, "disk", plain, False),
        "memory": lambda: _min_max(g, "memory", na_int, False),
        "weight": lambda: _min_max(g, "weight", plain, False),
        "cpusload": lambda: _min_max(g, "cpusload", na, True),
        "freemem": lambda: _min_max(g, "freemem", na_int, True),
        "allocmem": lambda: str(g.alloc_mem),
        "oversubscribe": lambda: "NO",
        "preemptmode": lambda: "OFF",
        "maxcpuspernode": lambda: "UNLIMITED",
        "priorityjobfactor": lambda: str(part.priority_job_factor) if part else "n/a",
        "prioritytier": lambda: str(part.priority_tier) if part else "n/a",
        "cluster": lambda: ctx.cluster or "N/A",
    }
    if key in simple:
        return simple[key]()
    if node is None:  # an empty partition's line
        return {"reason": "none", "timestamp": "Unknown", "user": "Unknown",
                "userlong": "Unknown", "version": "N/A"}.get(key, "(null)")  # fmt: skip
    if key == "reason":
        return "none" if not node.reason or node.reason.startswith("(null)") else node.reason
    if key == "timestamp":
        return timefmt.fmt_timestamp(node.reason_time, none="Unknown")
    if key in ("user", "userlong"):
        if not node.reason_user:
            return "Unknown"
        uid = ctx.uid_of(node.reason_user) if key == "userlong" else None
        return node.reason_user if uid is None else f"{node.reason_user}({uid})"
    if key == "version":
        return node.version or "N/A"
    if key == "port":
        return str(node.port)
    value = NODE_ATTRS[key](node) if key in NODE_ATTRS else None
    return "(null)" if value is None else str(value)


def render(
    groups: Sequence[Group], fields: Sequence[Column], ctx: Context, header: bool = True
) -> list[str]:
    """Header (optional) and one text line per group, no newlines."""
    lines: list[str] = []
    rows: list[Group | None] = ([None] if header else []) + list(groups)
    for g in rows:
        out: list[str] = []
        for f in fields:
            width = f.width
            if f.key in ("partition", "partitionname") and ctx.part_width:
                width = ctx.part_width
            if f.key in ("nodelist", "nodehost") and ctx.node_width:
                width = ctx.node_width
            if not f.shown:
                pass  # literal text: the suffix only
            elif g is None:
                out.append(pad(HEADERS[f.key], width, f.right, f.key not in _UNCUT_HEADERS))
            else:
                out.append(pad(_cell(f.key, g, width, ctx), width, f.right))
            out.append(f.suffix)
        lines.append("".join(out))
    return lines


def part_field_size(groups: Iterable[Group]) -> int:
    """Width of PARTITION in the default formats: longest name (+1 for ``*``), at least 9."""
    sizes = [len(g.part.name) + g.part.default for g in groups if g.part is not None]
    return max([9, *sizes])


def node_field_size(groups: Iterable[Group]) -> int:
    """Width of NODELIST in the default ``-N`` formats: longest list, at least 9."""
    return max([9, *(len(hostlist.compress_sorted(g.nodes)) for g in groups if g.nodes)])
