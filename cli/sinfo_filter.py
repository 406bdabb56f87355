"""sinfo's node filters: ``-n``, ``-d``, ``-r`` and ``-t``, which nodes count at all.

A node passes when every filter given holds (``node_selected``):

* ``-n NODES``: its name is in the hostlist;
* ``-d`` / ``-r``: it does (not) respond (the NO_RESPOND flag, ``*``);
* ``-t STATES``: its state matches one of the listed states, or all of them
  when they are joined with ``&`` (``-t drain&down``).  State words may be
  abbreviated to any prefix of Slurm's name or compact form (``i`` is IDLE,
  ``alloc`` ALLOCATED, ``drng`` DRAINING); ``all`` is every base state plus
  DRAIN and COMPLETING.  A bad word is refused with Slurm's text
  (``Bad state string: "x"``) and the list of valid states
  (:data:`VALID_STATES`).

The states are Slurm's node state *numbers* (``cli.sinfo_format.node_state``):
a base state in the low four bits (0 unknown, 1 down, 2 idle, 3 allocated,
5 mixed, ...) plus flags (DRAIN, COMPLETING, NO_RESPOND, ...).  Drain has
three readings, as in real sinfo: ``drain`` is the flag alone, ``draining``
the flag on a node still running jobs (allocated, mixed or completing), and
``drained`` the flag on a node with nothing left.  ``allocated`` matches
any node with allocated CPUs (so mixed nodes too).

Example: ``sinfo -t idle,mix -r`` keeps responding nodes that are idle or
mixed; ``sinfo -R`` without ``-t`` also lists nodes whose GPUs are in use
outside slurmlite (``NodeFilter.outside``).

Facts from Slurm 22.05 ``src/sinfo/opts.c`` and ``src/sinfo/sinfo.c``, in our
own words.
"""

from __future__ import annotations

import re

from cli import sinfo_format as sf

TYPE_CHECKING = False  # importing typing costs a command ~3 ms
if TYPE_CHECKING:
    from slurmlite.protocol import NodeInfo


VALID_STATES = (
    "unknown,down,idle,allocated,?,mixed,future,drain,drained,draining,no_respond,reserved,"
    "perfctrs,cloud,completing,powering_down,powered_down,power_down,powering_up,fail,maint,"
    "reboot,reboot^,unknown"
)
_STATE_WORDS = (  # name (or compact) prefix -> state number, tried in this order
    (("UNKNOWN", "UNK"), 0), (("DOWN",), 1), (("IDLE",), 2), (("ALLOCATED", "ALLOC"), 3),
    (("MIXED", "MIX"), 5), (("FUTURE", "FUTR"), 6), (("PLANNED", "PLND"), 0x200000),
    (("DRAIN",), sf.DRAIN), (("DRAINED",), sf.DRAIN | 2), (("RESV", "RESERVED"), 0x20),
    (("PERFCTRS", "NPC"), 0x10), (("DRAINING", "DRNG"), sf.DRAIN | 3),
    (("COMPLETING", "COMP"), sf.COMPLETING), (("NO_RESPOND",), sf.NO_RESPOND),
    (("POWERING_DOWN", "POWRNG_DN"), 0x40000), (("POWERED_DOWN", "POW_DN"), 0x1000),
    (("POWER_DOWN",), 0x800000), (("POWERING_UP", "POW_UP"), 0x4000), (("FAIL",), 0x2000),
    (("MAINT",), 0x8000), (("REBOOT",), 0x10000), (("REBOOT^",), 0x100000), (("CLOUD",), 0x80),
)  # fmt: skip


class NodeFilter:
    """``-n``, ``-d``, ``-r``, ``-t``: which nodes count at all."""

    __slots__ = ("nodes", "dead", "responding", "states", "states_and", "outside")

    def __init__(
        self,
        nodes: set[str] | None = None,
        dead: bool = False,
        responding: bool = False,
        states: list[int] | None = None,
        states_and: bool = False,
        outside: bool = False,  # -R without -t: nodes with GPUs used outside slurmlite too
    ) -> None:
        self.nodes, self.dead, self.responding = nodes, dead, responding
        self.states, self.states_and, self.outside = states, states_and, outside


def parse_states(text: str) -> tuple[list[int], bool]:
    """``-t`` text -> (state numbers, all-must-match); ValueError names the bad word."""
    if text.lower() == "all":
        return list(range(7)) + [sf.DRAIN, sf.COMPLETING], False
    wanted: list[int] = []
    for word in filter(None, re.split(r"[,&]", text)):
        up = word.upper()
        number = next((n for names, n in _STATE_WORDS if any(x.startswith(up) for x in names)), -1)
        if number < 0:
            raise ValueError(f'Bad state string: "{word}"')
        wanted.append(number)
    return wanted, "&" in text


def _is_draining(number: int) -> bool:
    return bool(number & sf.DRAIN) and (number & 0xF in (3, 5) or bool(number & sf.COMPLETING))


def _wanted(node_number: int, alloc_cpus: int, want: int) -> bool:
    if want == sf.DRAIN:
        return bool(node_number & sf.DRAIN)
    if _is_draining(want):
        return _is_draining(node_number)
    if want & sf.DRAIN:  # drained = drain flag, not draining
        return bool(node_number & sf.DRAIN) and not _is_draining(node_number)
    if want & sf.FLAG_MASK:
        return bool(want & node_number)
    if want == 3:
        return alloc_cpus > 0
    return node_number & 0xF == want


def node_selected(node: NodeInfo, query: NodeFilter) -> bool:
    """sinfo's node filters: -n, -d, -r, -t (``all`` must hold with ``&``)."""
    number = sf.node_state(node)
    if query.nodes is not None and node.name not in query.nodes:
        return False
    if query.dead and not number & sf.NO_RESPOND:
        return False
    if query.responding and number & sf.NO_RESPOND:
        return False
    if query.outside and node.outside_gpus:
        return True
    if query.states:
        hits = [_wanted(number, node.alloc_cpus, w) for w in query.states]
        return all(hits) if query.states_and else any(hits)
    return True
