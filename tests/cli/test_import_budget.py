"""The commands stay light to start: heavy modules are never imported on their path.

Every run of ``squeue`` or ``sbatch`` pays for its imports (issue 3: the
whole process within 50 ms, of which Python's own start is ~11 ms).  These
modules each cost a command several milliseconds, and none is needed: the
web and ORM stacks belong to the daemons, ``dataclasses`` (with ``inspect``,
``ast``, ``dis``) and the wire dataclasses of ``slurmlite.protocol`` are
replaced by views and dicts in ``cli/client.py``, ``typing`` by string
annotations, ``socket`` by ``_socket``; ``datetime`` is imported only where
relative dates are printed.  A fresh interpreter imports each command module
and reports what got loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "dataclasses", "inspect", "typing", "socket", "datetime", "slurmlite.protocol", "slurmlite.config",
    "fastapi", "pydantic", "sqlalchemy", "httpx", "click", "http.client", "email",
)  # fmt: skip
COMMANDS = (
    "sbatch", "squeue", "scancel", "sacct", "sinfo", "scontrol", "srun", "salloc", "sshare",
    "sreport",
)  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_imports_none_of_the_heavy_modules(command):
    probe = (
        f"import sys, json; import cli.{command}; "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == []
