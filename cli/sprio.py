"""sprio: the factors that make up each pending job's priority, as Slurm 22.05's sprio.

Pipeline (``main`` does the I/O)::

    options -> GET /v1/priorities (ids from -j, partitions from -p)
            -> filter -u -> sort (-S, default job id) -> sprio_format lines

What is listed is the controller's choice (``controller/accounting/priority_listing.py``):
pending jobs that are neither held nor waiting for a begin time, the
caller's own only under ``PrivateData=jobs``.  Behaviour worth knowing,
from Slurm's sprio (facts only, our own words):

* ``PriorityType=priority/basic``: three lines on stderr ("You are not
  running a supported priority plugin" / "(priority/basic)." / "Only
  'priority/multifactor' is supported."), exit 1;
* ``-j`` with ids that match nothing prints "Unable to find jobs matching
  user/id(s) specified" on stdout (no header), exit 0; without ``-j`` an
  empty queue prints the header alone;
* ``-w`` prints the header and one ``Weights`` row instead of the jobs;
* ``-o`` and ``-l`` together are refused (``sprio: fatal: ...``); the
  ``SPRIO_FORMAT`` variable applies when neither is given;
* ``-j`` takes its value only when attached (``-j7,8``); ``sprio -j 7`` reads
  the word after it as the list, and any further word is an error;
* ``-u`` names or uids; a name the local password database lacks still
  matches by name (as squeue does; Slurm says "Invalid user" instead);
* a failed request: ``Couldn't get priority factors from controller: <why>``,
  exit 255 (Slurm exits with its -1 error code).

Example (the golden cluster)::

    $ sprio -j51
              JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE ...
                 51 debug           5350          0          0       4000 ...
"""

from __future__ import annotations

import re
import sys

from cli import sprio_format as sf
from cli.common import (
    answered_info,
    argv_or_default,
    error,
    get_client,
    parse_options,
    perror,
    reported,
    user_words,
)
from slurmlite.errors import CommandLineError, SlurmError
from slurmlite.getopt import IGNORED, NO_ARG, OPTIONAL, REQUIRED, OptionSpec, OptionTable
from slurmlite.scheduler.registry import is_basic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

PROG = "sprio"
BASIC = (
    "You are not running a supported priority plugin\n({}).\n"
    "Only 'priority/multifactor' is supported."
)
EXCLUSIVE = (
    "Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry."
)


def _o(key: str, longs: str, short: str = "", arg: str = NO_ARG, **kw: Any) -> OptionSpec:
    return OptionSpec(key=key, long=tuple(longs.split()), short=short, arg=arg, **kw)


SPRIO = OptionTable(
    prog=PROG,
    specs=(
        _o("noheader", "noheader", "h"),
        _o("jobs", "jobs", "j", OPTIONAL),
        _o("long", "long", "l"),
        _o("clusters", "cluster clusters", "M", REQUIRED, status=IGNORED, env=("SLURM_CLUSTERS",)),
        _o("norm", "norm", "n"),
        _o("format", "format", "o", REQUIRED, env=("SPRIO_FORMAT",), env_unless=("format", "long")),
        _o("sort", "sort", "S", REQUIRED),
        _o("partition", "partition", "p", REQUIRED),
        _o("user", "user users", "u", REQUIRED),
        _o("verbose", "verbose", "v", repeat="count"),
        _o("version", "version", "V"),
        _o("weights", "weights", "w"),
        _o("federation", "federation", status=IGNORED, env=("SPRIO_FEDERATION",)),
        _o("help", "help"),
        _o("local", "local", status=IGNORED, env=("SPRIO_LOCAL",)),
        _o("sibling", "sib sibling", status=IGNORED, env=("SPRIO_SIBLING",)),
        _o("usage", "usage"),
    ),
)


def parse_job_ids(text: str) -> list[int]:
    """``"51,52"`` -> [51, 52]; a word that is no job id -> CommandLineError."""
    ids = []
    for word in (w for w in text.split(",") if w):
        m = re.fullmatch(r"\s*(\d+)(?:_\d+)?\s*", word)
        if m is None or int(m.group(1)) <= 0:
            raise CommandLineError([f"{PROG}: error: Invalid job id: {word}"])
        ids.append(int(m.group(1)))
    return ids


