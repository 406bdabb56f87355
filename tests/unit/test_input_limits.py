"""Size limits on what a submission carries: the checks, and sbatch's refusals."""

from __future__ import annotations

import pytest

from slurmlite.batchscript import (
    MAX_ENV_ENTRY_BYTES,
    MAX_ENV_TOTAL_BYTES,
    MAX_ENV_VARS,
    MAX_SCRIPT_BYTES,
    TOO_LONG,
    InputLimitError,
    check_environment,
    check_script_size,
    check_sizes,
)
from slurmlite.errors import CommandLineError
from slurmlite.sbatch_request import build_submit


def refusal(env: dict[str, str]) -> InputLimitError:
    with pytest.raises(InputLimitError) as info:
        check_environment(env)
    return info.value


def test_an_ordinary_environment_passes() -> None:
    check_environment({"PATH": "/usr/bin:/bin", "HOME": "/home/alice", "EMPTY": ""})


def test_the_number_of_variables() -> None:
    check_environment({f"V{i}": "x" for i in range(MAX_ENV_VARS)})  # 4096: allowed
    err = refusal({f"V{i}": "x" for i in range(MAX_ENV_VARS + 1)})
    assert str(err) == "the environment has 4097 variables, more than the limit of 4096"
    assert err.too_long


def test_one_variable_counts_name_equals_value_in_bytes() -> None:
    # "BIG=" + value: 4 + (131072 - 4) = 131072 bytes is the limit exactly
    check_environment({"BIG": "x" * (MAX_ENV_ENTRY_BYTES - 4)})
    err = refusal({"BIG": "x" * (MAX_ENV_ENTRY_BYTES - 3)})
    assert str(err) == "environment variable BIG is 131073 bytes, more than the limit of 131072"
    # bytes, not characters: 45,000 euro signs are 135,000 bytes
    assert "135004 bytes" in str(refusal({"EUR": "\u20ac" * 45_000}))


def test_the_total() -> None:
    # 9 variables "Vi=" + 120,000 bytes (+1 for the NUL ending each): 9 * 120,004 > 1 MiB
    env = {f"V{i}": "x" * 120_000 for i in range(9)}
    err = refusal(env)
    assert (
        str(err)
        == f"the environment is 1080036 bytes, more than the limit of {MAX_ENV_TOTAL_BYTES}"
    )
    del env["V8"]
    check_environment(env)  # 8 * 120,004 = 960,032: allowed


@pytest.mark.parametrize(
    ("env", "text"),
    [
        ({"": "x"}, "invalid environment variable name ''"),
        ({"A=B": "x"}, "invalid environment variable name 'A=B'"),
        ({"A": "x\0y"}, "environment variable A contains a NUL character"),
    ],
)
def test_malformed_environments(env: dict[str, str], text: str) -> None:
    err = refusal(env)
    assert (str(err), err.too_long) == (text, False)


def test_texts_paths_and_the_script() -> None:
    check_sizes({"job name": "n" * 1024}, {"output path": "/" + "p" * 4095})
    with pytest.raises(
        InputLimitError, match="the job name is 1025 bytes, more than the limit of 1024"
    ):
        check_sizes({"job name": "n" * 1025}, {})
    with pytest.raises(InputLimitError, match="the output path is 4097 bytes"):
        check_sizes({}, {"output path": "/" + "p" * 4096})
    check_script_size("#" * MAX_SCRIPT_BYTES)
    with pytest.raises(InputLimitError, match="the batch script is 4194305 bytes"):
        check_script_size("#" * (MAX_SCRIPT_BYTES + 1))


def sbatch_fails(env: dict[str, str]) -> CommandLineError:
    with pytest.raises(CommandLineError) as info:
        build_submit(["--wrap", "true"], env, "/tmp", lambda: b"", "vm", "alice")
    return info.value


def test_sbatch_refuses_an_oversized_environment_before_sending() -> None:
    env = {"PATH": "/bin", **{f"V{i}": "1" for i in range(5000)}}
    err = sbatch_fails(env)
    assert err.exit_code == 1
    assert err.lines == [
        "sbatch: error: the environment has 5001 variables, more than the limit of 4096",
        f"sbatch: error: {TOO_LONG}",
    ]
    err = sbatch_fails({"PATH": "/bin", "HUGE": "x" * 200_000})
    assert err.lines[0] == (
        "sbatch: error: environment variable HUGE is 200005 bytes, more than the limit of 131072"
    )


def test_sbatch_checks_only_what_it_exports() -> None:
    # --export=NONE sends no variable of the caller's: a huge one is no problem then
    env = {"PATH": "/bin", "HUGE": "x" * 200_000}
    cmd = build_submit(["--export=NONE", "--wrap", "true"], env, "/tmp", lambda: b"", "vm", "a")
    assert cmd.fields is not None and "HUGE" not in cmd.fields["environment"]
