"""scontrol: look at and change the controller's state, Slurm 22.05 style.

``scontrol [options] <keyword> [args]`` runs one command; without a keyword
it reads commands from stdin (prompt ``scontrol: ``) until ``exit``/``quit``
or end of input.  Keywords match case-insensitively by prefix, each with a
minimum length, in Slurm's order (``show`` needs 3 letters, ``update`` 1,
``hold`` all 4); anything else is ``invalid keyword: X`` (exit 1).

Implemented here:

* ``show job [id]`` / ``node [names]`` / ``partition [name]`` / ``config``
  (records from ``cli/scontrol_show.py``, or with ``--json`` from
  ``cli/scontrol_json.py``); an unknown single job is
  ``slurm_load_jobs error: Invalid job id specified`` (exit 1);
* ``show hostnames [hl]`` (default ``$SLURM_JOB_NODELIST``, then
  ``$SLURM_NODELIST``), ``show hostlist`` (as-is), ``show hostlistsorted``:
  local, no controller;
* ``update NodeName=<hl> State=DRAIN|RESUME|DOWN|UNDRAIN|IDLE Reason=...``
  (a reason is required to drain or down a node; admins only);
* ``hold``, ``uhold``, ``release``, ``requeue``, ``requeuehold``, ``update JobId=``
  (``cli/scontrol_jobs.py``: TimeLimit, JobName, Comment, Partition, Requeue);
* ``reconfigure`` (admins), ``ping``, ``version`` and the mode words (``oneliner``,
  ``details``, ``quiet``, ``verbose``, ``all``, ``hide``).

``suspend``, ``resume``, ``top`` and other job changes print
``scontrol: error: <verb> is not supported yet`` (exit 1).

Facts from Slurm 22.05 ``src/scontrol/`` (spec §8.4), in our own words.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence

from cli import scontrol_jobs as jobs
from cli import scontrol_json as as_json
from cli import scontrol_show as show
from cli.common import (
    answered_info,
    argv_or_default,
    command_lines,
    get_client,
    parse_options,
    print_version,
)
from slurmlite import hostlist
from slurmlite.errors import SlurmError

TYPE_CHECKING = False  # typing costs a command ~3 ms; annotations are strings
if TYPE_CHECKING:  # records are client Records (tests: these dataclasses)
    from typing import Any


PROG = "scontrol"
clock = time.time  # the only clock read; tests replace it
UPDATE_TAGS = (
    ("NodeName", 3, "node"), ("PartitionName", 3, "partition"), ("JobId", 3, "job"),
    ("JobNAME", 3, "job"), ("StepId", 4, "step"), ("FrontendName", 2, "frontend"),
    ("ReservationName", 3, "reservation"), ("SlurmctldDebug", 2, "debug"),
)  # fmt: skip
UPDATE_ORDER = ("job", "step", "reservation", "node", "frontend", "partition", "debug")
NODE_STATES = ("DRAIN", "RESUME", "UNDRAIN", "DOWN", "IDLE")  # what a NodeUpdate carries


def keyword(tag: str, word: str, min_len: int) -> bool:
    """Slurm's keyword test: ``tag`` is a prefix of ``word``, at least ``min_len`` long."""
    return len(tag) >= min_len and word.lower().startswith(tag.lower())


def first_keyword(tag: str, words: Sequence[tuple[str, int]]) -> str | None:
    """The first ``(word, min_len)`` that ``tag`` names, else None."""
    return next((word for word, n in words if keyword(tag, word, n)), None)


