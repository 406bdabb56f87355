"""Scripts are bytes: the wire and stored forms give back exactly the bytes written."""

from __future__ import annotations

import pytest

from slurmlite.sbatch_request import build_submit
from slurmlite.scriptbytes import MARKER, stored_bytes, stored_form, wire_bytes, wire_form

SCRIPTS = [
    b"#!/bin/sh\necho hi\n",  # ASCII
    "#!/bin/sh\necho caf\u00e9 \u4e2d\n".encode(),  # UTF-8
    b"#!/bin/sh\n# caf\xe9\necho '\xe9\xff\xfe'\n",  # Latin-1 and stray bytes
    MARKER.encode() + b"looks like the marker\n",  # UTF-8 that starts with the marker
]


@pytest.mark.parametrize("data", SCRIPTS)
def test_every_script_survives_wire_and_store_unchanged(data):
    script, encoding = wire_form(data)
    assert wire_bytes(script, encoding) == data
    stored = stored_form(script, encoding)
    assert stored_bytes(stored) == data
    stored.encode("utf-8")  # storable text: no lone surrogates, no NUL
    assert "\x00" not in stored


def test_utf8_scripts_travel_and_are_stored_as_their_text():
    text = "#!/bin/sh\necho caf\u00e9\n"
    assert wire_form(text.encode()) == (text, None)
    assert stored_form(text, None) is text  # no copy on the fast path


def test_sbatch_sends_a_latin1_script_in_base64(tmp_path):
    data = b"#!/bin/sh\n#SBATCH -J caf\xe9job\necho '\xe9'\n"
    (tmp_path / "x.sh").write_bytes(data)
    cmd = build_submit(["x.sh"], {"PATH": "/bin"}, str(tmp_path), lambda: b"", "h", "u")
    assert cmd.fields is not None
    assert cmd.fields["script_encoding"] == "base64"
    assert wire_bytes(cmd.fields["script"], "base64") == data
