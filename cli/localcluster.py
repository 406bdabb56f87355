"""A whole cluster on one machine: ``slurmlite cluster up|down|status``.

``up`` writes ``DIR/slurm.conf`` (compressed timeouts so tests run fast,
fake GPUs, ``DefMemPerCPU`` so jobs share nodes, ``config_overrides`` so
each agent advertises what the config says, a lab's priority weights
(:data:`LAB_PRIORITY`; all 0 with ``fifo``)), a private cluster key, starts
one ``slurmctld`` and one ``slurmd`` per node on loopback, waits until every
node is IDLE and writes ``DIR/env`` (``export SLURM_CONF=...``).

Each node gets its own loopback address (127.0.1.1, 127.0.1.2, ...) and
port.  Node names must resolve to those addresses, because jobs use them as
host names (torchrun's ``--master_addr``): names that do not resolve are
added to ``/etc/hosts`` in a block marked with the cluster directory (root
only; ``down`` removes the block); without root, ``up`` says what to add.

``down`` stops exactly the daemons whose PID files are in ``DIR``.
Running ``up`` twice is harmless: a running cluster is reported, not
restarted.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from slurmlite.credential import generate_key_file
from slurmlite.hostlist import expand

HOSTS_FILE = Path("/etc/hosts")


class ClusterError(Exception):
    pass


@dataclass
class ClusterSpec:
    directory: Path
    nodelist: str = "node[1-2]"
    cpus_per_node: int = 4
    gpus_per_node: int = 0
    gpu_type: str | None = None
    mem_per_node: int = 8000
    features: str = ""
    port: int = 0
    real_gpus: bool = False
    cluster_name: str = "local"
    def_mem_per_cpu: int | None = None  # default: RealMemory / CPUs, so jobs share nodes
    extra_partitions: tuple[str, ...] = ()  # more PartitionName= lines (tests, demos)
    store_url: str | None = None  # SlurmliteStoreURL (default: SQLite under the cluster dir)
    extra_conf: tuple[str, ...] = ()  # more global Key=Value lines (tests: Prolog=...)
    fifo: bool = False  # --fifo: every priority weight 0 (submission order), not LAB_PRIORITY

    @property
    def conf(self) -> Path:
        return self.directory / "slurm.conf"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


# ------------------------------------------------------------ name resolution


def node_addresses(names: list[str]) -> tuple[dict[str, str], list[str]]:
    """Loopback address per node, and the names /etc/hosts must learn."""
    addrs: dict[str, str] = {}
    missing: list[str] = []
    for i, name in enumerate(names, start=1):
        try:
            found = socket.gethostbyname(name)
        except OSError:
            found = None
        if found is None:
            addrs[name] = f"127.0.1.{i}"
            missing.append(name)
        elif found.startswith("127."):
            addrs[name] = found
        else:
            raise ClusterError(
                f"node name {name} resolves to {found}, which is not on this machine; "
                f"choose other names with --nodelist"
            )
    return addrs, missing


def _marker(directory: Path) -> tuple[str, str]:
    return f"# BEGIN slurmlite cluster {directory}", f"# END slurmlite cluster {directory}"


def add_hosts_block(directory: Path, addrs: dict[str, str], names: list[str]) -> None:
    if not names:
        return
    if os.geteuid() != 0:
        lines = "\n".join(f"  {addrs[n]} {n}" for n in names)
        raise ClusterError(
            "these node names do not resolve, and only root may add them to /etc/hosts:\n"
            f"{lines}\nadd them yourself, or choose resolvable names with --nodelist"
        )
    begin, end = _marker(directory)
    block = [begin, *(f"{addrs[n]} {n}" for n in names), end]
    text = HOSTS_FILE.read_text() if HOSTS_FILE.exists() else ""
    if text and not text.endswith("\n"):
        text += "\n"
    HOSTS_FILE.write_text(text + "\n".join(block) + "\n")


def remove_hosts_block(directory: Path) -> None:
    begin, end = _marker(directory)
    try:
        lines = HOSTS_FILE.read_text().splitlines()
    except OSError:
        return
    out, skipping = [], False
    for line in lines:
        if line == begin:
            skipping = True
            continue
        if line == end and skipping:
            skipping = False
            continue
        if not skipping:
            out.append(line)
    if len(out) != len(lines):
        HOSTS_FILE.write_text("\n".join(out) + "\n")


# ------------------------------------------------------------ configuration


def split_devices(count: int, names: list[str]) -> dict[str, list[int]]:
    """Deal ``count`` real GPUs out to the nodes in contiguous blocks: 4 GPUs, 2 nodes -> [0,1], [2,3]."""
    k = len(names)
    return {n: list(range(i * count // k, (i + 1) * count // k)) for i, n in enumerate(names)}


def real_gpu_split(names: list[str]) -> tuple[dict[str, list[int]], str]:
    from agent.gres import nvml

    found = nvml.probe()
    if not found:
        raise ClusterError("--real-gpus: no GPU found through NVML on this machine")
    if len(found) < len(names):
        raise ClusterError(
            f"--real-gpus: {len(found)} GPUs cannot be split among {len(names)} nodes"
        )
    return split_devices(len(found), names), found[0].name


# A small lab's multifactor priority, written by ``cluster up`` unless --fifo.
# Fair-share dominates: a group that used little recently goes first, whatever
# the queue's order (10000 is the whole range one factor can move a priority).
# Age comes next, a tenth of that, reaching its full 1000 after PriorityMaxAge
# (7 days), so a job from a heavy user still climbs and never starves.  Job
# size only breaks ties (100: Slurm's default of favouring larger jobs, which
# otherwise wait longest for a whole node).  Past usage counts half after
# PriorityDecayHalfLife (7 days): last week's burst weighs less by next week.
LAB_PRIORITY = (
    "PriorityType=priority/multifactor",
    "PriorityWeightFairshare=10000",
    "PriorityWeightAge=1000",
    "PriorityWeightJobSize=100",
    "PriorityMaxAge=7-0",
    "PriorityDecayHalfLife=7-0",
)
FIFO_PRIORITY = (
    "PriorityType=priority/multifactor",
    "PriorityWeightFairshare=0",
    "PriorityWeightAge=0",
    "PriorityWeightJobSize=0",
)


def priority_lines(fifo: bool) -> list[str]:
    if fifo:
        return ["# --fifo: every priority weight 0, jobs start in submission order", *FIFO_PRIORITY]
    return ["# a small lab's priorities: fair-share first, then age, job size small", *LAB_PRIORITY]


def render_conf(
    spec: ClusterSpec,
    names: list[str],
    addrs: dict[str, str],
    ports: dict[str, int],
    ctld_port: int,
    real: dict[str, list[int]] | None = None,
) -> str:
    d = spec.directory
    def_mem = spec.def_mem_per_cpu or max(1, spec.mem_per_node // max(1, spec.cpus_per_node))
    lines = [
        f"# slurmlite local cluster written by 'slurmlite cluster up --dir {d}'",
        f"ClusterName={spec.cluster_name}",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n",
        f"SlurmctldPidFile={d}/run/slurmctld.pid",
        f"SlurmdPidFile={d}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/log/slurmctld.log",
        f"SlurmdLogFile={d}/log/slurmd-%n.log",
        f"SlurmliteKeyFile={d}/slurmlite.key",
        f"SlurmliteSocket={d}/state/slurmctld.sock",
        "SlurmUser=root",
        *([f"SlurmliteStoreURL={spec.store_url}"] if spec.store_url else []),
        "# compressed timeouts: a silent node is DOWN after 5 s, kills wait 2 s",
        "SlurmdTimeout=5",
        "SlurmliteHeartbeatInterval=1",
        "KillWait=2",
        "MinJobAge=300",
        "ReturnToService=2",
        "# backfill (estimates for squeue --start) every second, not every 30 s",
        "SchedulerParameters=requeue_delay=2,bf_interval=1",
        "SlurmdParameters=config_overrides",
        f"DefMemPerCPU={def_mem}",
        "GresTypes=gpu",
        *priority_lines(spec.fifo),
        *spec.extra_conf,
    ]

    def gres(count: int) -> str:
        if not count:
            return ""
        return f" Gres=gpu:{spec.gpu_type}:{count}" if spec.gpu_type else f" Gres=gpu:{count}"

    feats = f" Features={spec.features}" if spec.features else ""
    for n in names:
        count = len(real[n]) if real else spec.gpus_per_node
        lines.append(
            f"NodeName={n} NodeAddr={addrs[n]} Port={ports[n]} CPUs={spec.cpus_per_node} "
            f"RealMemory={spec.mem_per_node}{gres(count)}{feats} State=UNKNOWN"
        )
    lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP")
    lines += [f"PartitionName={p}" for p in spec.extra_partitions]
    return "\n".join(lines) + "\n"


def render_gres(spec: ClusterSpec) -> str:
    mode = "nvml" if spec.real_gpus else "off"
    return f"# fake GPUs unless --real-gpus\nAutoDetect={mode}\n"


# ---------------------------------------------------------------- lifecycle


def _daemon(module: str, *args: str) -> None:
    subprocess.run([sys.executable, "-m", module, *args], check=True, stdin=subprocess.DEVNULL)


def controller_up(spec: ClusterSpec) -> bool:
    pid = read_pid(spec.directory / "run" / "slurmctld.pid")
    return pid is not None and pid_alive(pid)


def up(spec: ClusterSpec, timeout: float = 60.0) -> str:
    d = spec.directory = spec.directory.resolve()
    if spec.conf.exists() and controller_up(spec):
        wait_idle(spec, timeout)
        return f"cluster in {d} is already up"
    names = expand(spec.nodelist)
    if not names:
        raise ClusterError("--nodelist names no node")
    real = None
    if spec.real_gpus:
        real, model = real_gpu_split(names)
        spec.gpu_type = spec.gpu_type or model
    addrs, missing = node_addresses(names)
    add_hosts_block(d, addrs, missing)
    for sub in ("state", "spool", "run", "log"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o755)
    if not (d / "slurmlite.key").exists():
        generate_key_file(d / "slurmlite.key")
    ctld_port = spec.port or free_port()
    ports = {n: free_port(addrs[n]) for n in names}
    spec.conf.write_text(render_conf(spec, names, addrs, ports, ctld_port, real))
    (d / "gres.conf").write_text(render_gres(spec))
    os.chmod(spec.conf, 0o644)
    _daemon("controller.main", "-f", str(spec.conf))
    for n in names:
        args = ["-N", n, "-f", str(spec.conf)]
        if real is None:
            args.append("--fake-gpus")
        elif real[n]:
            args += ["--gpu-devices", ",".join(map(str, real[n]))]
        _daemon("agent.main", *args)
    wait_idle(spec, timeout)
    (d / "env").write_text(f"export SLURM_CONF={spec.conf}\n")
    return f"cluster up in {d}: nodes {spec.nodelist}; run 'source {d}/env' to use it"


def wait_idle(spec: ClusterSpec, timeout: float) -> None:
    from cli.client import ControllerClient
    from slurmlite.errors import SlurmError

    deadline = time.monotonic() + timeout
    last = "controller not answering"
    while time.monotonic() < deadline:
        try:
            client = ControllerClient.from_env("slurmlite", str(spec.conf))
            nodes = client.get_nodes()
            client.close()
            waiting = [n.name for n in nodes if n.state != "IDLE" or n.flags]
            if not waiting:
                return
            last = "nodes not idle yet: " + ",".join(waiting)
        except SlurmError as e:
            last = str(e)
        time.sleep(0.1)
    raise ClusterError(
        f"cluster in {spec.directory} did not become ready within {timeout:.0f} s ({last}); "
        f"see the logs in {spec.directory}/log"
    )


def pid_files(directory: Path) -> list[Path]:
    run = directory / "run"
    return sorted(run.glob("slurmd-*.pid")) + [run / "slurmctld.pid"]


def cancel_all(directory: Path, timeout: float = 10.0) -> None:
    """Cancel every job of the cluster and wait (bounded) until none is running."""
    from cli.client import ControllerClient
    from slurmlite.errors import SlurmError
    from slurmlite.protocol import CancelRequest

    conf = directory / "slurm.conf"
    if not conf.exists():
        return
    try:
        client = ControllerClient.from_env("slurmlite", str(conf))
        client.cancel(CancelRequest())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not client.get_jobs(states={"RUNNING", "COMPLETING"}):
                break
            time.sleep(0.1)
        client.close()
    except SlurmError:
        return  # controller already gone


def down(directory: Path, timeout: float = 15.0) -> list[str]:
    """Cancel the jobs, then stop every daemon of the cluster at once (TERM, KILL after ``timeout``)."""
    directory = directory.resolve()
    if controller_up(ClusterSpec(directory)):
        cancel_all(directory)
    running = []
    for path in pid_files(directory):
        pid = read_pid(path)
        if pid is not None and pid_alive(pid):
            os.kill(pid, signal.SIGTERM)
            running.append((path, pid))
    deadline = time.monotonic() + timeout
    while any(pid_alive(pid) for _, pid in running) and time.monotonic() < deadline:
        time.sleep(0.05)
    stopped = []
    for path, pid in running:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        stopped.append(f"{path.stem} (pid {pid})")
        path.unlink(missing_ok=True)
    discard_job_cgroups(directory)
    remove_hosts_block(directory)
    return stopped


def discard_job_cgroups(directory: Path) -> None:
    """Kill what is left of the cluster's jobs and remove their cgroups, once the agents
    are gone: a job whose agent never comes back would otherwise wait in its cgroup."""
    spools = [p for p in (directory / "spool").glob("*") if p.is_dir()]
    if spools:
        from agent.isolation import discard  # only where the cluster's agents ran

        for spool in spools:
            try:
                discard(spool)
            except OSError:
                pass  # not ours to remove (not root, no cgroups): nothing was made there


def status(directory: Path) -> list[tuple[str, int | None, bool]]:
    out = []
    for path in pid_files(directory.resolve()):
        pid = read_pid(path)
        out.append((path.stem, pid, pid is not None and pid_alive(pid)))
    return out
