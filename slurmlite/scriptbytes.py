"""Batch scripts are bytes: how they cross JSON and the store unchanged.

Slurm runs a script byte for byte as written, whatever its encoding: a
Latin-1 ``é`` (the single byte ``0xE9``) in an ``echo`` reaches the output
file as that byte.  JSON and the store's text column hold Unicode text, so a
script that is not valid UTF-8 needs a second form.  There are two, one per
boundary:

* **on the wire** (``JobSubmit``): ``script`` is the text when the script
  is UTF-8; otherwise ``script`` is its base64 and ``script_encoding`` is
  ``"base64"`` (as GitHub's contents API marks binary content).  Plain
  UTF-8 scripts -- nearly all of them -- travel and are stored as before,
  with no conversion on the submission's fast path;
* **in the store and in a launch order** (``jobs.script``,
  ``LaunchSpec.script``): one text, the *stored form*: the script itself
  when it is UTF-8 and does not begin with :data:`MARKER`, else
  ``MARKER`` followed by the base64 of its bytes.  ``MARKER`` starts with
  DEL (``0x7f``), which no batch script begins with (sbatch wants ``#!``),
  and a UTF-8 script that does begin with it is stored in base64 too, so
  the stored form is never ambiguous.  No schema change: the column stays
  text on SQLite and PostgreSQL (which refuses NUL and invalid UTF-8).

The agent turns the stored form back into bytes (:func:`stored_bytes`) and
writes exactly those bytes to the script file.  A NUL byte is refused
everywhere, with sbatch's words (:data:`NUL_LINES`).

Worked example::

    >>> wire_form(b"#!/bin/sh\\necho hi\\n")
    ('#!/bin/sh\\necho hi\\n', None)
    >>> wire_form(b"#!/bin/sh\\necho \\xe9\\n")
    ('IyEvYmluL3NoCmVjaG8g6Qo=', 'base64')
    >>> stored_form(*wire_form(b"#!/bin/sh\\necho \\xe9\\n"))
    '\\x7fbase64:IyEvYmluL3NoCmVjaG8g6Qo='
    >>> stored_bytes(stored_form("IyEvYmluL3NoCmVjaG8g6Qo=", "base64"))
    b'#!/bin/sh\\necho \\xe9\\n'
"""

from __future__ import annotations

import base64
import binascii

MARKER = "\x7fbase64:"
BASE64 = "base64"
# sbatch's refusal of a script with a NUL byte (Slurm 22.05 src/sbatch/sbatch.c)
NUL_LINES = ("The Slurm controller does not allow scripts that", "contain a NULL character '\\0'.")
NUL_MESSAGE = " ".join(NUL_LINES)


class ScriptEncodingError(ValueError):
    """``script`` is not what ``script_encoding`` says (bad base64)."""


def wire_form(data: bytes) -> tuple[str, str | None]:
    """(``script``, ``script_encoding``) to send for the script ``data``."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), BASE64


def wire_bytes(script: str, encoding: str | None) -> bytes:
    """The script's bytes from its wire form; :class:`ScriptEncodingError` if malformed."""
    if encoding != BASE64:
        return script.encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(script.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise ScriptEncodingError("script is not valid base64") from None


def stored_form(script: str, encoding: str | None) -> str:
    """The text the store keeps for a script sent as (``script``, ``encoding``).

    The common case costs one ``startswith``: UTF-8 text is its own stored form."""
    if encoding != BASE64 and not script.startswith(MARKER):
        return script
    data = wire_bytes(script, encoding)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = MARKER
    if text.startswith(MARKER):
        return MARKER + base64.b64encode(data).decode("ascii")
    return text  # base64 of a plain UTF-8 script: store it as text


def stored_bytes(stored: str) -> bytes:
    """The script's bytes from its stored form (what the agent writes to the file)."""
    if stored.startswith(MARKER):
        return base64.b64decode(stored[len(MARKER) :])
    return stored.encode("utf-8")


def stored_size(stored: str) -> int:
    """Bytes of the script the stored form holds (checked against the 4 MiB limit)."""
    if stored.startswith(MARKER):
        return len(stored_bytes(stored))
    return len(stored.encode("utf-8", "surrogatepass"))
