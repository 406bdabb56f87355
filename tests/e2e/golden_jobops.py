"""The golden story's job changes (51_scontrol_*, 52_scontrol_requeue_running).

On the anchor alice owned every job and ran the ``$`` commands; root ran
the ``#`` ones.  Ours runs as root, so what needs an owner who is *not* an
operator is replayed with a job of ``nobody``, submitted and changed by
nobody (``run_as``): a hold by the owner is a user hold only when the owner
is not an operator, and only such an owner can be refused the release of an
admin hold or allowed to raise a pending job's time limit.  That one job,
``users-job`` (``-t 45``, pending behind ``big-running``), plays the
golden's 52 (hold), 55 (admin hold and release) and 51 (time limits) in
these captures only (``Capture.golden_roles``), so the rest of the story
keeps its roles::

    nobody: scontrol hold J      -> J PENDING JobHeldUser      51_scontrol_hold
    nobody: scontrol release J   (not captured)
    root:   scontrol hold J      -> JobHeldAdmin               51_scontrol_hold_admin
    nobody: scontrol release J   -> Access/permission denied    ..._admin_hold_as_user
    root:   scontrol release J   -> J PENDING None             51_scontrol_release_admin
    nobody: TimeLimit=30, then 60 -> 30:00, 1:00:00             51_scontrol_update_*

``51_scontrol_release`` (root's ``--hold`` job "held") and the refused
update of root's job run as in the golden.  Needs root; without it these
captures are marked unavailable.
"""

from __future__ import annotations

import os
import pwd
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from tests.e2e.conftest import run_as, wait_for

if TYPE_CHECKING:
    from tests.e2e.golden_scenario import Capture, Story

AS_ANOTHER_USER = (
    "51_scancel_other_users_job",
    "51_scontrol_hold",
    "51_scontrol_hold_admin",
    "51_scontrol_release_admin",
    "51_scontrol_release_admin_hold_as_user",
    "51_scontrol_update_other_users_job",
    "51_scontrol_update_timelimit",
    "51_scontrol_update_timelimit_increase_as_user",
)
RELEASE_TRIES = 5  # see release_admin


def as_nobody(story: Story, calls: list[tuple[Callable, list[str]]], name: str = "") -> Capture:
    """Run ``main(argv)`` for each call as nobody, like ``a; b`` in a shell: stdout and
    stderr joined, the exit status the last one's; kept as capture ``name`` if given."""
    from tests.e2e.golden_scenario import Capture

    nobody = pwd.getpwnam("nobody")
    out, err, code = "", "", 0
    for main, argv in calls:
        code, o, e = run_as(nobody, _exiting(main), argv, str(story.work), story.cluster.env())
        out, err = out + o, err + e
    cap = Capture(out, err, code, story.work)
    if name:
        story.captures[name] = cap
    return cap


def _exiting(main: Callable[[list[str]], int | None]) -> Callable[[list[str]], None]:
    """``main`` whose returned status becomes the exit status (``run_as`` reads exits)."""

    def run(argv: list[str]) -> None:
        sys.exit(main(argv) or 0)

    return run


def job_changes(story: Story, target: int) -> None:
    """The 51_* captures; ``target`` is root's running job another user may not touch."""
    from cli import sbatch, scancel, scontrol, squeue  # before the fork drops privileges

    story.capture("51_scontrol_release")  # root releases its own --hold job
    if os.geteuid() != 0:
        for name in AS_ANOTHER_USER:
            story.unavailable[name] = "acting as another user needs root"
        return
    show = ["-h", "-o", "%i %T %r", "-j"]
    as_nobody(story, [(scancel.main, [str(target)])], "51_scancel_other_users_job")
    argv = ["update", f"jobid={target}", "TimeLimit=5"]
    as_nobody(story, [(scontrol.main, argv)], "51_scontrol_update_other_users_job")

    argv = ["--parsable", "-J", "users-job", "-t", "45", "--wrap", "true"]
    cap = as_nobody(story, [(sbatch.main, argv)])
    assert cap.code == 0, cap.stderr
    job = int(cap.stdout.strip())
    story.others.append(job)
    wait_for(
        lambda: story.sh(f"squeue -h -j {job} -o %r").stdout.strip() not in ("", "None"),
        what="nobody's job to wait behind big-running",
    )

    def roles(name: str, golden_id: int) -> None:
        cap = story.captures[name]
        cap.golden_roles, cap.our_roles = {golden_id: "users-job"}, {job: "users-job"}

    held = [(scontrol.main, ["hold", str(job)]), (squeue.main, [*show, str(job)])]
    as_nobody(story, held, "51_scontrol_hold")
    roles("51_scontrol_hold", 52)
    as_nobody(story, [(scontrol.main, ["release", str(job)])])
    line = f"squeue -h -j {job} -o '%i %T %r'"
    story.capture("51_scontrol_hold_admin", f"scontrol hold {job}; {line}")
    roles("51_scontrol_hold_admin", 55)
    refused = [(scontrol.main, ["release", str(job)]), (squeue.main, [*show, str(job)])]
    as_nobody(story, refused, "51_scontrol_release_admin_hold_as_user")
    roles("51_scontrol_release_admin_hold_as_user", 55)
    release_admin(story, job, line)
    roles("51_scontrol_release_admin", 55)
    limit = ["-h", "-o", "%i %l", "-j", str(job)]
    for name, minutes in (
        ("51_scontrol_update_timelimit", "30"),
        ("51_scontrol_update_timelimit_increase_as_user", "60"),
    ):
        argv = ["update", f"jobid={job}", f"TimeLimit={minutes}"]
        as_nobody(story, [(scontrol.main, argv), (squeue.main, limit)], name)
        roles(name, 51)


def release_admin(story: Story, job: int, line: str) -> None:
    """``scontrol release J; squeue``: reason ``None`` until a scheduling pass looks at J.

    Slurm's scheduler comes to a released job later; ours passes once a second,
    so a pass may fall between the release and the squeue and show its own
    reason.  Then root holds the job again and the capture is retried; a
    release that never shows ``None`` still fails the comparison.
    """
    for _ in range(RELEASE_TRIES):
        cap = story.capture("51_scontrol_release_admin", f"scontrol release {job}; {line}")
        if re.search(r" None$", cap.stdout.strip()):
            return
        story.sh(f"scontrol hold {job}")


def requeue_running(story: Story) -> None:
    """52_scontrol_requeue_running with ``sleep 0.5`` for the golden's ``sleep 2``: the
    test cluster's requeue_delay is 2 s (the anchor's 120 s), so a 2 s pause would let
    the job start again before squeue looks."""
    command = story.translate(_golden_command("52_scontrol_requeue_running"))
    story.capture("52_scontrol_requeue_running", command.replace("sleep 2;", "sleep 0.5;"))


def wait_requeued_eligible(story: Story) -> None:
    """Wait until sacct's default window lists the requeued big-running: a job is listed
    once eligible, and the requeue put its eligible time requeue_delay + 1 = 3 s ahead
    (the anchor's 60_* captures came minutes after its requeue)."""
    job = str(story.ids["big-running"])
    wait_for(lambda: job in story.sh("sacct -n -X -o JobID").stdout.split(), what="sacct")


def _golden_command(name: str) -> str:
    from tests.e2e.golden_catalog import load

    return load(name).command
