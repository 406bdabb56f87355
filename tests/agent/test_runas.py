"""A root agent runs each job as its user: uid, gid, initgroups' groups, login variables,
files owned by the user; an unknown uid never runs; nothing a user chose becomes shell code."""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.confine import USER_NOT_FOUND
from agent.launcher import LAUNCH_FAILED_STATUS, Launcher, LaunchError
from tests.agent.jobs import IS_ROOT, a_spec, out_of, wait_for

pytestmark = pytest.mark.skipif(not IS_ROOT, reason="switching users needs a root agent")

USER, GROUP = "slurmlite-runas", "slurmlite-rgrp"
NO_SUCH_UID = 1_999_999_917  # no password entry (checked in the test)


@pytest.fixture(scope="module")
def runas() -> Iterator[pwd.struct_passwd]:
    """A second user, member of an extra group, made for these tests and removed after."""
    subprocess.run(["userdel", USER], capture_output=True)  # a leftover of a killed run
    subprocess.run(["groupdel", GROUP], capture_output=True)
    subprocess.run(["groupadd", GROUP], check=True)
    try:
        subprocess.run(
            ["useradd", "-M", "-d", "/nonexistent/runas", "-s", "/bin/dash", "-G", GROUP, USER],
            check=True,
        )
        try:
            yield pwd.getpwnam(USER)
        finally:
            subprocess.run(["userdel", USER], check=False)
    finally:
        subprocess.run(["groupdel", GROUP], check=False)


def user_spec(area: Path, job_id: int, script: str, user: pwd.struct_passwd, **kw: object):  # type: ignore[no-untyped-def]
    env = {"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": "n1"}  # no HOME/USER/LOGNAME/SHELL
    fields = dict(uid=user.pw_uid, gid=user.pw_gid, user=user.pw_name, environment=env)
    return a_spec(area, job_id, script, **{**fields, **kw})


def test_the_job_has_the_users_ids_groups_and_login_variables(
    launcher: Launcher, area: Path, runas: pwd.struct_passwd
) -> None:
    script = 'id -u; id -g; id -G; echo "$HOME|$USER|$LOGNAME|$SHELL"\n'
    assert launcher.start(user_spec(area, 1, script, runas)).wait() == 0
    uid, gid, groups, login = out_of(area, 1).splitlines()
    extra = grp.getgrnam(GROUP).gr_gid
    assert (int(uid), int(gid)) == (runas.pw_uid, runas.pw_gid)
    # initgroups: the primary group and every group that lists the user
    assert sorted(map(int, groups.split())) == sorted({runas.pw_gid, extra})
    # missing from the job's environment -> from the password entry
    assert login == f"/nonexistent/runas|{USER}|{USER}|/bin/dash"
    out = area / "work" / "slurm-1.out"
    assert (out.stat().st_uid, out.stat().st_gid) == (runas.pw_uid, runas.pw_gid)


def test_login_variables_the_submitter_sent_are_kept(
    launcher: Launcher, area: Path, runas: pwd.struct_passwd
) -> None:
    # Slurm (--export=ALL) passes sbatch's environment through; only missing ones are filled
    spec = user_spec(area, 2, 'echo "$HOME|$USER|$LOGNAME"\n', runas)
    spec.environment.update(HOME="/tmp", USER="someone")
    assert launcher.start(spec).wait() == 0
    assert out_of(area, 2) == f"/tmp|someone|{USER}\n"


def test_an_unknown_uid_fails_with_a_reason_and_nothing_runs(
    launcher: Launcher, area: Path
) -> None:
    with pytest.raises(KeyError):
        pwd.getpwuid(NO_SUCH_UID)
    marker = area / "work" / "ran"
    spec = a_spec(area, 3, f"touch {marker}\n", uid=NO_SUCH_UID, gid=NO_SUCH_UID, user="ghost")
    with pytest.raises(LaunchError) as failure:
        launcher.start(spec)
    # the job ends FAILED 0:53 JobLaunchFailure; the detail names the cause, as Slurm's errno text
    assert failure.value.exit_status == LAUNCH_FAILED_STATUS
    assert (failure.value.reason, failure.value.detail) == ("JobLaunchFailure", USER_NOT_FOUND)
    time.sleep(0.2)  # (the marker would appear within milliseconds if anything had started)
    assert not marker.exists()
    assert not launcher.job_dir(3).exists()  # not even a script was written
    assert not (area / "work" / "slurm-3.out").exists()


def test_the_kill_notice_is_written_as_the_user_never_by_root(
    launcher: Launcher, area: Path, runas: pwd.struct_passwd
) -> None:
    # The job turns a directory on its stderr path into a link to a root-only directory
    # holding a FIFO of root's.  Root's open() would follow that link (O_NOFOLLOW guards
    # the last component only) and open the FIFO -- an open with effects, as a device's
    # can have: here it releases a reader blocked in open().  The user's cannot.
    private = area / "root-only"
    private.mkdir(mode=0o700)
    fifo = private / "err.txt"
    os.mkfifo(fifo, 0o600)
    opened = threading.Event()

    def reader() -> None:
        with open(fifo, "rb"):  # blocks until some writer opens the FIFO
            opened.set()

    threading.Thread(target=reader, daemon=True).start()
    work, ready = area / "work", area / "work" / "ready"
    (work / "d").mkdir(mode=0o777)
    os.chmod(work / "d", 0o777)
    swap = f"mv {work}/d {work}/d.old && ln -s {private} {work}/d && touch {ready}; sleep 1000\n"
    job = launcher.start(user_spec(area, 4, swap, runas, std_err=str(work / "d" / "err.txt")))
    try:
        wait_for(ready.exists)
        assert job.terminate(kill_wait=5, message="*** JOB 4 CANCELLED ***") is True
        assert not opened.wait(0.3)  # nobody opened root's FIFO
    finally:
        with open(fifo, "wb"):  # release the reader
            pass
    # where the file is the user's own, the notice arrives, appended by the user
    err2, ready2 = work / "err2.txt", work / "ready2"
    job = launcher.start(
        user_spec(area, 5, f"touch {ready2}; sleep 1000\n", runas, std_err=str(err2))
    )
    wait_for(ready2.exists)
    assert job.terminate(kill_wait=5, message="*** JOB 5 CANCELLED ***") is True
    assert err2.read_text() == "*** JOB 5 CANCELLED ***\n"
    assert err2.stat().st_uid == runas.pw_uid


def test_names_paths_and_values_are_never_shell_code(launcher: Launcher, area: Path) -> None:
    marker = Path(f"/tmp/pwned-{os.getpid()}")
    evil = f"$(touch {marker})`touch {marker}`;touch {marker}"
    out = area / "work" / f"out-{evil.replace('/', '_')}.txt"
    spec = a_spec(
        area,
        6,
        'printf "%s\\n" "$EVIL"\n',
        name=evil,
        std_out=str(out),
        std_err=str(out),
        environment={"PATH": "/usr/bin:/bin", "EVIL": evil},
    )
    try:
        assert launcher.start(spec).wait() == 0
        assert out.read_text() == evil + "\n"  # the file has the literal name and value
        assert not marker.exists()
    finally:
        marker.unlink(missing_ok=True)