class Session:
    """One scontrol run: mode flags, the exit status, and the verbs."""

    json = False  # --json: show job|node|partition print records of cli/scontrol_json.py

    def __init__(self, one_liner: bool = False, details: bool = False, quiet: bool = False) -> None:
        self.one_liner = one_liner
        self.details = details
        self.quiet = quiet
        self.exit_code = 0
        self.done = False
        self._client: Any = None

    # ------------------------------------------------------------- helpers

    def fail(self, *lines: str) -> None:
        self.exit_code = 1
        for line in lines:
            print(line, file=sys.stderr)

    def client(self) -> Any:
        if self._client is None:
            self._client = get_client(PROG)
        return self._client

    def help(self) -> None:
        from cli.help import show  # late: only help loads the help pages

        show(PROG)

    def not_supported(self, verb: str) -> None:
        self.fail(f"{PROG}: error: {verb} is not supported yet")

    # ------------------------------------------------------------ dispatch

    def run(self, words: Sequence[str]) -> None:
        """Process one command line (already split into words).  A client that cannot be
        made (an unreadable slurm.conf) is one error line, not a traceback."""
        try:
            self._run(words)
        except SlurmError as exc:
            self.fail(f"scontrol: error: {exc}")

    def _run(self, words: Sequence[str]) -> None:
        if not words:
            return
        tag, argc = words[0], len(words)
        simple: list[tuple[str, int, Callable[[], None]]] = [
            ("details", 1, lambda: setattr(self, "details", True)),
            ("exit", 2, lambda: setattr(self, "done", True)),
            ("help", 2, self.help),
            ("hide", 2, lambda: setattr(self, "details", False)),
            ("oneliner", 1, lambda: setattr(self, "one_liner", True)),
            ("ping", 3, self.ping),
            ("quiet", 4, lambda: setattr(self, "quiet", True)),
            ("quit", 4, lambda: setattr(self, "done", True)),
        ]
        if keyword(tag, "all", 2):
            return
        for word, min_len, action in simple:
            if keyword(tag, word, min_len):
                if argc > 1:
                    self.fail(f"too many arguments for keyword:{tag}")
                action()
                return
        if keyword(tag, "reconfigure", 3):
            self.reconfigure()
        elif verb := jobs.verb_of(tag):  # hold, uhold, release, requeue, requeuehold
            jobs.run(self, tag, verb, words[1:])
        elif verb := first_keyword(tag, (("suspend", 2), ("resume", 3), ("top", 3))):
            self.not_supported(verb)
        elif keyword(tag, "show", 3):
            self.show(words)
        elif keyword(tag, "update", 1):
            if argc < 2:
                self.fail(f"too few arguments for {tag} keyword")
            else:
                self.update(words[1:])
        elif keyword(tag, "verbose", 4):
            self.quiet = False
        elif keyword(tag, "version", 4):
            print_version()
        elif keyword(tag, "token", 3):
            from cli.scontrol_token import token  # late: most runs never need it

            token(self, words[1:])
        else:
            self.fail(f"invalid keyword: {tag}")

    def reconfigure(self) -> None:
        try:
            self.client().reconfigure()
        except SlurmError as exc:
            self.fail(f"slurm_reconfigure error: {exc.full}")

    def ping(self) -> None:
        try:
            client = self.client()
            client.whoami()
            up = "UP"
        except SlurmError:
            client, up = None, "DOWN"
            self.exit_code = 1
        print(f"Slurmctld(primary) at {control_host(client)} is {up}")

    # ---------------------------------------------------------------- show

    def show(self, words: Sequence[str]) -> None:
        if len(words) < 2:
            self.fail(f"too few arguments for keyword:{words[0]}")
            return
        if len(words) > 3:
            self.fail(f"too many arguments for keyword:{words[0]}")
            return
        tag, eq, value = words[1].partition("=")
        val: str | None = value if eq else (words[2] if len(words) == 3 else None)
        entities: list[tuple[tuple[tuple[str, int], ...], Callable[[str | None], None]]] = [
            ((("config", 1),), self.show_config),
            ((("hostnames", 5),), self.show_hostnames),
            ((("hostlist", 5),), lambda v: self.show_hostlist(v, False)),
            ((("hostlistsorted", 9),), lambda v: self.show_hostlist(v, True)),
            ((("jobs", 1), ("jobid", 1)), self.show_jobs),
            ((("nodes", 1),), self.show_nodes),
            ((("partitions", 2), ("partitionname", 2)), self.show_partitions),
            (
                (("reservations", 1), ("reservationname", 1)),
                lambda v: print("No reservations in the system"),
            ),
        ]
        refused = ["aliases", "bbstat", "dwstat", "burstbuffer", "assoc_mgr", "cache", "daemons",
                   "federations", "frontendname", "licenses", "slurmd", "steps", "topology"]  # fmt: skip
        for names, action in entities:
            if any(keyword(tag, word, n) for word, n in names):
                action(val)
                return
        for word in refused:
            if keyword(tag, word, 2 if word in ("licenses", "slurmd", "steps") else 1):
                self.not_supported(f"show {word}")
                return
        self.fail(f"invalid entity:{tag} for keyword:{words[0]} ")

    def show_jobs(self, job_id: str | None) -> None:
        job, task = None, None
        if job_id is not None:
            if not job_id or any(not (c.isdigit() or c in "_+") for c in job_id):
                self.fail("scontrol_print_job error: Invalid job id specified")
                return
            head, _, tail = job_id.partition("_")
            job = int(head.split("+")[0] or 0)
            task = int(tail) if tail.isdigit() else None
        try:
            jobs = self.client().get_jobs(all_states=True)
        except SlurmError as exc:
            self.fail(f"slurm_load_jobs error: {exc}")
            return
        if job is not None:
            jobs = [j for j in jobs if job in (j.job_id, j.array_job_id)]
            if not jobs:
                self.fail("slurm_load_jobs error: Invalid job id specified")
                return
        if self.json:
            return as_json.jobs([show.task_view(i, task) for i in jobs], self.client())
        now = clock()
        printed = 0
        for info in jobs:
            shown = show.task_view(info, task)
            if shown is None:
                continue
            sys.stdout.write(show.job_text(shown, now, self.one_liner, self.details))
            printed += 1
        if printed == 0:
            if job is None:
                print("No jobs in the system")
            else:
                self.exit_code = 1
                print(f"Job {job}_{task} not found" if task is not None else f"Job {job} not found")

    def show_nodes(self, names: str | None) -> None:
        try:
            client = self.client()
            nodes = client.get_nodes()
        except SlurmError as exc:
            self.fail(f"slurm_load_node error: {exc}")
            return
        config = full_config(client)
        if names is not None:
            try:
                wanted = set(hostlist.expand(names))
            except ValueError:
                wanted = {names}
            nodes = [n for n in nodes if n.name in wanted]
        if not nodes:
            self.exit_code = 1 if names is not None else self.exit_code
            print(f"Node {names} not found" if names is not None else "No nodes in the system")
            return
        if self.json:
            return as_json.nodes(nodes, lambda n: node_layout(config, n.name, n.cpus))
        port = getattr(config, "slurmd_port", None)
        for node in nodes:
            text = show.node_text(
                node, self.one_liner, port, node_layout(config, node.name, node.cpus)
            )
            sys.stdout.write(text)

    def show_partitions(self, name: str | None) -> None:
        try:
            parts = self.client().get_partitions()
        except SlurmError as exc:
            self.fail(f"slurm_load_partitions error: {exc}")
            return
        if name is not None:
            parts = [p for p in parts if p.name == name]
        if self.json:
            return as_json.partitions(parts)
        if not parts:
            self.exit_code = 1 if name is not None else self.exit_code
            print(
                f"Partition {name} not found" if name is not None else "No partitions in the system"
            )
            return
        for part in parts:
            sys.stdout.write(show.partition_text(part, self.one_liner))

    def show_config(self, _param: str | None) -> None:
        try:
            client = self.client()
            items = client.get_config_items()
        except SlurmError as exc:
            self.fail(f"slurm_load_ctl_conf error: {exc}")
            return
        sys.stdout.write(show.config_text(items, clock()) + "\n")
        print(f"Slurmctld(primary) at {control_host(client)} is UP")

    def show_hostnames(self, expr: str | None) -> None:
        expr = expr or os.environ.get("SLURM_JOB_NODELIST") or os.environ.get("SLURM_NODELIST")
        if not expr:
            self.fail(f"{PROG}: error: host list is empty")
            return
        try:
            names = hostlist.expand(expr)
        except ValueError:
            self.fail(f"Invalid hostlist: {expr}")
            return
        sys.stdout.write("".join(name + "\n" for name in names))

    def show_hostlist(self, expr: str | None, sorted_form: bool) -> None:
        if not expr:
            self.fail("invalid encode argument")
            return
        if expr.startswith("/"):
            try:
                with open(expr, encoding="utf-8") as fh:
                    expr = ",".join(w for w in fh.read().replace("\n", ",").split(",") if w)
            except OSError:
                self.fail(f"Can not open {expr}")
                return
        try:
            text = hostlist.compress_sorted(expr) if sorted_form else hostlist.compress(expr)
        except ValueError:
            self.fail(f"Invalid hostlist: {expr}")
            return
        print(text)

    # -------------------------------------------------------------- update

    def update(self, args: Sequence[str]) -> None:
        """Pick the entity as Slurm does: a JobId tag wins, then step, reservation, node..."""
        found: set[str] = set()
        i = 0
        while i < len(args):
            tag, eq, _ = args[i].partition("=")
            i += 1 if eq else 2  # "NodeName n1" takes the next word as its value
            found |= {kind for word, n, kind in UPDATE_TAGS if keyword(tag, word, n)}
        entity = next((kind for kind in UPDATE_ORDER if kind in found), None)
        if entity is None:
            self.fail(
                "No valid entity in update command",
                'Input line must include "NodeName", "PartitionName", "Reservation", "JobId", '
                'or "SlurmctldDebug"',
            )
        elif entity == "node":
            self.update_node(args)
        elif entity == "job":
            jobs.JobVerbs(self).update(args)
        else:
            self.not_supported(f"update {entity}")

    def update_node(self, args: Sequence[str]) -> None:
        try:
            upd = parse_node_update(args)
        except ValueError as exc:
            self.fail(*str(exc).split("\n"))
            return
        try:
            client = self.client()
            method = getattr(client, "update_nodes", None)
            if method is None:
                self.not_supported("update NodeName")
                return
            method(upd)
        except SlurmError as exc:
            self.fail(f"slurm_update error: {exc}")


