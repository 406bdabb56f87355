"""``scancel``: cancel or signal jobs.

    scancel [options] [job_id[_array_id]...]

Error reporting follows real scancel's two paths (golden ``52_scancel_*``):

* plain ``scancel ID...`` (no other option): unknown or finished ids are
  ignored silently, exit 0; ``-v`` prints why;
* with any other option (``--signal``, ``-u``, ``-t``, ...), an id that is
  not found is an error: ``scancel: error: Kill job error on job id N:
  Invalid job id specified``, exit 1.

Someone else's job is always an error: ``... Access/permission denied``, exit
210 (Slurm exits with its error number modulo 256).  A non-numeric id:
``scancel: error: Invalid job id abc``, exit 1.

Examples::

    scancel 42 43
    scancel --signal=USR1 42
    scancel -u alice -t PENDING
"""

from __future__ import annotations

import sys

from cli.common import get_client, parse_options, print_version
from slurmlite import errors
from slurmlite.errors import SlurmError, exit_status
from slurmlite.jobwords import split_words
from slurmlite.options import SCANCEL
from slurmlite.states import parse_signal

PROG = "scancel"
SILENT_IN_PLAIN_MODE = {errors.ESLURM_INVALID_JOB_ID, errors.ESLURM_ALREADY_DONE}
STATE_NAMES = {
    "PD": "PENDING",
    "PENDING": "PENDING",
    "R": "RUNNING",
    "RUNNING": "RUNNING",
    "S": "SUSPENDED",
    "SUSPENDED": "SUSPENDED",
}


def parse_id(text: str) -> int | None:
    """``42`` -> 42; ``42_3`` (array task, no arrays yet) -> None; otherwise ValueError."""
    head, _, task = text.partition("_")
    if not head.isdigit() or (
        task and not task.strip("[]").replace("-", "").replace(",", "").isdigit()
    ):
        raise ValueError(text)
    return None if task else int(head)


def main(argv: list[str] | None = None) -> None:
    args = parse_options(SCANCEL, sys.argv[1:] if argv is None else argv)
    if args.flag("version"):
        print_version()
        return
    if args.flag("help") or args.flag("usage"):
        from cli.help import show  # late: only --help/--usage load the help pages

        show(PROG, "help" if args.flag("help") else "usage")
        return
    verbose = args.count("verbose")
    ids: list[int] = []
    refs: list[str] = []  # array tasks: 57_9, 57_[1-3] (slurmlite.jobref)
    for word in args.positionals:
        for text in split_words(word):
            if not text:
                continue
            try:
                jid = parse_id(text)
            except ValueError:
                print(f"{PROG}: error: Invalid job id {text}", file=sys.stderr)
                sys.exit(1)
            if jid is not None:
                ids.append(jid)
            else:
                refs.append(text)
    signal = None
    if args.has("signal"):
        try:
            signal = parse_signal(str(args.get("signal")))
        except ValueError:
            print(f"{PROG}: error: Invalid job signal: {args.get('signal')}", file=sys.stderr)
            sys.exit(1)
    states = []
    if args.has("state"):
        for s in str(args.get("state")).split(","):
            name = STATE_NAMES.get(s.upper())
            if name is None:
                print(f"{PROG}: error: Invalid job state specified: {s}", file=sys.stderr)
                sys.exit(1)
            states.append(name)
    filters = any(
        args.has(k)
        for k in ("user", "name", "state", "partition", "me", "account", "qos", "nodelist")
    )
    plain = signal is None and not filters and not args.flag("batch") and not args.flag("full")
    if not ids and not refs and not filters:
        print(f"{PROG}: error: No job identification provided", file=sys.stderr)
        sys.exit(1)
    try:
        client = get_client(PROG)
        user = args.get("user")
        if args.flag("me"):
            user = client.whoami()[1]
        req = {  # CancelRequest's fields (no dataclass: start-up time, see cli/client.py)
            "job_ids": ids,
            **({"refs": [*map(str, ids), *refs], "job_ids": []} if refs else {}),
            "signal": signal,
            "user": user,
            "name": args.get("name"),
            "states": states,
            "partition": args.get("partition"),
            "batch_only": args.flag("batch"),
            "full": args.flag("full"),
        }
        if verbose:
            for jid in ids:
                what = (
                    f"Signal {signal} to job {jid}"
                    if signal is not None
                    else f"Terminating job {jid}"
                )
                print(f"{PROG}: {what}", file=sys.stderr)
        results = client.cancel(req)
    except SlurmError as e:
        print(f"{PROG}: error: {e.message}", file=sys.stderr)
        sys.exit(1)
    rc = 0
    for r in results:
        if not r.errno:
            continue
        silent = plain and r.errno in SILENT_IN_PLAIN_MODE
        if silent and not verbose:
            continue
        print(
            f"{PROG}: error: Kill job error on job id {getattr(r, 'job', None) or r.job_id}: {r.error}",
            file=sys.stderr,
        )
        if not silent:
            rc = max(rc, exit_status(r.errno) if r.errno == errors.ESLURM_ACCESS_DENIED else 1)
    if not results and filters and verbose:
        print(f"{PROG}: error: No active jobs match ALL job filters", file=sys.stderr)
    sys.exit(rc)


if __name__ == "__main__":
    main()
