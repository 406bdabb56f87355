"""Several hosts: a controller and two agents, each on a "host" of its own (tests/netns.py).

The cluster is set up as a lab admin would set up three machines::

    ctl 10.213.0.10   slurmctld, slurm.conf, the cluster key, munged
    a1  10.213.0.11   slurmd --conf-server ctl (no slurm.conf), its node key, munged
    a2  10.213.0.12   the same

* **configless**: the agents' hosts cannot see the controller's directory at
  all (an empty tmpfs covers it there); ``slurmd -N a1 --conf-server ctl``
  fetches the configuration, caches it in its spool and runs from the copy,
  and its jobs' ``SLURM_CONF`` points at the copy.
* **auth/munge**: one munged per host, all with the same key, each on munge's
  default socket of its host; commands on an agent's host (``srun`` in a
  job, ``sbatch`` typed there) cannot reach the controller's Unix socket,
  so they go over TCP with a munge credential from their own munged.
* **names resolve across hosts**: no ``NodeAddr=``; every host's /etc/hosts
  names all three, as a lab's DNS would.  A two-node gloo ``all_reduce``
  rendezvous at ``MASTER_ADDR`` (the first node's name) from the other host.
* **cut links** (a1's switch port down): shorter than ``SlurmdTimeout`` (6 s
  here), the job rides it out and its result arrives after the healing; longer,
  a1's agent kills its run first (fencing, ``agent.cutoff``), a1 goes DOWN,
  its job is requeued onto a2 and completes there, and a1 comes back by
  itself (``ReturnToService=1``) once the link heals.

Jobs synchronise on files the test creates in the shared work directory
(the "NFS home" every host sees), never on sleeps.  Node weights (a1
lighter) make a1 the first choice, so the requeued run is the one on a2.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.isolation import discard
from cli.localcluster import cancel_all
from slurmlite.configless import served_files
from tests.agent.jobs import is_live
from tests.e2e.conftest import BIN, Cluster, wait_for
from tests.munged import Munged, munged_or_skip
from tests.netns import Network, hosts, netns_or_skip

TIMEOUT = 6  # SlurmdTimeout, seconds
AGENTS = ("a1", "a2")

CONF = """\
ClusterName=hosts
SlurmctldHost=ctl
StateSaveLocation={b}/ctl/state
SlurmctldPidFile={b}/ctl/slurmctld.pid
SlurmctldLogFile={b}/ctl/slurmctld.log
SlurmliteKeyFile={b}/ctl/slurmlite.key
SlurmdSpoolDir={b}/%n/spool
SlurmdPidFile={b}/%n/slurmd.pid
SlurmdLogFile={b}/%n/slurmd.log
SlurmliteNodeKeyFile={b}/%n/%n.key
AuthType=auth/munge
SlurmUser=root
SlurmdTimeout={timeout}
SlurmliteHeartbeatInterval=1
KillWait=2
ReturnToService=1
SchedulerParameters=requeue_delay=1,bf_interval=1
SlurmdParameters=config_overrides
DefMemPerCPU=500
NodeName=a1 CPUs=2 RealMemory=2000 Weight=1
NodeName=a2 CPUs=2 RealMemory=2000 Weight=2
PartitionName=main Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP
"""


@dataclass
class Lab:
    net: Network
    cluster: Cluster  # the controller's conf: commands from here use its Unix socket
    base: Path

    @property
    def conf(self) -> Path:  # for the invariants check (tests/e2e/conftest.py)
        return self.cluster.conf

    def cache(self, node: str) -> Path:
        return self.base / node / "spool" / "conf-cache" / "slurm.conf"

    def on(self, host: str, command: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """A shell command line typed on ``host``, with the SLURM_CONF its agent cached."""
        env = self.cluster.env(SLURM_CONF=str(self.cache(host)), **extra)
        return self.net[host].run(["bash", "-c", command], cwd=self.cluster.work, env=env)

    def node_state(self, node: str) -> str:
        return self.cluster.run(f"sinfo -h -N -n {node} -o %T").stdout.strip()

    def job(self, jid: int) -> dict[str, str]:
        text = self.cluster.run(f"scontrol show job {jid}").stdout
        return dict(w.split("=", 1) for w in text.split() if "=" in w)


def _slurmlite(*args: str) -> None:
    subprocess.run([str(BIN / "slurmlite"), *args], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def lab() -> Iterator[Lab]:
    netns_or_skip()
    binary = munged_or_skip()
    base = Path(tempfile.mkdtemp(prefix="slurmlite-hosts-"))
    base.chmod(0o755)
    work = base / "work"
    work.mkdir(mode=0o777)
    work.chmod(0o777)
    names = ("ctl", *AGENTS)
    for name in names:
        (base / name).mkdir(mode=0o755)
    conf = base / "ctl" / "slurm.conf"
    conf.write_text(CONF.format(b=base, timeout=TIMEOUT))
    _slurmlite("keygen", str(base / "ctl" / "slurmlite.key"))
    for node in AGENTS:  # each node's key on its own host only
        _slurmlite("keys", "node", node, "--dir", str(base / node),
                   "--key-file", str(base / "ctl" / "slurmlite.key"))  # fmt: skip
    hidden = {n: [base / other for other in names if other != n] for n in names}
    key = os.urandom(1024)  # the cluster's munge key, copied to every host
    daemons: list[Munged] = []
    try:
        with hosts(base, names, hidden) as net:
            for name in names:  # each host's munged on munge's default socket there
                run = net[name].run_dir / "munge"
                daemons.append(Munged.start(run, binary, key=key, socket_name="munge.socket.2"))
            cluster = Cluster(directory=base / "ctl", conf=conf, work=work)
            env = cluster.env()
            python = sys.executable
            r = net["ctl"].run([python, "-m", "controller.main", "-f", str(conf)], env=env)
            assert r.returncode == 0, r.stderr
            bare = {k: v for k, v in env.items() if k != "SLURM_CONF"}  # nothing to read
            for node in AGENTS:
                argv = [python, "-m", "agent.main", "-N", node, "--conf-server", "ctl",
                        "--fake-gpus"]  # fmt: skip
                r = net[node].run(argv, env=bare)
                assert r.returncode == 0, r.stderr
            lab = Lab(net=net, cluster=cluster, base=base)
            wait_for(
                lambda: all(lab.node_state(n) == "idle" for n in AGENTS),
                timeout=60,
                what="both agents registered and idle",
            )
            try:
                yield lab
            finally:
                cancel_all(cluster.directory)
    finally:
        for daemon in daemons:
            daemon.stop()
        for node in AGENTS:  # the agents' cgroups (their processes are gone by now)
            try:
                discard(base / node / "spool")
            except OSError:
                pass  # none were made (no writable cgroup hierarchy)
        shutil.rmtree(base, ignore_errors=True)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def until_file(path: Path) -> str:
    return f"while [ ! -e {path} ]; do sleep 0.05; done"


# ------------------------------------------------------------ configless


def test_agents_run_from_the_config_the_controller_served(lab):
    conf = lab.cluster.conf
    for node in AGENTS:
        # the agent's host cannot see the controller's files at all ...
        assert lab.net[node].run(["test", "-e", str(conf)]).returncode == 1
        # ... it runs from the copy it fetched, which is what the controller serves
        assert lab.cache(node).read_text() == served_files(str(conf))["slurm.conf"]
    w = lab.cluster.new_workdir()
    jid = lab.cluster.submit(f"-w a2 -o {w}/env.out --wrap 'echo $SLURM_CONF; hostname'")
    assert lab.cluster.wait_done(jid) == "COMPLETED"
    assert lines(w / "env.out") == [str(lab.cache("a2")), "a2"]


def test_commands_on_an_agents_host_use_munge_over_tcp(lab):
    w = lab.cluster.new_workdir()
    # typed on a1: no controller socket there, so TCP to ctl:6817 with a1's munge credential
    r = lab.on("a1", f"sbatch --parsable -w a2 -o {w}/out --wrap 'srun hostname; id -u'")
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout)
    assert lab.cluster.wait_done(jid) == "COMPLETED"
    # the job's srun ran on a2, talking to the controller over TCP with a2's munged
    assert lines(w / "out") == ["a2", "0"]
    assert lab.on("a1", f"squeue -h -t all -j {jid} -o %u").stdout.strip() == "root"


def test_a_host_with_another_munge_key_is_refused(lab):
    """a1 with a munged of another key on its default socket (a bind mount in a mount
    namespace of the command's own): its commands and its agent's fetch are refused."""
    binary = munged_or_skip()
    rogue = Munged.start(lab.base / "a1" / "rogue", binary, socket_name="munge.socket.2")
    try:
        swap = f'mount --bind {rogue.directory} /run/munge && exec "$@"'
        wrap = ["unshare", "--mount", "--propagation", "slave", "sh", "-c", swap, "-"]
        env = lab.cluster.env(SLURM_CONF=str(lab.cache("a1")))
        r = lab.net["a1"].run([*wrap, "squeue", "-h"], env=env)
        assert (r.returncode, r.stderr) == (1, (
            "squeue: error: Invalid authentication credential: munge: Invalid credential\n"
            "slurm_load_jobs error: Protocol authentication error\n"))  # fmt: skip
        bare = {k: v for k, v in env.items() if k != "SLURM_CONF"}
        argv = [sys.executable, "-m", "agent.main", "-D", "-N", "a1", "--conf-server", "ctl"]
        r = lab.net["a1"].run([*wrap, *argv], env=bare)
        assert (r.returncode, r.stderr) == (1, (
            "slurmd: error: --conf-server: ctl:6817 refused the request: "
            "HTTP 401: munge: Invalid credential\n"))  # fmt: skip
    finally:
        rogue.stop()


# ------------------------------------------------------------ MASTER_ADDR


TRAIN = """\
import os, sys
import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
sys.stdout.write(f"rank={rank} host={os.uname().nodename} "
                 f"master={os.environ['MASTER_ADDR']} sum={int(t.item())}\\n")
dist.destroy_process_group()
"""


def test_gloo_all_reduce_across_two_hosts(lab):
    if importlib.util.find_spec("torch") is None:
        if os.environ.get("SLURMLITE_REQUIRE_CLIENTS") == "1":
            pytest.fail("torch not installed; SLURMLITE_REQUIRE_CLIENTS=1 makes this an error")
        pytest.skip("torch not installed (pip install -e '.[test]')")
    w = lab.cluster.new_workdir()
    (w / "train.py").write_text(TRAIN)
    jid = lab.cluster.submit(
        f"-N2 --ntasks-per-node=1 -o {w}/out --wrap 'srun python {w}/train.py'", cwd=w
    )
    state = lab.cluster.wait_done(jid, timeout=120)
    text = (w / "out").read_text()
    assert state == "COMPLETED", text
    got = sorted(line for line in text.splitlines() if line.startswith("rank="))
    # MASTER_ADDR is the first node's name; a2 resolves it to a1's address; 1 + 2 = 3
    assert got == ["rank=0 host=a1 master=a1 sum=3", "rank=1 host=a2 master=a1 sum=3"], text


# ------------------------------------------------------------ cut links


def test_a_cut_shorter_than_slurmdtimeout_is_ridden_out(lab):
    w = lab.cluster.new_workdir()
    log, go = w / "short.log", w / "go"
    jid = lab.cluster.submit(
        f"-w a1 -o /dev/null --wrap 'echo start >> {log}; {until_file(go)}; echo end >> {log}'"
    )
    wait_for(lambda: lines(log) == ["start"], what="the job started on a1")
    seen = {lab.node_state("a1")}
    lab.net.cut("a1")
    try:
        go.touch()  # the job ends while a1 is cut off: its result waits in a1's spool
        wait_for(lambda: lines(log) == ["start", "end"], what="the job's end on a1")
        assert lab.job(jid)["JobState"] == "RUNNING"  # the controller has not heard yet
        seen.add(lab.node_state("a1"))
    finally:
        lab.net.heal("a1")
    assert lab.cluster.wait_done(jid) == "COMPLETED"
    seen.add(lab.node_state("a1"))
    assert not any(s.startswith("down") for s in seen), seen
    job = lab.job(jid)
    assert (job["Restarts"], job["NodeList"], job["ExitCode"]) == ("0", "a1", "0:0")


@dataclass
class LongCut:
    jid: int
    log: Path
    first_run_killed: bool  # the a1 run was gone by the time the a2 run had started


@pytest.fixture(scope="module")
def long_cut(lab) -> LongCut:
    """a1 cut off past SlurmdTimeout while it runs a job; healed once the job ended on a2."""
    w = lab.cluster.new_workdir()
    log, go = w / "runs.log", w / "go"
    run = "${SLURM_RESTART_COUNT:-0} $SLURMD_NODENAME"
    script = f"echo start {run} >> {log}; {until_file(go)}; echo end {run} >> {log}"
    jid = lab.cluster.submit(f"-o /dev/null --wrap '{script}'")  # a1: the lighter node
    wait_for(lambda: lines(log) == ["start 0 a1"], what="the first run on a1")
    launch = lab.base / "a1" / "spool" / f"job{jid}" / "launch.json"
    pid = int(wait_for(lambda: launch.exists() and json.loads(launch.read_text())["pid"]))
    lab.net.cut("a1")
    try:
        wait_for(lambda: lab.node_state("a1").startswith("down"), timeout=TIMEOUT + 30,
                 what="a1 DOWN after SlurmdTimeout")  # fmt: skip
        wait_for(lambda: "start 1 a2" in lines(log), timeout=30, what="the requeued run on a2")
        try:  # fencing: a1's agent, cut off for SlurmdTimeout, has killed its run by now
            wait_for(lambda: not is_live(pid), timeout=3, what="the a1 run killed")
            killed = True
        except AssertionError:
            killed = False
        go.touch()
        assert lab.cluster.wait_done(jid) == "COMPLETED"
    finally:
        lab.net.heal("a1")
    return LongCut(jid=jid, log=log, first_run_killed=killed)


def test_a_cut_past_slurmdtimeout_requeues_onto_the_other_host(lab, long_cut):
    job = lab.job(long_cut.jid)
    assert (job["JobState"], job["Restarts"], job["NodeList"]) == ("COMPLETED", "1", "a2")
    r = lab.cluster.run(f"sacct -n -P -X -j {long_cut.jid} -o JobID,State,ExitCode,NodeList")
    assert r.stdout.splitlines() == [f"{long_cut.jid}|COMPLETED|0:0|a2"]
    assert lines(long_cut.log).count("start 1 a2") == 1
    assert lines(long_cut.log).count("end 1 a2") == 1  # the run that counts, once
    # healed: a1 answers again and is back in service by itself (ReturnToService=1)
    wait_for(lambda: lab.node_state("a1") == "idle", timeout=30, what="a1 back to idle")
    assert "Reason=" not in lab.cluster.run("scontrol show node a1").stdout


def test_only_one_run_wrote_the_cut_off_one_was_killed(long_cut):
    # agent fencing (agent.cutoff): a1's agent, cut off for SlurmdTimeout less a margin
    # with ctl silent, killed its run before the controller requeued the job onto a2
    assert long_cut.first_run_killed
    assert lines(long_cut.log) == ["start 0 a1", "start 1 a2", "end 1 a2"]
