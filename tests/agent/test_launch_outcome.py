"""A start succeeds or fails by what the job did, not by what else reached the agent's pipe.

The wrapper's stderr is a pipe to the agent until the job has opened its
files.  An ``LD_PRELOAD`` the loader cannot load makes it print a warning
there at the wrapper's own exec (and at every later one): that used to be
read as the job's complaint, so the start failed.  Now only the job's
``FAIL_MARK`` line, or a wrapper that never named the job, fails a start.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.launcher import LAUNCH_FAILED_STATUS, Launcher, LaunchError
from tests.agent.jobs import a_spec, out_of

MISSING_LIBRARY = "/nonexistent/libslurmlite-nothing.so"


def with_preload(area: Path, job_id: int, script: str, **kw):  # type: ignore[no-untyped-def]
    spec = a_spec(area, job_id, script, **kw)
    spec.environment = {**spec.environment, "LD_PRELOAD": MISSING_LIBRARY}
    return spec


def test_a_loader_warning_does_not_fail_the_start(launcher: Launcher, area: Path) -> None:
    job = launcher.start(with_preload(area, 41, "echo ran\n"))
    assert job.wait() == 0
    out = out_of(area, 41)
    assert "ran\n" in out
    # the helpers the job execs still warn, into the job's own error file, as under Slurm
    assert MISSING_LIBRARY in out


def test_a_job_that_cannot_open_its_output_still_fails_with_its_reason(
    launcher: Launcher, area: Path
) -> None:
    def failure(job_id: int, preload: bool) -> LaunchError:
        out = str(area / "work" / "nosuchdir" / f"out-{job_id}.txt")
        make = with_preload if preload else a_spec
        with pytest.raises(LaunchError) as caught:
            launcher.start(make(area, job_id, "echo x\n", std_out=out, std_err=out))
        assert caught.value.exit_status == LAUNCH_FAILED_STATUS
        return caught.value

    plain, warned = failure(42, preload=False), failure(43, preload=True)
    assert "cannot open output file" in str(plain) and "nosuchdir" in str(plain)
    # the loader's warning is neither the failure nor its reason
    # the job id as a word only: the temp directory's random name may hold "43" too
    assert re.sub(r"\b43\b", "42", str(warned)) == str(plain)
    assert MISSING_LIBRARY not in str(warned)
