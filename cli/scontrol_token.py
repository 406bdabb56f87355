"""``scontrol token [lifespan=SECONDS] [username=NAME]``: a JSON Web Token for auth/jwt.

The controller mints the token (``POST /v1/token``; only it holds the key)
and scontrol prints it in a form a shell can ``export`` or ``eval``::

    $ scontrol token lifespan=600
    SLURM_JWT=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpYXQ...

``lifespan`` is in seconds (``infinite``/``unlimited``: Slurm's largest,
2^31 - 2); without it the controller's default (1800 s, or
``max_token_lifespan`` if smaller).  ``username`` asks a token for another
user: root and the SlurmUser only.  Arguments match case-insensitively.

Failures are Slurm's lines, exit 1: a bad number is ``scontrol: error:
Invalid numeric value "x" for lifespan.``, an unknown argument ``Invalid
option: `x```, and a refusal by the controller ``scontrol: error:
slurm_fetch_token: error with request: <Slurm's text>`` (for instance
"Invalid user id" when a user asks for someone else's token, "Required
plugin type not loaded or initialized" without auth/jwt).

Facts from Slurm 22.05 ``src/scontrol/scontrol.c`` and ``src/api/token.c``.
"""

from __future__ import annotations

from slurmlite import errors
from slurmlite.errors import SlurmError

TYPE_CHECKING = False  # typing costs a command ~3 ms; annotations are strings
if TYPE_CHECKING:
    from collections.abc import Sequence

    from cli.scontrol import Session

PROG = "scontrol"
INFINITE = 2**31 - 2  # INT_MAX - 1, what Slurm sends for lifespan=infinite
_TRANSPORT = (  # no answer came back: Slurm says "error receiving response"
    errors.SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR,
    errors.SLURMCTLD_COMMUNICATIONS_SEND_ERROR,
    errors.SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR,
    errors.SLURM_COMMUNICATIONS_CONNECTION_ERROR,
    errors.SLURM_COMMUNICATIONS_SEND_ERROR,
    errors.SLURM_COMMUNICATIONS_RECEIVE_ERROR,
)


def parse_lifespan(value: str) -> int | str:
    """Seconds, or the error line: ``"600"`` -> 600, ``"unlimited"`` -> 2147483646."""
    if value.lower() in ("infinite", "unlimited"):
        return INFINITE
    text = value.strip()
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isdecimal() or int(text) <= 0:  # Slurm wants a positive int
        return f'{PROG}: error: Invalid numeric value "{value}" for lifespan.'
    if int(text) >= 2**31 - 1:
        return f"{PROG}: error: Numeric argument ({int(text)}) too large for lifespan."
    return int(text)


def token(session: Session, args: Sequence[str]) -> None:
    """Ask the controller for a token and print ``SLURM_JWT=<token>``."""
    lifespan: int | None = None
    username: str | None = None
    for arg in args:
        word = arg.lower()
        if word.startswith("lifespan="):
            parsed = parse_lifespan(arg[9:])
            if isinstance(parsed, str):
                session.fail(parsed)
                return
            lifespan = parsed
        elif word.startswith("username="):
            username = arg[9:] or None
        else:
            session.fail(f"Invalid option: `{arg}`")
            return
    try:
        answer = session.client().request(
            "POST", "/v1/token", {"lifespan": lifespan, "username": username}
        )
    except SlurmError as exc:
        how = "error receiving response" if exc.code in _TRANSPORT else "error with request"
        session.fail(f"{PROG}: error: slurm_fetch_token: {how}: {exc}")
        return
    print(f"SLURM_JWT={answer['token']}")
