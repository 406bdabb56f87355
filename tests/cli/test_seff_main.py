"""seff's command line as the Perl original has it: usage, version, a bad job id."""

from __future__ import annotations

import pytest

from cli import seff


def run(capsys, *argv: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exit_:
        seff.main(list(argv))
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


def test_usage_and_version_exit_1_as_seff_does(capsys):
    for argv in ((), ("-h",), ("1", "2")):
        code, out, _ = run(capsys, *argv)
        assert (code, out.splitlines()[0]) == (1, "Usage: seff [Options] <Jobid>"), argv
    assert run(capsys, "-v") == (1, seff.version_text() + "\n", "")


def test_long_help_explains_what_gpu_utilization_means(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "share of time a kernel was running" in out and "JobAcctGatherFrequency" in out


def test_a_malformed_job_id_is_an_error_before_any_request(capsys):
    assert run(capsys, "abc") == (1, "", "seff: error: Invalid job id specified: abc\n")
