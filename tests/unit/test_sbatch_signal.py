"""``sbatch --signal=[B:]SIG[@secs]``: the warning signal fields of the request."""

from __future__ import annotations

import pytest

from tests.unit.test_sbatch_request import ENV, sbatch


@pytest.mark.parametrize(
    "argv, env, fields",
    [
        # submitit's directive: USR2 (12 on Linux) 90 s before the limit, to the steps
        (["--signal=USR2@90"], {}, (12, 90, False)),
        (["--signal=B:SIGUSR1"], {}, (10, 60, True)),  # 60 s when no @secs
        ([], {"SBATCH_SIGNAL": "15@5"}, (15, 5, False)),
        (["--signal=TERM@0"], {"SBATCH_SIGNAL": "USR1"}, (15, 0, False)),  # command line wins
    ],
)
def test_signal_warning_fields(argv, env, fields):
    submit = sbatch(*argv, "--wrap", "x", env={**ENV, **env}).submit
    assert (submit.warn_signal, submit.warn_time, submit.warn_batch) == fields


def test_no_signal_no_warning():
    submit = sbatch("--wrap", "x").submit
    assert (submit.warn_signal, submit.warn_time, submit.warn_batch) == (None, 0, False)