def parse_node_update(args: Sequence[str]) -> dict[str, Any]:
    """``NodeName=n[1-2] State=drain Reason="disk full"`` -> NodeUpdate fields as a dict
    (``{"names": ["n1", "n2"], "state": "DRAIN", "reason": "disk full"}``).

    Raises ValueError with scontrol's message lines.
    """
    names: list[str] = []
    state: str | None = None
    reason: str | None = None
    for word in args:
        tag, eq, val = word.partition("=")
        if not eq:
            raise ValueError(f"{PROG}: error: Invalid input: {word}  Request aborted")
        if keyword(tag, "NodeName", 1):
            try:
                names = hostlist.expand(val)
            except ValueError:
                raise ValueError(f"Invalid node name specified: {val}") from None
        elif keyword(tag, "Reason", 1):
            reason = val[1:] if val.startswith('"') else val
            reason = reason[:-1] if reason.endswith('"') else reason
        elif keyword(tag, "State", 1):
            state = next((s for s in NODE_STATES if keyword(val, s, 3)), None)
            if state is None:
                raise ValueError(
                    f"Invalid input: {word}\nRequest aborted\n"
                    "Valid states are: NoResp DRAIN FAIL FUTURE RESUME POWER_DOWN POWER_UP UNDRAIN\n"
                    "Not all states are valid given a node's prior state"
                )
        else:
            raise ValueError(f"Update of this parameter is not supported: {word}\nRequest aborted")
    if state in ("DOWN", "DRAIN") and not reason:
        raise ValueError(
            "You must specify a reason when DOWNING or DRAINING a node. Request denied"
        )
    if state is None and reason is None:
        raise ValueError("No changes specified")
    return {"names": names, "state": state, "reason": reason}


