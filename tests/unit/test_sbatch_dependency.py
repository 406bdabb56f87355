"""sbatch's --dependency, --begin and --kill-on-invalid-dep as the request carries them."""

from __future__ import annotations

import time

from tests.unit.test_sbatch_request import fails, sbatch


def test_dependency_and_kill_flag_are_sent_in_stored_form():
    fields = sbatch(
        "--dependency=afterok:4:5", "--kill-on-invalid-dep=yes", "--wrap", "true"
    ).fields
    assert fields is not None
    assert (fields["dependency"], fields["kill_invalid_dep"]) == ("afterok:4,afterok:5", True)


def test_bad_dependency_is_a_dependency_problem():
    err = fails("--dependency=afterwards:1", "--wrap", "true")
    assert err.lines == ["sbatch: error: Batch job submission failed: Job dependency problem"]
    assert err.exit_code == 1


def test_begin_is_an_absolute_time():
    before = time.time()
    fields = sbatch("--begin=now+1hour", "--wrap", "true").fields
    assert fields is not None
    assert int(before) + 3600 <= fields["begin_time"] <= time.time() + 3600


def test_bad_begin_says_where():
    err = fails("--begin=soon", "--wrap", "true")
    assert err.lines == ["sbatch: error: Invalid time specification (pos=0): soon"]
    assert err.exit_code == 1
