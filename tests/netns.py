"""Several "hosts" on one machine: network namespaces on a private bridge.

:func:`hosts` builds, and always takes down again, a small network::

                      hub namespace: bridge br0
                 p1 /        p2 |        p3 \\        (veth pairs)
              eth0            eth0            eth0
     ctl 10.213.0.10    a1 10.213.0.11    a2 10.213.0.12

Each host is a network namespace of its own (``ip netns add``), joined to
the hub's bridge by a veth pair, with an address in ``10.213.0.0/24`` that
exists only inside these namespaces: nothing of the machine's own
interfaces, routes or files is changed.  A host also has its own

* **host name** (a UTS namespace): ``hostname`` says ``a1``, as gloo and
  ``slurmd`` without ``-N`` expect;
* **/etc/hosts** (bind-mounted from ``<base>/hosts``): every host's name
  resolves to its address, as a lab's DNS would make them;
* **/run** (``<base>/<host>/run`` bind-mounted there): so each host's munged
  sits on munge's default socket, ``/run/munge/munge.socket.2``;
* **view of the disk**: the directories in ``hidden`` are covered by an
  empty tmpfs, e.g. the controller's directory on the agents' hosts, so an
  agent cannot read the controller's slurm.conf or key.  Everything else
  (the project, the venv, a shared work directory) is seen by all, as over NFS.

Both namespaces are held by one ``sleep`` per host (the *holder*);
:meth:`Host.argv` wraps a command in ``nsenter`` into the holder's network,
mount and UTS namespaces.  A daemon started that way and detaching stays
in them.  :meth:`Network.cut` sets a host's port on the bridge down (the
cable pulled at the switch) and :meth:`Network.heal` up again.

Cleanup (always, even when the test fails): every process still in a host's
namespace -- holders, daemons, jobs, all started by the test -- is killed
by PID, then the namespaces are deleted (their veths go with them).

Where namespaces cannot be made (not root, no ``ip``/``nsenter``/``unshare``,
a kernel or sandbox without them), :func:`netns_or_skip` skips with the
reason, unless ``SLURMLITE_REQUIRE_NETNS=1`` (``.ci/run``) makes that a failure.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SUBNET = "10.213.0"  # /24, inside the namespaces only
TOOLS = ("ip", "nsenter", "unshare")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def netns_problem() -> str | None:
    """Why namespaces cannot be made here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"{', '.join(missing)} not found (packages iproute2, util-linux)"
    probe = f"slprobe{os.getpid()}"
    r = _ip("netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip()}"
    try:  # what hosts() needs: a bridge, a veth pair, mount and UTS namespaces
        for args in (("link", "add", "br0", "type", "bridge"),
                     ("link", "add", "v0", "type", "veth", "peer", "name", "v1")):  # fmt: skip
            r = _ip("-n", probe, *args, check=False)
            if r.returncode != 0:
                return f"ip link add ... type {args[4]} failed: {r.stderr.strip()}"
        argv = ["unshare", "--uts", "--mount", "--propagation", "slave", "true"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return f"unshare --uts --mount failed: {r.stderr.strip()}"
    finally:
        _ip("netns", "del", probe, check=False)
    return None


def netns_or_skip() -> None:
    why = netns_problem()
    if why is None:
        return
    if os.environ.get("SLURMLITE_REQUIRE_NETNS") == "1":
        pytest.fail(f"{why} (SLURMLITE_REQUIRE_NETNS=1)")
    pytest.skip(f"cannot build hosts in network namespaces: {why}")


@dataclass
class Host:
    name: str
    addr: str
    netns: str
    port: str  # its veth end in the hub (the switch port)
    run_dir: Path  # seen as /run inside the host
    holder: subprocess.Popen[bytes] | None = None

    def argv(self, argv: Sequence[str], cwd: str | Path = "/") -> list[str]:
        """``argv`` as run on this host (its network, mounts, host name), from ``cwd``."""
        assert self.holder is not None
        pid = str(self.holder.pid)
        return ["nsenter", "-t", pid, "-n", "-m", "-u", f"--wd={cwd}", "--", *argv]

    def run(
        self, argv: Sequence[str], cwd: str | Path = "/", timeout: float = 60, **kw
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(argv, cwd), capture_output=True, text=True, timeout=timeout, **kw
        )

    def pids(self) -> list[int]:
        r = _ip("netns", "pids", self.netns, check=False)
        return [int(p) for p in r.stdout.split() if p.isdigit()]


@dataclass
class Network:
    base: Path
    hub: str
    hosts: dict[str, Host] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def cut(self, name: str) -> None:
        """Unplug host ``name``: its switch port goes down (no carrier on its eth0)."""
        _ip("-n", self.hub, "link", "set", self.hosts[name].port, "down")

    def heal(self, name: str) -> None:
        _ip("-n", self.hub, "link", "set", self.hosts[name].port, "up")


def _holder(host: Host, hosts_file: Path, hidden: Sequence[Path]) -> subprocess.Popen[bytes]:
    script = "; ".join(
        [
            "set -e",
            f"echo {host.name} > /proc/sys/kernel/hostname",
            f"mount --bind {hosts_file} /etc/hosts",
            f"mount --bind {host.run_dir} /run",
            *(f"mount -t tmpfs -o size=64k,mode=755 hidden {d}" for d in hidden),
            "echo ready",
            "exec sleep infinity",
        ]
    )
    argv = ["nsenter", f"--net=/run/netns/{host.netns}", "unshare", "--uts", "--mount",
            "--propagation", "slave", "sh", "-c", script]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "ready", or why not (then the holder has exited)
    if line.strip() != b"ready":
        rest = line + proc.stdout.read()
        proc.wait(timeout=10)
        raise RuntimeError(f"host {host.name}: {rest.decode(errors='replace').strip()}")
    proc.stdout.close()
    return proc


@contextmanager
def hosts(
    base: Path, names: Sequence[str], hidden: dict[str, Sequence[Path]] | None = None
) -> Iterator[Network]:
    """Hosts ``names`` (addresses ``10.213.0.10``, ``.11``, ... in order) on one bridge,
    ``hidden[name]``: directories that host must not see; taken down on exit."""
    tag = f"sl{os.getpid() % 100000}"
    net = Network(base=base, hub=f"{tag}-hub")
    made: list[str] = []
    try:
        _ip("netns", "add", net.hub)
        made.append(net.hub)
        _ip("-n", net.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", net.hub, "link", "set", "br0", "up")
        for i, name in enumerate(names):
            host = Host(name, f"{SUBNET}.{10 + i}", f"{tag}-{name}", f"p{i}", base / name / "run")
            host.run_dir.mkdir(parents=True, exist_ok=True)
            host.run_dir.chmod(0o755)
            _ip("netns", "add", host.netns)
            made.append(host.netns)
            _ip("-n", net.hub, "link", "add", host.port, "type", "veth",
                "peer", "name", "eth0", "netns", host.netns)  # fmt: skip
            _ip("-n", net.hub, "link", "set", host.port, "master", "br0", "up")
            _ip("-n", host.netns, "addr", "add", f"{host.addr}/24", "dev", "eth0")
            _ip("-n", host.netns, "link", "set", "eth0", "up")
            _ip("-n", host.netns, "link", "set", "lo", "up")
            net.hosts[name] = host
        hosts_file = base / "hosts"
        lines = ["127.0.0.1 localhost", *(f"{h.addr} {h.name}" for h in net.hosts.values())]
        hosts_file.write_text("\n".join(lines) + "\n")
        hosts_file.chmod(0o644)
        for host in net.hosts.values():
            host.holder = _holder(host, hosts_file, (hidden or {}).get(host.name, ()))
        yield net
    finally:
        for host in net.hosts.values():
            _kill_all(host)
        for ns in reversed(made):
            _ip("netns", "del", ns, check=False)


def _kill_all(host: Host, timeout: float = 10.0) -> None:
    """TERM, then KILL, every process in the host's network namespace (all the test's)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = host.pids()
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout
        while host.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not host.pids():
            break
    if host.holder is not None:
        host.holder.wait(timeout=timeout)
