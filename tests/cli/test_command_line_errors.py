"""One command-line error type for every command (DESIGN.md §4 rule 13).

A command refuses what it was given -- an option, a job id, a ``--format``
field, a sacctmgr word -- by raising ``slurmlite.errors.CommandLineError``
with its exact lines and exit status, and catches it only in ``main``
(``cli.common.reported``).  A command module growing its own exception class
for that (``Stop``, ``ArgError``, ``FieldError`` once were) would be a second
way of saying the same thing; this test names the exceptions ``cli/`` may
define and why.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cli.common import exit_from, reported
from slurmlite.errors import CommandLineError
from slurmlite.getopt import OptionError, UnsupportedOption

CLI = Path(__file__).resolve().parents[2] / "cli"

# exceptions of cli/ that are not about the command line
NOT_COMMAND_LINE = {
    "AgentError": "an agent's HTTP answer (srun's I/O)",
    "AllocationFailed": "the controller refused or revoked an allocation",
    "_Interrupted": "a signal during an allocation wait",
    "_Stopped": "node-run stopped by SIGTERM while preparing (exits 0 like a stopped command)",
    "ClusterError": "slurmlite's local test cluster failed to start",
}


def _exception_classes() -> dict[str, str]:
    found = {}
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.Name) and b.id.endswith(("Exception", "Error"))
                for b in node.bases
            ):
                found[node.name] = path.name
    return found


def test_commands_define_no_command_line_error_of_their_own():
    assert set(_exception_classes()) == set(NOT_COMMAND_LINE)


def test_getopts_refusals_are_kinds_of_the_one_type():
    assert issubclass(OptionError, CommandLineError)
    assert issubclass(UnsupportedOption, CommandLineError)


def test_the_boundary_prints_the_lines_and_gives_the_status(capsys: pytest.CaptureFixture[str]):
    exc = CommandLineError(["sacct: error: Unknown arguments:", "sacct: error:  x"])
    assert reported(exc) == 1
    assert reported(CommandLineError(["srun: fatal: No command given to execute."], 255)) == 255
    err = capsys.readouterr().err
    assert err == (
        "sacct: error: Unknown arguments:\nsacct: error:  x\n"
        "srun: fatal: No command given to execute.\n"
    )


def test_exit_from_is_the_boundary_of_a_run_function(capsys: pytest.CaptureFixture[str]):
    def refuses(args: list[str]) -> int:
        raise CommandLineError([f"sshare: bad {args[0]}"], 2)

    def interrupted(args: list[str]) -> int:
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as done:
        exit_from(refuses, ["-x"])
    assert done.value.code == 2
    assert capsys.readouterr().err == "sshare: bad -x\n"
    with pytest.raises(SystemExit) as done:
        exit_from(interrupted, [])
    assert done.value.code == 1
    with pytest.raises(SystemExit) as done:
        exit_from(lambda args: len(args), ["a", "b", "c"])
    assert done.value.code == 3
