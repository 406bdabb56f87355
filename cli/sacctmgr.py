"""sacctmgr: accounts, users and QOS, Slurm 22.05 style (the subset slurmlite keeps).

``sacctmgr [options] <verb> <entity> [names] [where ...] [set ...]`` runs one
command; without one it reads commands from stdin (prompt ``sacctmgr: ``).
Verbs and entities match case-insensitively by prefix with Slurm's minimum
lengths: ``add``/``create``, ``modify``/``update``, ``delete``/``remove``,
``show``/``list``; ``account``, ``user``, ``qos``, and ``association`` (show
only).  Examples::

    sacctmgr -i add account vision fairshare=3
    sacctmgr -i add user alice account=vision
    sacctmgr -i modify user alice set fairshare=10 where account=vision
    sacctmgr -i modify qos normal set MaxTRESPerUser=gres/gpu=4
    sacctmgr -n -s list user alice format=account%256     (snakemake's probe)
    sacctmgr -P show assoc

Options: ``-i`` commit without asking (without it and with a terminal,
sacctmgr shows the change and asks "Would you like to commit changes? (You
have 30 seconds to decide)"; with no terminal it commits), ``-n`` no header,
``-p``/``-P`` parsable, ``-s`` with associations, ``-Q``, ``-r`` read-only,
``-v``, ``-V``, ``-h``.  Keys and columns: ``cli/sacctmgr_args.py`` and
``cli/sacctmgr_format.py``.  Changes need an administrator; anyone else gets
slurmdbd's refusal and exit 1.

Facts from Slurm 22.05 ``src/sacctmgr/`` (its messages and order), in our
own words; clusters, coordinators, events, resources, WCKeys, limits other
than the QOS ones above: "... is not supported yet" (exit 1).
"""

from __future__ import annotations

import sys

from cli import sacctmgr_format as fmt
from cli.common import (
    answered_info,
    argv_or_default,
    command_lines,
    get_client,
    parse_options,
    print_version,
)
from cli.sacctmgr_args import keyword, parse_words
from slurmlite import errors
from slurmlite.errors import CommandLineError, SlurmError
from slurmlite.getopt import NO_ARG, OptionSpec, OptionTable

TYPE_CHECKING = False  # typing costs a command ~3 ms; annotations are strings
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

PROG = "sacctmgr"
DENIED = "Your user doesn't have privilege to perform this action"
ASK = "Would you like to commit changes? (You have 30 seconds to decide)"


def _o(key: str, longs: str, short: str) -> OptionSpec:
    return OptionSpec(key=key, long=tuple(longs.split()), short=short, arg=NO_ARG)


TABLE = OptionTable(
    prog=PROG,
    specs=(
        _o("help", "help usage", "h"), _o("immediate", "immediate", "i"),
        _o("noheader", "noheader", "n"), _o("oneliner", "oneliner", "o"),
        _o("parsable", "parsable", "p"), _o("parsable2", "parsable2", "P"),
        _o("quiet", "quiet", "Q"), _o("readonly", "readonly", "r"),
        _o("associations", "associations withassoc", "s"), _o("verbose", "verbose", "v"),
        _o("version", "version", "V"),
    ),
)  # fmt: skip
ENTITIES = {  # verb -> ((spelling, min length, entity), ...) in Slurm's order
    "add": (("Account", 1, "account"), ("Acct", 4, "account"), ("Cluster", 2, "cluster"),
            ("Coordinator", 2, "coordinator"), ("Federation", 1, "federation"),
            ("QOS", 1, "qos"), ("Resource", 1, "resource"), ("User", 1, "user")),
    "show": (("Accounts", 2, "account"), ("Acct", 4, "account"), ("Associations", 2, "assoc"),
             ("Clusters", 2, "cluster"), ("Configuration", 2, "configuration"),
             ("Events", 1, "event"), ("Federation", 1, "federation"), ("Problems", 1, "problem"),
             ("QOS", 1, "qos"), ("Resource", 4, "resource"), ("Reservations", 4, "reservation"),
             ("Stats", 1, "stats"), ("Transactions", 1, "transaction"), ("Users", 1, "user"),
             ("WCKeys", 1, "wckey"), ("tres", 2, "tres")),
    "modify": (("Accounts", 1, "account"), ("Acct", 4, "account"), ("Clusters", 5, "cluster"),
               ("Federation", 1, "federation"), ("Job", 1, "job"), ("QOSs", 1, "qos"),
               ("Resource", 1, "resource"), ("Users", 1, "user")),
    "delete": (("Accounts", 1, "account"), ("Acct", 4, "account"), ("Clusters", 2, "cluster"),
               ("Coordinators", 2, "coordinator"), ("Federations", 1, "federation"),
               ("QOS", 2, "qos"), ("Resource", 1, "resource"), ("Users", 1, "user")),
}  # fmt: skip
KEPT = ("account", "user", "qos", "assoc")
ADD_PROBLEM = {"account": "accounts", "user": "users", "qos": "QOS"}
PATHS = {"account": "accounts", "user": "users", "qos": "qos"}
NOUNS = {"account": "accounts", "user": "users", "qos": "qos"}
USER_LEVEL = {"default_account", "admin_level", "description", "organization", "parent"}