_SORT_KEYS = {
    "i": lambda j: j["job_id"],
    "r": lambda j: j["partition"],
    "u": lambda j: j["user"],
    "N": lambda j: j["factors"]["weighted"]["nice"],
    "Y": sf.priority_of,
    "T": lambda j: sum(j["factors"]["weighted"]["tres"].values()),
}
for _letter, _key in (("A", "age"), ("B", "assoc"), ("F", "fairshare"),
                      ("J", "jobsize"), ("P", "partition"), ("Q", "qos")):  # fmt: skip
    _SORT_KEYS[_letter] = lambda j, key=_key: j["factors"]["weighted"][key]


def sort_jobs(jobs: list[dict[str, Any]], spec: str) -> list[dict[str, Any]]:
    """``-S`` letters, applied last to first (each a stable sort); ``-x`` descending.

    Normalised letters sort as their weighted twins.  An unknown letter -> CommandLineError.
    """
    for i in range(len(spec) - 1, -1, -1):
        c = spec[i]
        if c in ",+-":
            continue
        key = _SORT_KEYS.get(c) or _SORT_KEYS.get(c.upper())
        if key is None or c == "c":
            raise CommandLineError([f"{PROG}: error: Invalid sort specification: {c}"])
        jobs = sorted(jobs, key=key, reverse=i > 0 and spec[i - 1] == "-")
    return jobs


def render(answer: dict[str, Any], args: Any, cluster: str = "") -> list[str]:
    """The output lines for the controller's ``answer`` (a PriorityListing dict)."""
    weights = answer["weights"]
    fmt = args.get("format")
    if fmt is None:
        fmt = sf.default_format(weights, args.flag("norm"), args.flag("long"), args.has("user"))
    columns, problems = sf.parse_format(fmt)
    for p in problems:
        error(PROG, p)
    ctx = {"weights": weights, "cluster": cluster}
    jobs = answer["jobs"]
    if args.has("user"):
        uids, names = user_words(args.get("user") or "")
        jobs = [j for j in jobs if j["user"] in names or j["uid"] in uids]
    if args.get("jobs") and not jobs:
        return ["Unable to find jobs matching user/id(s) specified"]
    out = []
    if not args.flag("noheader"):
        out.append(sf.line(columns, sf.header_value))
    if args.flag("weights"):
        out.append(sf.line(columns, lambda f: sf.weights_value(f, ctx)))
        return out
    for job in sort_jobs(jobs, args.get("sort") or "i"):
        out.append(sf.line(columns, lambda f, job=job: sf.job_value(f, job, ctx)))
    return out


def _parse(argv: Sequence[str]) -> Any:
    args = parse_options(SPRIO, argv)
    if args.flag("long") and args.sources.get("format") == "cli":
        raise CommandLineError([f"{PROG}: fatal: {EXCLUSIVE}"])
    words = list(args.positionals)
    if words and args.has("jobs") and args.get("jobs") is None:
        args.values["jobs"] = words.pop(0)
    if words:
        from cli.help import text  # late: the usage is rendered from the option table

        usage = text(PROG, "usage").rstrip("\n")
        raise CommandLineError([f"{PROG}: error: Unrecognized option: {words[0]}\n{usage}"])
    return args


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parse(argv_or_default(argv))
        if answered_info(args, PROG):
            return 0
        ids = parse_job_ids(args.get("jobs")) if args.get("jobs") else None
    except CommandLineError as exc:
        return reported(exc)
    query = {"ids": ids, "partitions": args.get("partition")}
    try:
        client = get_client(PROG)
        answer = client.request("GET", "/v1/priorities", query=query)
        cluster = getattr(client.config, "cluster_name", "")
    except SlurmError as e:
        perror("Couldn't get priority factors from controller", e)
        return 255
    if is_basic(answer["priority_type"]):
        print(BASIC.format(answer["priority_type"]), file=sys.stderr)
        return 1
    try:
        lines = render(answer, args, cluster)
    except CommandLineError as exc:
        return reported(exc)
    if lines:
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
