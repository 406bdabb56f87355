"""Replay the golden story on the session cluster and capture each LIVE file's command.

The anchor's captures (``golden/slurm-22.05``) were taken at moments of one
story; ``Story.play`` tells it again with real jobs, in the golden's job-id
order, and runs each golden command at its moment:

0. the anchor's accounting (``Story.accounts``): its priority weights in
   slurm.conf (golden README), accounts ``acct_a`` and ``acct_b`` under
   root, root in root, acct_a and acct_b (default acct_a, so the story's
   jobs run under acct_a as alice's did), and nobody -- alice's stand-in
   for ``sshare`` -- in acct_a and acct_b; undone in ``cleanup``;
1. the cluster idle: ``sbatch --test-only``;
2. finished submissions (golden 17-49): ``--wrap`` jobs, the environment
   dumps (batch scripts that run ``srun`` among them), three ``srun``
   commands that make their own allocation, the ``--output`` pattern jobs,
   two ``-N 3`` jobs cancelled while pending, two submissions rejected for
   resources;
3. the live queue (50-58): ``big-running`` (``-N 2 --exclusive``) fills
   both nodes; ``wants-2nodes``, ``small-one``, ``held`` (``--hold``),
   ``gpu-job`` (``--gres=gpu:2``) and ``fails`` pend behind it -> every
   ``50_*`` command;
4. job changes: holds, releases and time limits, some by another user
   (51_*, ``golden_jobops``); another user's refused cancel and update; the
   pending cancel; big-running requeued, then cancelled while it waits (52_*);
5. jobs ending COMPLETED, FAILED (exit 1, exit 3, SIGKILL), with a failed
   step and CANCELLED while running (65-70) -> the ``60_*`` commands, then
   the idle cluster.

A golden command names golden job ids; ``translate`` swaps them for ours
(ids of jobs we do not replay are dropped from ``-j`` lists).  Every job the
story starts is cancelled in ``cleanup``, also when a step fails.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import select
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.conftest import wait_for
from tests.e2e.golden_catalog import LIVE, load
from tests.e2e.golden_jobops import (
    as_nobody,
    job_changes,
    requeue_running,
    wait_requeued_eligible,
)
from tests.e2e.golden_live_specs import GOLDEN_ROLES, NOT_REPLAYED

# the environment dumps of batch jobs (golden 24-29), in the anchor's order
ENV_DUMPS = (
    ("10_env_1node_1task", "env-1node"),
    ("11_env_1node_2tasks_srun", "env-2tasks"),
    ("12_env_2nodes", "env-2nodes"),
    ("13_env_gres_gpu1", "env-gpu"),
    ("14_env_gpus_per_node2_2nodes", "env-gpn"),
    ("15_env_options", "env-opts"),
)
LIVE_STATES = {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING"}
UNIVERSE = set(GOLDEN_ROLES) | set(NOT_REPLAYED)  # every golden job id a command may name
# the anchor's multifactor weights (golden README; sprio -w shows the TRES string so)
PRIORITY_WEIGHTS = (
    "PriorityWeightAge=1000",
    "PriorityWeightFairshare=10000",
    "PriorityWeightJobSize=1000",
    "PriorityWeightPartition=1000",
    "PriorityWeightQOS=1000",
    "PriorityWeightTRES=CPU=1000,Mem=0,GRES/gpu=2000",
)
SACCTMGR = (
    "sacctmgr -i add account acct_a",
    "sacctmgr -i add account acct_b",
    "sacctmgr -i add user root account=root,acct_a,acct_b",
    "sacctmgr -i add user nobody account=acct_a,acct_b",
    "sacctmgr -i modify user root set defaultaccount=acct_a",
)


@dataclass
class Capture:
    stdout: str
    stderr: str
    code: int
    cwd: Path
    golden_roles: dict[int, str] = field(default_factory=dict)  # beyond GOLDEN_ROLES
    our_roles: dict[int, str] = field(default_factory=dict)
    account: str | None = None  # a reused job's account, when not the story's


class Story:
    def __init__(self, cluster, workdir: Path) -> None:  # type: ignore[no-untyped-def]
        self.cluster = cluster
        self.work = workdir
        self.ids: dict[str, int] = {}  # role -> our job id
        self.captures: dict[str, Capture] = {}
        self.unavailable: dict[str, str] = {}  # file -> why it could not be captured
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.uid, self.gid = os.getuid(), os.getgid()
        self.group = grp.getgrgid(self.gid).gr_name
        self.host = socket.gethostname()
        self.account = ""
        self.others: list[int] = []  # jobs of other users (no role): cancelled in cleanup
        self.conf_text: str | None = None  # slurm.conf before the anchor's weights
        self.root_default = ""  # root's DefaultAccount before the story

    # ------------------------------------------------------------ helpers

    def sh(self, command: str, cwd: Path | None = None):  # type: ignore[no-untyped-def]
        return self.cluster.run(command, cwd=cwd or self.work)

    def submit(self, role: str, args: str) -> int:
        r = self.sh(f"sbatch --parsable {args}")
        assert r.returncode == 0, (role, r.stderr)
        self.ids[role] = int(r.stdout.strip().split(";")[0])
        return self.ids[role]

    def translate(self, command: str) -> str:
        """The golden command with our job ids (and user) in place of the anchor's."""
        ours = {g: self.ids[role] for g, role in GOLDEN_ROLES.items() if role in self.ids}

        def ids(m: re.Match[str]) -> str:
            numbers = [int(x) for x in m.group(2).split(",")]
            if not set(numbers) & UNIVERSE:
                return m.group(0)
            kept = [str(ours[n]) for n in numbers if n in ours]
            return m.group(1) + ",".join(kept) if kept else ""

        command = re.sub(r"(-j ?|(?<=\s))(\d+(?:,\d+)*)(?=\s|;|$|_)", ids, command)
        command = re.sub(r"slurm-(\d+)\.out", lambda m: f"slurm-{ours[int(m[1])]}.out", command)
        command = re.sub(r"\balice\b", self.user, command)
        return re.sub(r"  +", " ", command)

    def capture(self, name: str, command: str | None = None, cwd: Path | None = None) -> Capture:
        r = self.sh(command or self.translate(load(name).command), cwd=cwd)
        self.captures[name] = Capture(r.stdout, r.stderr, r.returncode, cwd or self.work)
        return self.captures[name]

    def states(self, roles: list[str]) -> dict[str, tuple[str, str]]:
        ids = ",".join(str(self.ids[r]) for r in roles)
        r = self.sh(f"squeue -h -t all -j {ids} -o '%i %T %r'")
        by_id: dict[int, tuple[str, str]] = {}
        for line in r.stdout.splitlines():
            if not line:
                continue
            job, state, reason = (line.split() + ["", ""])[:3]
            known = by_id.get(int(job.split("_")[0]))
            if known is None or known[0] not in LIVE_STATES:  # an array: a live task counts
                by_id[int(job.split("_")[0])] = (state, reason)
        return {role: by_id.get(self.ids[role], ("GONE", "")) for role in roles}

    def wait_finished(self, roles: list[str], timeout: float = 30) -> None:
        wait_for(
            lambda: all(s not in LIVE_STATES for s, _ in self.states(roles).values()),
            timeout,
            f"{roles} to finish",
        )

    def wait_idle(self, timeout: float = 30) -> None:
        def idle() -> bool:
            nodes = self.sh("sinfo -h -N -o %T").stdout.split()
            return bool(nodes) and set(nodes) == {"idle"} and not self.sh("squeue -h").stdout

        wait_for(idle, timeout, "an idle cluster (no job left by another test)")

    def cleanup(self) -> None:
        """Cancel every job of the story and give them a moment to go, then put back
        slurm.conf and root's default account (never raises)."""
        if self.ids or self.others:
            self.sh("scancel " + " ".join(str(i) for i in [*self.ids.values(), *self.others]))
            try:
                self.wait_finished(list(self.ids), timeout=15)
            except AssertionError:
                pass  # the cluster's teardown stops whatever is left
        if self.root_default:
            self.sh(f"sacctmgr -i modify user root set defaultaccount={self.root_default}")
        if self.conf_text is not None:
            self.cluster.conf.write_text(self.conf_text)
            self.sh("scontrol reconfigure")

    def accounts(self) -> None:
        """Step 0 of the module doc: the anchor's weights and associations."""
        conf = self.cluster.conf
        self.conf_text = conf.read_text()
        weights = "".join(line + "\n" for line in PRIORITY_WEIGHTS)
        conf.write_text(self.conf_text + "# the anchor's priority weights\n" + weights)
        r = self.sh("scontrol reconfigure")
        assert r.returncode == 0, r.stderr
        r = self.sh("sacctmgr -n -P show user root format=DefaultAccount")
        self.root_default = r.stdout.strip() if r.returncode == 0 else ""
        for command in SACCTMGR:
            r = self.sh(command)
            assert r.returncode == 0, (command, r.stdout, r.stderr)

    # -------------------------------------------------------------- story

    def play(self) -> None:
        self.wait_idle()
        self.accounts()
        self.capture("01_sbatch_test_only")
        self.finished_submissions()
        self.live_queue()
        self.cancels()
        self.final_states()
        self.wait_idle()
        self.capture("60_sinfo_N_l_idle")
        self.capture("60_squeue_after_all_done")

    def finished_submissions(self) -> None:
        """Golden 17-49: jobs that have ended (or were refused) before the live queue."""
        self.submit("roots-job", "-J roots-job --hold --wrap true")
        self.sh(f"scancel {self.ids['roots-job']}")
        self.ids["wrap"] = int(self.sh("sbatch --wrap true").stdout.split()[-1])
        self.submit("parsable", "--wrap true")
        self.submit("parsable-cluster", "-M anchor --wrap true")
        r = self.sh('printf "#!/bin/bash\\necho from-stdin\\n" | sbatch')
        self.ids["stdin"] = int(r.stdout.split()[-1])
        for name, role in ENV_DUMPS:
            golden = load(name)
            [(header, script)] = [(h, b) for h, b in golden.sections.items() if "script" in h]
            (self.work / header.split()[-1]).write_text(script)
            cap = self.capture(name)
            self.ids[role] = int(cap.stdout.split()[-1])
            # one at a time, as on the anchor: each starts on an idle cluster (13 gets GPU 0)
            self.wait_finished([role])
        self.env_array()
        self.direct_steps()
        for name, role in (
            ("20_output_default_name", "out-default"),
            ("20_output_pattern_jxNutJ", "out-pattern"),
            ("20_output_pattern_array", "out-pattern-array"),
            ("20_output_array_default", "out-array-default"),
            ("20_output_missing_dir", "out-missing-dir"),
            ("20_output_chdir_relative", "out-chdir"),
        ):
            cap = self.capture(name)
            self.ids[role] = int(re.findall(r"\d+", cap.stdout)[0])
        first = self.submit("n3-a", "-N 3 --wrap true")
        self.sh("sbatch --gres=gpu:5 --wrap true")  # refused, yet (in Slurm) uses up a job id
        self.sh("sbatch --mem=100G --wrap true")
        last = self.submit("n3-b", "-N 3 --wrap true")
        if last == first + 3:
            self.ids["too-many-gpus"], self.ids["too-much-mem"] = first + 1, first + 2
        wait_for(lambda: self.states(["n3-b"])["n3-b"] == ("PENDING", "PartitionNodeLimit"))
        self.sh(f"scancel {first} {last}")
        self.wait_finished([r for r in self.ids if r not in ("too-many-gpus", "too-much-mem")])
        r = self.sh(f"sacct -n -X -P -j {self.ids['wrap']} -o Account")
        self.account = r.stdout.strip()

    def env_array(self) -> None:
        """Golden 30-32: ``--array=0-2`` whose tasks dump their environment, each into its
        own file; a task's job id (the golden's 31 and 32; 30 ran last, as task 2) is the
        role ``env-array_<task>`` in this capture."""
        name = "16_env_array_0-2"
        golden = load(name)
        [(header, script)] = [(h, b) for h, b in golden.sections.items() if "script" in h]
        (self.work / header.split()[-1]).write_text(script)
        cap = self.capture(name)
        job = self.ids["env-array"] = int(cap.stdout.split()[-1])
        self.wait_finished(["env-array"])
        cap.golden_roles = {31: "env-array_0", 32: "env-array_1"}
        r = self.sh(f"sacct -n -X -P -j {job} -o JobID,JobIDRaw")
        for line in r.stdout.split():
            task, raw = line.split("|")
            if int(raw) != job:
                cap.our_roles[int(raw)] = "env-array_" + task.split("_")[1]

    def direct_steps(self) -> None:
        """Golden 33-35: ``srun`` outside an allocation makes its own job (our id read
        from what it prints).  Golden 34 waited for resources (33's nodes were still
        being freed): a blocker job holds both nodes until srun says it is queued."""
        cap = self.capture("17_env_srun_direct_2nodes")
        if m := re.search(r"^SLURM_JOB_ID=(\d+)$", cap.stdout, re.M):
            self.ids["srun-direct"] = int(m[1])
            self.wait_finished(["srun-direct"])
        r = self.sh("sbatch --parsable -J blocker -N 2 --exclusive --wrap 'sleep 300'")
        assert r.returncode == 0, r.stderr
        blocker = int(r.stdout.split(";")[0])
        self.others.append(blocker)
        state = lambda: self.sh(f"squeue -h -j {blocker} -o %T").stdout.strip()  # noqa: E731
        wait_for(lambda: state() == "RUNNING", what="the blocker to run")
        name = "17_srun_label_hostname"
        proc = subprocess.Popen(
            ["bash", "-c", self.translate(load(name).command)],
            cwd=self.work, env=self.cluster.env(), text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            ready, _, _ = select.select([proc.stderr], [], [], 30)
            first = proc.stderr.readline() if ready else ""  # type: ignore[union-attr]
            self.sh(f"scancel {blocker}")
            out, rest = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.captures[name] = Capture(out, first + rest, proc.returncode, self.work)
        if m := re.search(r"job (\d+) queued", first):
            self.ids["srun-label"] = int(m[1])
            self.wait_finished(["srun-label"])
        cap = self.capture("17_srun_step_in_env")
        if cap.stdout.split("\n")[0].isdigit():
            self.ids["srun-printenv"] = int(cap.stdout.split("\n")[0])

    def live_queue(self) -> None:
        """Golden 50-58: one job fills both nodes, five wait behind it."""
        self.submit("big-running", "-J big-running -N 2 --exclusive --wrap 'sleep 300'")
        wait_for(lambda: self.states(["big-running"])["big-running"][0] == "RUNNING")
        big = self.ids["big-running"]
        self.submit("wants-2nodes", "-J wants-2nodes -N 2 --wrap true")
        self.submit("small-one", "-J small-one --wrap true")
        self.submit("after-big", f"-J after-big --dependency=afterok:{big} --wrap true")
        self.submit("held", "-J held --hold --wrap true")
        self.submit("later", "-J later --begin=now+1hour --wrap true")
        self.submit("gpu-job", "-J gpu-job --gres=gpu:2 --wrap true")
        self.submit("arr", "-J arr --array=0-9%2 --wrap true")
        fails = self.submit("fails", "-J fails --wrap 'exit 1'")
        self.submit("never", f"-J never --dependency=afterok:{fails} --wrap true")
        waiting = [
            *("wants-2nodes", "small-one", "after-big", "held", "later"),
            *("gpu-job", "arr", "fails", "never"),
        ]
        wait_for(
            lambda: all(
                state == "PENDING" and reason not in ("None", "")
                for state, reason in self.states(waiting).values()
            ),
            what="every waiting job to be pending with a reason",
        )
        for name in sorted(n for n in LIVE if n.startswith("50_") and n != "50_sshare"):
            self.capture(name)
        from cli import sshare  # imported before the fork drops privileges

        if os.geteuid() == 0:  # alice's own rows: nobody's here
            as_nobody(self, [(sshare.main, [])], "50_sshare")
        else:
            self.unavailable["50_sshare"] = "acting as another user needs root"
        self.capture("52_scancel_signal_running")

    def cancels(self) -> None:
        """Golden 51-52: job changes and another user's refusals (``golden_jobops``), the
        pending cancel, then big-running requeued (its nodes free: the queue runs) and
        cancelled while it waits out its BeginTime, as on the anchor."""
        target = self.submit("other-users-target", "-J other-target --wrap 'sleep 300'")
        job_changes(self, target)
        self.sh(f"scancel {target}")
        self.capture("52_scancel_pending")
        self.capture("52_scancel_array_task")
        self.capture("52_squeue_after_cancel_pending")
        # root cancels never while it still waits on fails (sacct: "CANCELLED by 0",
        # Reason Dependency, as on the anchor)
        self.sh(f"scancel {self.ids['never']}")
        requeue_running(self)
        self.capture("52_scancel_running")
        self.capture("52_squeue_after_cancel_running")
        self.capture("52_scancel_already_cancelled")
        self.wait_finished(["gpu-job", "small-one", "fails", "held", "arr"])
        self.capture("52_scancel_completed")
        wait_requeued_eligible(self)

    def final_states(self) -> None:
        """Golden 65-70 and the 60_* views of every state.  First the jobs that would wait
        on: after-big (its dependency can no longer hold) and later (its begin time)."""
        for role in ("after-big", "later"):
            self.sh(f"scancel {self.ids[role]}")
        self.submit("ok", "-J ok --wrap 'exit 0'")
        self.submit("fail1", "-J fail1 --wrap 'exit 1'")
        self.submit("fail3", "-J fail3 --wrap 'exit 3'")
        self.submit("killed9", "-J killed9 --wrap 'kill -9 $$'")
        # its step fails, the script goes on: the job COMPLETED, step 0 FAILED (golden 69;
        # the script is not in the golden: srun false, then an echo, as the output shows)
        (self.work / "stepfail.sh").write_text("#!/bin/bash\nsrun false\necho after\n")
        self.submit("stepfail", "-J stepfail stepfail.sh")
        self.submit("cancel-running", "-J cancel-running --wrap 'sleep 300'")
        wait_for(lambda: self.states(["cancel-running"])["cancel-running"][0] == "RUNNING")
        self.sh(f"scancel {self.ids['cancel-running']}")
        self.wait_finished(list(self.ids))
        # sacct -E now counts whole seconds, and a job that became eligible in the
        # current second is not yet "before now" (as in Slurm): the anchor's sacct
        # ran later than that (60_sacct_snakemake), so ours does too
        last = int(time.time())
        wait_for(lambda: time.time() >= last + 1, what="the next second")
        for name in sorted(n for n in LIVE if n.startswith("60_")):
            if (
                name not in ("60_sinfo_N_l_idle", "60_squeue_after_all_done")
                and "timeout" not in name
            ):
                self.capture(name)
        self.reuse_timeout_job()

    def reuse_timeout_job(self) -> None:
        """60_*timeout*: a TIMEOUT takes a 1-minute limit, so reuse one the session made."""
        r = self.sh("squeue -h -t TIMEOUT -o %i")  # still known to the controller (MinJobAge)
        found = sorted(int(x) for x in r.stdout.split() if x.isdigit())
        why = "no TIMEOUT job in this session (test_batch_jobs.py's time-limit test makes one)"
        if found:
            job = found[-1]
            shown = self.sh(f"scontrol show job {job}")
            why = f"job {job} already purged (MinJobAge)"
            if shown.returncode == 0:
                cwd = Path(re.search(r"WorkDir=(\S+)", shown.stdout)[1])  # type: ignore[index]
                for name, command in (
                    ("60_scontrol_show_job_timeout", f"scontrol show job {job}"),
                    ("60_timeout_job_output", f"cat slurm-{job}.out"),
                ):
                    cap = self.capture(name, command, cwd)
                    cap.golden_roles, cap.our_roles = {18: "tmo"}, {job: "tmo"}
                    cap.account = re.search(r"Account=(\S+)", shown.stdout)[1]  # type: ignore[index]
                return
        for name in ("60_scontrol_show_job_timeout", "60_timeout_job_output"):
            self.unavailable[name] = why