class Session:
    """One sacctmgr run: its flags, the exit status, and the commands."""

    def __init__(self, **flags: bool) -> None:
        self.immediate = flags.get("immediate", False)
        self.header = not flags.get("noheader", False)
        self.parsable = "P" if flags.get("parsable2") else ("p" if flags.get("parsable") else "")
        self.with_assoc = flags.get("associations", False)
        self.readonly = flags.get("readonly", False)
        self.quiet = flags.get("quiet", False)
        self.exit_code = 0
        self.done = False
        self._client: Any = None
        self._noun = ""

    def fail(self, *lines: str) -> None:
        self.exit_code = 1
        for line in lines:
            print(line, file=sys.stderr)

    def client(self) -> Any:
        if self._client is None:
            self._client = get_client(PROG)
        return self._client

    # ------------------------------------------------------------ dispatch

    def run(self, words: Sequence[str]) -> None:
        if not words:
            return
        tag, rest = words[0], list(words[1:])
        verb = next((v for v, full, n in (("add", "add", 3), ("add", "create", 3),
                                          ("show", "show", 3), ("show", "list", 3),
                                          ("modify", "modify", 1), ("modify", "update", 1),
                                          ("delete", "delete", 3), ("delete", "remove", 3))
                     if keyword(tag, full, n)), None)  # fmt: skip
        if verb is not None:
            self.entity_command(verb, rest)
        elif keyword(tag, "associations", 3):
            self.with_assoc = True
        elif keyword(tag, "help", 2):
            from cli.help import show  # late: only help loads the help pages

            show(PROG)
        elif any(keyword(tag, w, 4) for w in ("exit", "quit")) or tag == "\\q":
            self.done = True
        elif keyword(tag, "version", 4):
            print_version()
        elif keyword(tag, "quiet", 4):
            self.quiet = True
        elif keyword(tag, "readonly", 4):
            self.readonly = True
        elif keyword(tag, "verbose", 4) or keyword(tag, "oneliner", 1):
            pass
        else:
            self.fail(f"invalid keyword: {tag}")

    def entity_command(self, verb: str, words: list[str]) -> None:
        if verb != "show" and self.readonly:
            self.fail("Can't run this command in readonly mode.")
            return
        entity = None
        if words:
            entity = next((e for full, n, e in ENTITIES[verb] if keyword(words[0], full, n)), None)
        if entity is None:
            names = [full for full, _n, _e in ENTITIES[verb] if full != "Acct"]
            self.fail(f"No valid entity in {'list' if verb == 'show' else verb} command",
                      "Input line must include " + ", ".join(f'"{n}"' for n in names))  # fmt: skip
            return
        if entity not in KEPT or (entity == "assoc" and verb != "show"):
            self.fail(f"{PROG}: error: {verb} {entity} is not supported yet")
            return
        try:
            parsed = parse_words(entity, words[1:], adding=verb == "add")
            if verb == "show":
                self.show(entity, parsed)
            else:
                self.change(verb, entity, parsed)
        except CommandLineError as exc:
            self.fail(*exc.lines)
        except SlurmError as exc:
            self.fail(f"{PROG}: error: {exc.full}")

    # ---------------------------------------------------------------- show

    def show(self, entity: str, p: Any) -> None:
        dump = self.client().request("GET", "/v1/assocs")
        cluster = dump["cluster"]
        users = {u["name"]: u for u in dump["users"]}
        with_assoc = self.with_assoc or p.conds.get("with_assoc", False)
        assocs = fmt.tree_order(dump["assocs"])
        names = set(p.names)
        accts = set(p.conds.get("accounts", []))
        clusters = set(p.conds.get("clusters", []))
        if clusters and cluster not in clusters:
            assocs, users = [], {}
        if entity == "qos":
            default = fmt.QOS_FIELDS
            rows = [fmt.qos_row(q) for q in dump["qos"] if not names or q["name"] in names]
        elif entity == "user":
            default = fmt.USER_FIELDS + ("," + fmt.USER_ASSOC_FIELDS if with_assoc else "")
            mine = [a for a in assocs if a["user"] and (not accts or a["account"] in accts)]
            shown = sorted(u for u in users if not names or u in names)
            if accts:
                shown = [u for u in shown if any(a["user"] == u for a in mine)]
            for key, field in (("default_accounts", "default_account"),
                               ("admin_levels", "admin_level")):  # fmt: skip
                if key in p.conds:
                    wanted = {v.lower() for v in p.conds[key]}
                    shown = [u for u in shown if users[u][field].lower() in wanted]
            if with_assoc:
                rows = [fmt.assoc_row(a, cluster, users) for u in shown
                        for a in sorted(mine, key=lambda a: a["account"]) if a["user"] == u]  # fmt: skip
            else:
                rows = [fmt.user_row(users[u]) for u in shown]
        elif entity == "account":
            default = fmt.ACCOUNT_FIELDS + ("," + fmt.ACCOUNT_ASSOC_FIELDS if with_assoc else "")
            base = {a["account"]: a for a in assocs if not a["user"]}
            shown = sorted(n for n in base if not names or n in names)
            if "parents" in p.conds:
                shown = [n for n in shown if base[n].get("parent") in p.conds["parents"]]
            if with_assoc:
                rows = [fmt.assoc_row(a, cluster, users) for n in shown
                        for a in assocs if a["account"] == n]  # fmt: skip
            else:
                rows = [fmt.assoc_row(base[n], cluster, {}) for n in shown]
        else:  # associations
            default = fmt.ASSOC_FIELDS
            if names:
                raise CommandLineError([f" Unknown condition: {sorted(names)[0]}"])
            wanted_users = set(p.conds.get("users", []))
            rows = [
                fmt.assoc_row(a, cluster, users)
                for a in assocs
                if (not accts or a["account"] in accts)
                and (not wanted_users or a["user"] in wanted_users)
                and ("parents" not in p.conds or a.get("parent") in p.conds["parents"])
            ]
        columns = fmt.parse_format(p.conds.get("format") or [default])
        sys.stdout.write(fmt.render(columns, rows, self.parsable, self.header))

    # -------------------------------------------------------------- change

    def change(self, verb: str, entity: str, p: Any) -> None:
        body = self._body(verb, entity, p)
        if body is None:
            return
        path = f"/v1/{PATHS[entity]}/{verb}"
        self._noun = NOUNS[entity]
        if verb == "modify" and entity != "qos" and set(p.sets) - USER_LEVEL:
            self._noun = f"{entity} associations"  # shares, QOS...: the associations change
        if verb == "delete" and entity == "qos":
            self._noun = "QOS(s)"
        elif verb == "delete" and entity == "user" and p.conds.get("accounts"):
            self._noun = "user associations"
        ask = not self.immediate and sys.stdin.isatty()
        answer = self._send(verb, entity, path, {**body, "commit": not ask})
        if answer is None:
            return
        if not self._report(verb, entity, answer):
            self.exit_code = 1
            return
        if ask:
            if confirm():
                if self._send(verb, entity, path, {**body, "commit": True}) is None:
                    return
            else:
                print(" Changes Discarded")

    def _body(self, verb: str, entity: str, p: Any) -> dict[str, Any] | None:
        names = p.names
        if verb == "modify" and not p.sets:
            self.fail(" You didn't give me anything to set")
            return None
        if not names:
            noun = entity if entity != "qos" else "QOS"
            self.fail(f" Need name of {noun} to add." if verb == "add"
                      else f" No {noun} names given: name the ones to {verb}.")  # fmt: skip
            return None
        sets = dict(p.sets)
        if entity == "qos":
            return {"names": names, "changes": sets} if verb != "delete" else {"names": names}
        if entity == "account":
            if verb == "add":
                return {"names": names, "parent": sets.pop("parent", None), "changes": sets}
            return {"names": names, "changes": sets} if verb == "modify" else {"names": names}
        accounts = p.conds.get("accounts")
        if verb == "add":
            return {"names": names, "accounts": accounts or [],
                    "default_account": sets.pop("default_account", None),
                    "admin_level": sets.pop("admin_level", None), "changes": sets}  # fmt: skip
        if verb == "modify":
            return {"names": names, "accounts": accounts, "changes": sets}
        return {"names": names, "accounts": accounts}

    def _send(self, verb: str, entity: str, path: str, body: dict[str, Any]) -> Any:
        try:
            return self.client().request("POST", path, body)
        except SlurmError as exc:
            if exc.code == errors.ESLURM_ACCESS_DENIED:
                lead = (
                    f" Problem adding {ADD_PROBLEM[entity]}"
                    if verb == "add"
                    else " Error with request"
                )
                self.fail(f"{PROG}: error: {DENIED}", f"{lead}: {exc}")
            elif exc.code in (errors.ESLURM_JOBS_RUNNING_ON_ASSOC,
                              errors.ESLURM_NO_REMOVE_DEFAULT_ACCOUNT):  # fmt: skip
                self.fail(f" Error with request: {exc}", *(exc.detail or "").split("\n"))
            elif exc.detail and exc.detail.startswith(" "):  # sacctmgr's own lines
                self.fail(*exc.detail.split("\n"))
            else:
                self.fail(f"{PROG}: error: {exc.full}")
            return None

    def _report(self, verb: str, entity: str, ans: dict[str, Any]) -> bool:
        """Print what was (or would be) done, as sacctmgr does; False: nothing was."""
        cluster = ans.get("cluster", "")
        if verb == "add":
            new = ans.get({"account": "accounts", "user": "users", "qos": "qos"}[entity], [])
            if not new and not ans.get("assocs"):
                print(" Nothing new added.")
                return False
            if entity == "account":
                print(" Adding Account(s)", *(f"  {n}" for n in new), " Settings",
                      "  Description     = Account Name",
                      "  Organization    = Parent/Account Name", " Associations",
                      *(f"  A = {n:<10.10} C = {cluster:<10.10}" for n in new), sep="\n")  # fmt: skip
            elif entity == "user":
                if new:
                    print(" Adding User(s)", *(f"  {n}" for n in new), " Settings =",
                          f"  Default Account = {ans['default_account']}", sep="\n")  # fmt: skip
                print(" Associations =", *(f"  U = {u:<9.9} A = {a:<10.10} C = {cluster:<10.10}"
                                           for u, a in ans["assocs"]), sep="\n")  # fmt: skip
            else:
                print(" Adding QOS(s)", *(f"  {n}" for n in new), sep="\n")
            return True
        items = ans.get("changed" if verb == "modify" else "deleted", [])
        if not items:
            print(" Nothing modified" if verb == "modify" else " Nothing deleted")
            return False
        noun = self._noun
        head = f" Modified {noun}..." if verb == "modify" else f" Deleting {noun}..."
        print(head, *(f"  {n}" for n in items), sep="\n")
        return True


def confirm() -> bool:
    """Ask on the terminal, as sacctmgr does (no answer within 30 s: no)."""
    import select

    print(ASK)
    while True:
        print("(N/y): ", end="", flush=True)
        ready, _, _ = select.select([sys.stdin], [], [], 30)
        if not ready:
            print("timeout")
            return False
        answer = sys.stdin.readline().strip().lower()
        if answer in ("y", "n", ""):
            return answer == "y"
        print("Y or N please")


def interactive(session: Session) -> None:
    for words in command_lines("sacctmgr: ", comments=True):
        session.run(words)
        if session.done:
            return


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_options(TABLE, argv_or_default(argv))
    if answered_info(args, PROG):
        return 0
    keys = ("immediate", "noheader", "parsable", "parsable2", "associations", "readonly", "quiet")
    session = Session(**{k: args.flag(k) for k in keys})
    if args.positionals:
        session.run(args.positionals)
    else:
        interactive(session)
    return session.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
