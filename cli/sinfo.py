"""sinfo: partitions and nodes as Slurm 22.05's sinfo shows them (spec §8.2).

Pipeline (``main`` does the I/O; every other function here is pure; fields
and cells live in :mod:`cli.sinfo_format`)::

    options -> format choice -> client.get_partitions() + get_nodes()
            -> node filters -> build_groups -> sort_groups -> sf.render

(the node filters, ``-n``/``-d``/``-r``/``-t``, live in :mod:`cli.sinfo_filter`)

Format choice, first match wins: ``-o``/``-O`` as given; ``-s``; ``-N``
(``-l``: long node list); ``-R``; ``SINFO_FORMAT``; the default (``-l``:
long).  ``-l`` (and ``-i``, ``-v``) print the date first, ``-h`` drops the
header and the date.  ``-o`` together with ``-l`` is refused.

Grouping (re-told from real sinfo): every displayed field is a *match flag*;
two nodes share a line only if they agree on every displayed attribute
(partition, state, reason, GRES...).  Sizes (CPUs, memory...) split lines
only with ``-e``, otherwise a line shows ranges such as ``2+``.  Each
(partition, node) pair goes to the first line that matches, else starts a
line.  Without ``-N`` every selected partition has a line even with no nodes
(state ``n/a``); with ``-N`` every pair is its own line.  Invariant: a
selected node appears once per selected partition holding it, and the node
columns of a line describe its first node.

Sorting: the spec (``-S``, default ``#P,-t`` = partitions in configuration
order, then node-state *number* descending, so ``down*`` (1 + 0x800) lists
before ``mix`` (5) and ``idle`` (2); with ``-N``: ``N``) is applied key by
key from last to first with a stable sort.

Example (golden ``50_sinfo_s.txt``)::

    $ sinfo -s
    PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T) NODELIST
    debug*       up   infinite          2/0/0/2 n[1-2]

Facts from Slurm 22.05 ``src/sinfo/{opts,sinfo,sort}.c``, in our own words.
"""

from __future__ import annotations

import pwd
import re
import sys
import time
from collections.abc import Callable, Sequence

from cli import sinfo_format as sf
from cli.common import (
    answered_info,
    error,
    exit_from,
    get_client,
    parse_options,
    perror,
    reported,
)
from cli.format_codes import Column
from cli.sinfo_filter import VALID_STATES, NodeFilter, node_selected, parse_states
from slurmlite import hostlist
from slurmlite.errors import CommandLineError, SlurmError
from slurmlite.options import SINFO

TYPE_CHECKING = False  # importing typing costs a command ~3 ms; annotations are
if TYPE_CHECKING:  # strings, so only type checkers need these names
    from typing import Any

if TYPE_CHECKING:  # records are client Records (tests: these dataclasses)
    from cli.client import ControllerClient
    from slurmlite.getopt import ParsedOptions
    from slurmlite.protocol import NodeInfo, PartitionInfo

PROG = "sinfo"


def _uid_of(name: str) -> int | None:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


# --------------------------------------------------------------- grouping


def _match_part(g: sf.Group, part: PartitionInfo, flags: set[str], query: sf.Query) -> bool:
    if query.list_reasons or g.part is part:
        return True
    if g.part is None:
        return False
    if "partition" in flags and g.part.name != part.name:
        return False
    checks = {"available": "state", "time": "max_time", "defaulttime": "default_time",
              "prioritytier": "priority_tier", "priorityjobfactor": "priority_job_factor"}  # fmt: skip
    return all(
        getattr(g.part, attr) == getattr(part, attr) for f, attr in checks.items() if f in flags
    )


