"""A lost reply never makes a second job: idempotency keys and the command's deadline.

The problem.  A command sends a submission and waits for the answer.  If
the answer does not come (the controller is frozen by SIGSTOP, a VM pause
or a long stall; the connection is reset), the command cannot tell whether
the job was stored.  Retrying blindly may make a second job; giving up may
leave a job the user was told failed.  Real Slurm does the second: after
``MessageTimeout`` sbatch prints ``Socket timed out on send/recv
operation``, and the controller, once it wakes, stores the job anyway.

The rule slurmlite keeps: **an sbatch that printed an error created no job;
one that printed an id created exactly one.**  Two pieces make it so.

1. Every submission carries an *idempotency key*, made once per command
   invocation (:func:`new_key`, 128 random bits) and sent in the
   ``Idempotency-Key`` header on every attempt of that invocation.  The
   store keeps ``(uid, key) -> answer`` for :data:`KEY_TTL` (a day, far
   longer than any retry); a repeated key *from the same user* gets the
   first answer (same job id, same status) instead of a new job.  Keys are
   matched per uid, so guessing another user's key reveals nothing.
2. Every submission carries the moment its command gives up
   (``X-Slurmlite-Deadline``, Unix time in seconds).  The controller
   commits a *new* job only while ``now < deadline - COMMIT_MARGIN``; later
   it answers ``Socket timed out on send/recv operation`` (HTTP 408) and
   stores nothing.  A request whose key is already stored is answered
   with its job whatever the time: that creates nothing.

Why the margin.  Say the command gives up at ``D``.  Without a margin the
controller could commit at ``D - 1 ms`` and the answer arrive after ``D``:
the command prints an error, the job exists.  With the margin, every
commit happens before ``D - COMMIT_MARGIN``, so after any commit there is
at least ``COMMIT_MARGIN`` left for the answer to arrive, or, if it was
lost, for the command's last attempt with the same key (made
:data:`LAST_TRY` seconds before ``D``) to fetch it.  And once the command
has given up, nothing can be created any more: any attempt still on its way
arrives after ``D - COMMIT_MARGIN`` (the deadline check happens inside the
write transaction, after the key lookup, so a commit and a refusal of the
same key cannot cross).

Worked example (``MessageTimeout=10``, command starts at t=100, so
``D = 110``; commits allowed until t=109):

* the controller is SIGSTOPped at t=99 and continued at t=130: the first
  attempt's read times out at t=109.5, the last attempt times out at
  t=110, sbatch prints the error; at t=130 the controller reads both
  requests, finds ``now >= 109`` and stores nothing;
* stopped at t=99 and continued at t=103: the first attempt is answered
  at t=103 with the new id; sbatch prints it; exactly one job;
* the connection is reset after the controller committed at t=101: the
  retry at t=101.05 carries the same key and gets the same id.

What remains (stated, not hidden): a controller that freezes for longer
than ``COMMIT_MARGIN`` in the milliseconds between its deadline check and
its answer can still leave a job behind an error.  The deadline is compared
with the controller's wall clock: commands and controller share the clock
on one host; across hosts they must be kept together by NTP, and the
margin is what a skew may eat (a command's clock ahead of the controller's
shortens its margin).  A ``MessageTimeout`` under :data:`MIN_SUBMIT_WAIT`
is stretched to it for submissions, so there is time to commit at all.

This module is the shared vocabulary (standard library only: commands
import it): header names, the constants, key checking.  The client side is
``cli/client.py``, the store side ``controller/jobs/submit_keys.py``.
"""

from __future__ import annotations

import os

KEY_HEADER = "Idempotency-Key"
DEADLINE_HEADER = "X-Slurmlite-Deadline"
COMMIT_MARGIN = 1.0  # seconds: the controller commits a new job only this long before the deadline
LAST_TRY = 0.5  # seconds before giving up: the command's last attempt with its key
MIN_SUBMIT_WAIT = 2.0  # seconds: the least a submission waits (> COMMIT_MARGIN + LAST_TRY)
KEY_TTL = 24 * 3600.0  # seconds a key is kept: covers any retry, a day over
MAX_KEY_LENGTH = 255


def new_key() -> str:
    """A fresh key for one command invocation: 32 hex digits (128 random bits)."""
    return os.urandom(16).hex()


def valid_key(key: str) -> bool:
    """A key is 1-255 printable ASCII characters, no spaces (it travels in a header).

    >>> valid_key("3f2a9c"), valid_key(""), valid_key("a b"), valid_key("x" * 256)
    (True, False, False, False)
    """
    return 0 < len(key) <= MAX_KEY_LENGTH and all("!" <= c <= "~" for c in key)


def parse_deadline(text: str) -> float | None:
    """The header's Unix time, or None if it is not a finite positive number.

    >>> parse_deadline("1733241234.5"), parse_deadline("soon"), parse_deadline("inf")
    (1733241234.5, None, None)
    """
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value < 1e12 else None  # also refuses inf and nan
