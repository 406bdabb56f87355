"""Commands that a later issue fills: say so clearly and exit 1."""

from __future__ import annotations

import sys

LATER = {
    "sprio": "multifactor priority",
    "sshare": "fair-share",
    "sacctmgr": "accounts and QOS",
}


def refuse(prog: str) -> None:
    what = LATER.get(prog, "this command")
    print(
        f"{prog}: error: {prog} is not supported yet in slurmlite ({what} come in a later release)",
        file=sys.stderr,
    )
    sys.exit(1)