def _match_node(g: sf.Group, node: NodeInfo, flags: set[str], query: sf.Query) -> bool:
    first = g.first
    if query.node_mode or first is None:
        return False
    if "nodehost" in flags and node.hostname not in g.hosts:
        return False
    if "nodeaddr" in flags and node.addr not in g.addrs:
        return False
    for name in sf.NODE_STR_FLAGS:
        if name in flags and sf.NODE_ATTRS[name](node) != sf.NODE_ATTRS[name](first):
            return False
    number = sf.node_state(node)
    for flag, form in (("state", "long"), ("statecomplete", "complete")):
        if flag in flags and sf.state_text(number, form) != sf.state_text(g.state, form):
            return False
    if "allocmem" in flags and node.alloc_mem != g.alloc_mem:
        return False
    if not query.exact:
        return True
    for name in (n for n in sf.EXACT_FLAGS if n in flags):
        if name == "socketcorethread":
            same = sf.sct(node) == sf.sct(first)
        elif name in ("port", "version"):
            same = sf.NODE_ATTRS[name](node) == sf.NODE_ATTRS[name](first)
        else:
            same = sf.as_number(sf.NUMERIC_ATTRS[name](node)) == g.mins[name]
        if not same:
            return False
    return True


def _add(g: sf.Group, node: NodeInfo, flags: set[str]) -> None:
    if g.first is None:
        g.first, g.state = node, sf.node_state(node)
    elif node.name in g.nodes:
        return
    for name, get in sf.NUMERIC_ATTRS.items():
        value = sf.as_number(get(node))
        g.mins[name] = min(g.mins.get(name, value), value)
        g.maxs[name] = max(g.maxs.get(name, value), value)
    g.nodes.append(node.name)
    if "nodeaddr" in flags and node.addr not in g.addrs:
        g.addrs.append(node.addr)
    if "nodehost" in flags and node.hostname not in g.hosts:
        g.hosts.append(node.hostname)
    number = sf.node_state(node)
    used = min(node.alloc_cpus, node.cpus)
    out = bool(number & sf.DRAIN) or number & 0xF == 1  # drained or down: "other"
    if number & 0xF in (3, 5) or number & sf.COMPLETING:
        g.n_alloc += 1
    elif out:
        g.n_other += 1
    else:
        g.n_idle += 1
    g.c_alloc, g.c_total = g.c_alloc + used, g.c_total + node.cpus
    if out:
        g.c_other += node.cpus - used
    else:
        g.c_idle += node.cpus - used
    g.alloc_mem = node.alloc_mem


def build_groups(
    partitions: Sequence[PartitionInfo],
    nodes: Sequence[NodeInfo],
    fields: Sequence[Column],
    query: sf.Query,
) -> list[sf.Group]:
    """Fold (partition, node) pairs into lines (module doc, steps 2-3).

    ``nodes`` are the nodes that passed the command's filters, in node-table order.
    """
    flags = sf.match_flags(fields)
    wanted = [(j, p) for j, p in enumerate(partitions)
              if query.partitions is None or p.name in query.partitions]  # fmt: skip
    groups: list[sf.Group] = []
    if not query.node_mode and "partition" in flags:
        groups = [sf.Group(p, j) for j, p in wanted]
    # -N: pairs of one node list the later partition first, as real sinfo does
    for j, part in reversed(wanted) if query.node_mode else wanted:
        members = set(part.nodes)
        for node in (n for n in nodes if n.name in members):
            target = next(
                (g for g in groups
                 if _match_part(g, part, flags, query)
                 and (g.first is None or _match_node(g, node, flags, query))),
                None,
            )  # fmt: skip
            if target is None:
                target = sf.Group(part, j)
                groups.append(target)
            _add(target, node, flags)
    return groups


# ---------------------------------------------------------------- sorting


_PART_STATE_NUM = {"INACTIVE": 0, "DOWN": 1, "DRAIN": 2, "UP": 3}


def _first_host(names: Sequence[str]) -> tuple:
    ordered = hostlist.sort_hosts(names)
    if not ordered:
        return ("", -1)
    m = re.match(r"(.*?)(\d*)$", ordered[0])
    assert m is not None
    return (m[1], int(m[2]) if m[2] else -1)