def full_config(client: Any) -> Any:
    """The configuration with node layouts, ``SlurmdPort`` and ``SlurmctldHost``, or None.

    The client reads only the keys every command needs; ``show node/config``
    and ``ping`` read slurm.conf in full here (about 20 ms), unless the client
    has a full ``Config``.  An unreadable file leaves the client's own.
    """
    config = getattr(client, "config", None)
    if config is None or hasattr(config, "slurmd_port"):
        return config
    from slurmlite.config import ConfigError, load_config

    try:
        return load_config(config.path)
    except (ConfigError, OSError):
        return config


def control_host(client: Any) -> str:
    """The controller's host name as configured (``SlurmctldHost``), else ``localhost``."""
    return getattr(full_config(client), "control_host", None) or "localhost"


def node_layout(config: Any, name: str, cpus: int) -> tuple[int, int, int, int] | None:
    """(boards, sockets, cores, threads) from slurm.conf when it accounts for every CPU."""
    for conf in getattr(config, "nodes", None) or []:
        if conf.name == name:
            sockets, cores, threads = conf.sockets, conf.cores_per_socket, conf.threads_per_core
            if sockets * cores * threads == cpus:
                return conf.boards, sockets, cores, threads
    return None


def interactive(session: Session) -> None:
    for words in command_lines("scontrol: "):
        session.run(words)
        if session.done:
            return


def main(argv: Sequence[str] | None = None) -> int:
    from slurmlite.options import SCONTROL

    args = parse_options(SCONTROL, argv_or_default(argv))
    if answered_info(args, PROG):
        return 0
    session = Session(
        one_liner=args.flag("oneliner"), details=bool(args.get("details")), quiet=args.flag("quiet")
    )
    session.json = args.flag("json")
    if args.positionals:
        session.run(args.positionals)
    else:
        interactive(session)
    return session.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