def _sort_key(letter: str, part_order: bool) -> Callable[[sf.Group], Any] | None:
    def part(attr: str, default: object = 0) -> Callable[[sf.Group], Any]:
        return lambda g: default if g.part is None else getattr(g.part, attr)

    def first(attr: str) -> Callable[[sf.Group], Any]:
        return lambda g: "" if g.first is None else str(sf.NODE_ATTRS[attr](g.first) or "")

    keys: dict[str, Callable[[sf.Group], Any]] = {
        "a": lambda g: _PART_STATE_NUM.get(g.part.state.upper(), 0) if g.part else 0,
        "A": lambda g: g.n_alloc, "F": lambda g: g.n_alloc, "D": lambda g: g.total,
        "b": first("features_act"), "f": first("features"), "E": first("reason"),
        "u": first("reason_user"), "U": first("reason_user"),
        "H": lambda g: (g.first.reason_time or 0) if g.first else 0,
        "l": lambda g: float("inf") if g.part is None or g.part.max_time is None
        else g.part.max_time,
        "p": part("priority_tier"), "S": part("priority_job_factor"),
        "N": lambda g: _first_host(g.nodes), "n": lambda g: _first_host(g.hosts),
        "o": lambda g: _first_host(g.addrs), "t": lambda g: g.state, "T": lambda g: g.state,
        "P": (lambda g: g.part_inx) if part_order else part("name", ""),
        "R": (lambda g: g.part_inx) if part_order else part("name", ""),
    }  # fmt: skip
    for letter2, name in (("c", "cpus"), ("d", "disk"), ("m", "memory"), ("w", "weight"),
                          ("O", "cpusload"), ("e", "freemem"), ("X", "sockets"),
                          ("Y", "cores"), ("Z", "threads")):  # fmt: skip
        keys[letter2] = lambda g, name=name: g.mins.get(name, 0)
    keys["z"] = lambda g: (
        g.mins.get("sockets", 0),
        g.mins.get("cores", 0),
        g.mins.get("threads", 0),
    )
    return keys.get(letter)


def sort_groups(groups: list[sf.Group], spec: str) -> None:
    """Sort in place by a sinfo ``-S`` spec (``#P,-t``), last key first, stably."""
    for i in range(len(spec) - 1, -1, -1):
        if spec[i] in ",#+-":
            continue
        key = _sort_key(spec[i], i > 0 and spec[i - 1] == "#")
        if key is not None:
            groups.sort(key=key, reverse=i > 0 and spec[i - 1] == "-")


# ------------------------------------------------------------------ main


def choose_format(opts: ParsedOptions) -> tuple[list[Column], list[str], bool, bool]:
    """Fields, warnings, node-column sizing, partition-column sizing."""
    get, flag = opts.get, opts.flag
    fmt = get("format")
    from_env = opts.sources.get("format") == "env"
    if get("Format") is not None:
        return (*sf.parse_long_format(get("Format")), False, False)
    if fmt is not None and not (from_env and (flag("Node") or flag("list_reasons"))):
        return (*sf.parse_format(fmt), False, False)
    long = flag("long")
    if flag("summarize"):
        return (*sf.parse_long_format(sf.SUMMARIZE_FORMAT), False, True)
    if flag("Node"):
        text = sf.NODE_LONG_FORMAT if long else sf.NODE_FORMAT
        return (*sf.parse_long_format(text), True, True)
    if flag("list_reasons"):
        text = sf.REASONS_LONG_FORMAT if long else sf.REASONS_FORMAT
        return (*sf.parse_long_format(text), False, False)
    text = sf.LONG_FORMAT if long else sf.DEFAULT_FORMAT
    return (*sf.parse_long_format(text), False, True)


def build_query(opts: ParsedOptions) -> tuple[sf.Query, NodeFilter]:
    get, flag = opts.get, opts.flag
    q = sf.Query(node_mode=flag("Node"), exact=flag("exact"), list_reasons=flag("list_reasons"))
    f = NodeFilter(dead=flag("dead"), responding=flag("responding"))
    if get("partition") is not None:
        q.partitions = [p for p in get("partition").split(",") if p]
    if get("nodes") is not None:
        try:
            f.nodes = set(hostlist.expand(get("nodes")))
        except ValueError:
            raise CommandLineError(
                [f"{PROG}: error: '{get('nodes')}' invalid entry for --nodes"]
            ) from None
    states = get("states")
    if states is None and q.list_reasons:
        states, f.outside = "down,fail,drain", True
    if states is not None:
        try:
            f.states, f.states_and = parse_states(states)
        except ValueError as exc:
            raise CommandLineError(
                [f"{PROG}: error: {exc}", f"{PROG}: error: valid states: {VALID_STATES}"]
            ) from None
    return q, f


def report(client: ControllerClient, fields: list[Column], query: tuple[sf.Query, NodeFilter],
           opts: ParsedOptions, sizes: tuple[bool, bool]) -> list[str]:  # fmt: skip
    """Fetch and render one listing (raises SlurmError, CommandLineError)."""
    try:
        partitions = client.get_partitions()
    except SlurmError as exc:
        raise CommandLineError([f"slurm_load_partitions: {exc}"]) from None
    try:
        nodes = client.get_nodes()
    except SlurmError as exc:
        raise CommandLineError([f"slurm_load_node: {exc}"]) from None
    q, node_filter = query
    if node_filter.nodes is not None and len(node_filter.nodes) == 1:
        if not any(n.name in node_filter.nodes for n in nodes):
            raise CommandLineError(["slurm_load_node: Invalid node name specified"])
    kept = [n for n in nodes if node_selected(n, node_filter)]
    groups = build_groups(partitions, kept, fields, q)
    sort_groups(groups, opts.get("sort") or ("N" if q.node_mode else "#P,-t"))
    node_sized, part_sized = sizes
    ctx = sf.Context(
        convert=not opts.flag("noconvert"),
        uid_of=_uid_of,
        part_width=sf.part_field_size(groups) if part_sized else 0,
        node_width=sf.node_field_size(groups) if node_sized else 0,
    )
    return sf.render(groups, fields, ctx, header=not opts.flag("noheader"))


def run(argv: Sequence[str]) -> int:
    opts = parse_options(SINFO, argv)
    if answered_info(opts, PROG):
        return 0
    if opts.flag("all") and opts.has("partition"):
        env = opts.sources.get("all") == opts.sources.get("partition") == "env"
        which = "SINFO_ALL and SINFO_PARTITION" if env else "-a and -p"
        error(PROG, f"Conflicting options, {which}, specified. Please choose one or the other.")
        return 1
    m = re.match(r"\s*([+-]?\d+)", opts.get("iterate") or "")  # atoi: "5s" is 5
    iterate = int(m[1]) if m else 0
    if opts.has("iterate") and iterate <= 0:
        error(PROG, f"Error: invalid entry for --iterate={opts.get('iterate')}")
        return 1
    if opts.flag("long") and opts.has("format") and opts.sources.get("format") != "env":
        print(f"{PROG}: fatal: Options -o(--format) and -l(--long) are mutually exclusive. "
              "Please remove one and retry.", file=sys.stderr)  # fmt: skip
        return 1
    fields, warnings, node_sized, part_sized = choose_format(opts)
    for line in warnings:
        print(
            line if line.startswith("Invalid node") else f"{PROG}: error: {line}", file=sys.stderr
        )
    try:
        query = build_query(opts)
        client = get_client(PROG)
    except CommandLineError as exc:
        return reported(exc)
    except SlurmError as exc:
        perror("slurm_load_partitions", exc)
        return 1
    if opts.flag("json"):  # filters apply; format options and -i do not (cli/json_out.py)
        from cli.json_nodes import print_sinfo

        return print_sinfo(client, *query, node_selected)
    dated = not opts.flag("noheader") and (iterate or opts.count("verbose") or opts.flag("long"))
    while True:
        if dated:
            print(time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(time.time())))
        try:
            lines = report(client, fields, query, opts, (node_sized, part_sized))
        except CommandLineError as exc:
            code = reported(exc)
            if not iterate:
                return code
            lines = []
        for line in lines:
            print(line)
        if not iterate:
            return 0
        print()
        sys.stdout.flush()
        time.sleep(iterate)


def main(argv: Sequence[str] | None = None) -> None:
    exit_from(run, argv)


if __name__ == "__main__":
    main()
