"""slurm.conf subset: read the configuration file a Slurm lab already has.

:func:`load_config` reads ``-f path``, else ``$SLURM_CONF``, else
``/etc/slurm/slurm.conf``; every command does, so imports stay light.
Format (slurm.conf(5); spec §5.1, §5.3, §11): ``Key=Value`` pairs, keys
case-insensitive, values may be double-quoted; ``#`` starts a comment; a
trailing ``\\`` joins the next line; ``Include <file>`` reads a file in place.
A line whose first key is ``NodeName`` or ``PartitionName`` is a *record*
about the named nodes (hostlist) or partition; ``NodeName=DEFAULT`` and
``PartitionName=DEFAULT`` set the template later records start from.  Any
other pair is a global setting (repeated: the last wins).  Unknown keys
warn (``Config.warnings``) and are kept, lower-cased, in ``extra``; a line
we cannot use raises :class:`ConfigError` starting ``file:line:``.

Pass one types each value on the line that wrote it (so errors name it;
the kinds of value and their checks: :mod:`slurmlite.confvalues`);
pass two resolves ``Nodes=`` (``ALL`` = every node), the default partition
(several ``Default=YES``: the last wins) and derived defaults.  Invariant:
node names are unique, partitions name only known nodes, one default at most.

Worked example::

    NodeName=DEFAULT CPUs=8 RealMemory=64000
    NodeName=g[1-2] Gres=gpu:a100:4 NodeAddr=10.0.0.[1-2]
    PartitionName=gpu Nodes=ALL Default=YES MaxTime=2-0

gives ``g1`` (10.0.0.1) and ``g2`` (10.0.0.2), each 8 CPUs (so Sockets=8),
64000 MiB and 4 ``a100`` GPUs; ``gpu`` has ``max_time=2880`` (2 * 1440 min).

Authentication keys (``AuthType``, ``AuthAltTypes``, ``AuthAltParameters``,
``AuthInfo``) are explained in ``controller/auth/authenticate.py``; the parameter lists
parse like ``SchedulerParameters``: ``jwt_key=/k,max_token_lifespan=3600`` ->
``{"jwt_key": "/k", "max_token_lifespan": "3600"}``.

slurmlite extensions: the ``Slurmlite*`` keys; relative paths start from
the config's directory; one ``NodeAddr`` for several nodes and ``Port=[a-b]``
let agents share a machine.  gres.conf: :mod:`slurmlite.gresconf`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from slurmlite import gresconf
from slurmlite.conftext import (
    DEFAULT_CONF,
    MAX_INCLUDE_DEPTH,
    ConfigError,
    conf_path,
    include_target,
    iter_lines,
    split_pairs,
)
from slurmlite.conftext import read_file as _read_file
from slurmlite.confvalues import convert, expand_hosts, per_node
from slurmlite.gpu_outside import GpuOutsideUse
from slurmlite.gresconf import GresConf, autodetect_for_node, gres_for_node, parse_gres_spec
from slurmlite.retention import Purge

__all__ = ["Config", "ConfigError", "GresConf", "NodeConf", "PartitionConf", "autodetect_for_node",
           "gres_for_node", "load_config", "parse_config"]  # fmt: skip
SLURM_VERSION = "22.05.8"
_FACTORS = "Age Assoc Fairshare JobSize Partition QOS".split()
PRIORITY_WEIGHT_KEYS = tuple(f"PriorityWeight{factor}" for factor in _FACTORS)
_NO_WEIGHTS = {factor.lower(): 0 for factor in _FACTORS}  # priority_weights keys: "age", ...
_CTL_HOST = re.compile(r"([^()\s]+)(?:\(([^()\s]+)\))?")


def _key(key: str, kind: str, default: Any = None, factory: Callable[[], Any] | None = None) -> Any:
    """A dataclass field read from ``key``; ``kind`` says how :func:`slurmlite.confvalues.convert` types it."""
    extra = {"default_factory": factory} if factory else {"default": default}
    return field(metadata={"key": key, "kind": kind}, **extra)


@dataclass
class NodeConf:
    """One node of a ``NodeName=`` line, templates and hostlists applied."""

    name: str
    addr: str = _key("NodeAddr", "str", "")  # "" until read: the node's name
    hostname: str = _key("NodeHostname", "str", "")
    port: int = _key("Port", "ports", 0)  # 0 until read: SlurmdPort
    cpus: int = _key("CPUs", "pos", 1)
    real_memory: int = _key("RealMemory", "pos", 1)  # MiB
    gpus: int = 0  # from Gres
    gpu_type: str | None = None
    features: list[str] = _key("Features", "list", factory=list)
    weight: int = _key("Weight", "int", 1)
    state: str = _key("State", "nstate", "UNKNOWN")
    gres: str = _key("Gres", "gres", "")  # as written, e.g. "gpu:a100:4"
    boards: int = _key("Boards", "pos", 1)
    sockets: int = _key("Sockets", "pos", 1)  # all sockets of the node
    cores_per_socket: int = _key("CoresPerSocket", "pos", 1)
    threads_per_core: int = _key("ThreadsPerCore", "pos", 1)
    extra: dict[str, str] = field(default_factory=dict)


@dataclass
class PartitionConf:
    """One ``PartitionName=`` line; times are minutes, ``None`` = UNLIMITED."""

    name: str
    nodes: list[str] = _key("Nodes", "str", factory=list)  # hostlist or ALL, expanded
    default: bool = _key("Default", "bool", False)
    max_time: int | None = _key("MaxTime", "time", None)
    default_time: int | None = _key("DefaultTime", "time", None)  # None: = max_time
    state: str = _key("State", "pstate", "UP")
    priority_job_factor: int = _key("PriorityJobFactor", "prio", 1)
    priority_tier: int = _key("PriorityTier", "prio", 1)
    tres_billing_weights: str = _key("TRESBillingWeights", "str", "")  # "": bill CPUs
    qos: str = _key("QOS", "str", "")  # a QOS whose limits apply to all its jobs; "": none
    idle_gpu_policy: dict[str, str] = _key("SlurmliteIdleGpuPolicy", "idlegpu", factory=dict)
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def effective_default_time(self) -> int | None:
        """The limit a job without ``--time`` gets."""
        return self.max_time if self.default_time is None else self.default_time


@dataclass
class Config:
    """The whole configuration; field names are the snake_case of the keys."""

    path: str = "<string>"
    cluster_name: str = _key("ClusterName", "str", "cluster")
    control_host: str = _key("SlurmctldHost", "host", "localhost")  # host or host(addr)
    control_addr: str = "localhost"
    slurmctld_port: int = _key("SlurmctldPort", "port", 6817)
    slurmd_port: int = _key("SlurmdPort", "port", 6818)
    state_save_location: str = _key("StateSaveLocation", "path", "/var/spool/slurmctld")
    slurmd_spool_dir: str = _key("SlurmdSpoolDir", "path", "/var/spool/slurmd")  # %n %h
    slurmctld_pidfile: str = _key("SlurmctldPidFile", "path", "/var/run/slurmctld.pid")
    slurmd_pidfile: str = _key("SlurmdPidFile", "path", "/var/run/slurmd.pid")
    slurmctld_logfile: str | None = _key("SlurmctldLogFile", "optpath")  # None: stderr
    slurmd_logfile: str | None = _key("SlurmdLogFile", "optpath")
    slurm_user: str = _key("SlurmUser", "str", "root")
    slurmd_timeout: int = _key("SlurmdTimeout", "sec", 300)  # 0: never mark DOWN
    kill_wait: int = _key("KillWait", "sec", 30)
    # the open mode of a job without --open-mode: 0 truncate, 1 append (kept across requeues)
    job_file_append: int = _key("JobFileAppend", "int", 0)
    min_job_age: int = _key("MinJobAge", "sec", 300)
    message_timeout: int = _key("MessageTimeout", "pos", 10)  # s a command waits for an answer
    inactive_limit: int = _key("InactiveLimit", "sec", 0)  # silent srun/salloc; 0: never
    max_job_count: int = _key("MaxJobCount", "pos", 10000)
    max_array_size: int = _key("MaxArraySize", "array", 1001)
    gres_types: list[str] = _key("GresTypes", "list", factory=list)
    def_mem_per_cpu: int = _key("DefMemPerCPU", "int", 0)  # MiB; 0: the whole node
    def_mem_per_gpu: int = _key("DefMemPerGPU", "int", 0)
    scheduler_type: str = _key("SchedulerType", "str", "sched/backfill")
    scheduler_parameters: dict[str, str] = _key("SchedulerParameters", "params", factory=dict)
    # kill_invalid_depend: cancel a job whose dependency can never hold (slurmlite.dependency)
    dependency_parameters: dict[str, str] = _key("DependencyParameters", "params", factory=dict)
    priority_type: str = _key("PriorityType", "str", "priority/multifactor")
    select_type: str = _key("SelectType", "str", "select/cons_tres")
    select_type_parameters: str = _key("SelectTypeParameters", "str", "CR_Core_Memory")
    return_to_service: int = _key("ReturnToService", "rts", 0)
    slurmd_parameters: list[str] = _key("SlurmdParameters", "list", factory=list)
    auth_type: str = _key("AuthType", "auth", "auth/local")
    auth_alt_types: list[str] = _key("AuthAltTypes", "authalt", factory=list)  # ["auth/jwt"]
    auth_alt_parameters: dict[str, str] = _key("AuthAltParameters", "params", factory=dict)
    auth_info: dict[str, str] = _key("AuthInfo", "params", factory=dict)  # socket=PATH
    private_data: list[str] = _key("PrivateData", "list", factory=list)  # jobs, usage
    proctrack_type: str = _key("ProctrackType", "str", "proctrack/cgroup")  # agent.isolation
    task_plugin: list[str] = _key("TaskPlugin", "list", factory=list)  # task/cgroup: --mem limit
    priority_weights: dict[str, int] = field(default_factory=_NO_WEIGHTS.copy)  # "age": N
    # multifactor priority and fair-share (slurmlite/scheduler/priority.py, fairshare.py)
    priority_weight_tres: str = _key("PriorityWeightTRES", "str", "")  # "CPU=1000,GRES/gpu=2000"
    priority_max_age: int | None = _key("PriorityMaxAge", "time", 10080)  # minutes (7-0)
    priority_favor_small: bool = _key("PriorityFavorSmall", "bool", False)
    priority_flags: list[str] = _key("PriorityFlags", "list", factory=list)  # NO_FAIR_TREE, ...
    priority_decay_half_life: int | None = _key("PriorityDecayHalfLife", "time", 10080)  # 0: none
    priority_calc_period: int | None = _key("PriorityCalcPeriod", "time", 5)  # minutes
    priority_usage_reset_period: str = _key("PriorityUsageResetPeriod", "reset", "NONE")
    fairshare_dampening_factor: int = _key("FairShareDampeningFactor", "pos", 1)
    accounting_storage_enforce: list[str] = _key("AccountingStorageEnforce", "list", factory=list)
    # prolog and epilog scripts (agent.scripts, controller.sched.ctld_scripts); None: none
    prolog: str | None = _key("Prolog", "optpath")  # on the batch host, before the script
    epilog: str | None = _key("Epilog", "optpath")  # on the batch host, after the job
    prolog_slurmctld: str | None = _key("PrologSlurmctld", "optpath")  # controller, at start
    epilog_slurmctld: str | None = _key("EpilogSlurmctld", "optpath")  # controller, at end
    prolog_epilog_timeout: int = _key("PrologEpilogTimeout", "sec", 65534)  # 65534: no limit
    prolog_flags: list[str] = _key("PrologFlags", "list", factory=list)  # accepted
    max_batch_requeue: int = _key("MaxBatchRequeue", "int", 5)  # failed launches before FAILED
    # seconds between an agent's usage samples of a running job (agent.sampling); 0: none
    job_acct_gather_frequency: int = _key("JobAcctGatherFrequency", "freq", 30)
    # retention (slurmdbd.conf's keys; slurmlite/retention.py): None keeps every job forever
    purge_job_after: Purge | None = _key("PurgeJobAfter", "purge", None)
    archive_jobs: bool = _key("ArchiveJobs", "bool", False)
    archive_dir: str = _key("ArchiveDir", "path", "/tmp")
    # slurmlite extensions; "" = derived in pass two (see module docstring)
    store_url: str = _key("SlurmliteStoreURL", "str", "")
    socket_path: str = _key("SlurmliteSocket", "path", "")
    key_file: str = _key("SlurmliteKeyFile", "path", "")
    node_key_file: str = _key("SlurmliteNodeKeyFile", "path", "")  # %n %h; "": from key_file
    default_account: str = _key("SlurmliteDefaultAccount", "str", "default")
    default_qos: str = _key("SlurmliteDefaultQOS", "str", "normal")
    heartbeat_interval: float = _key("SlurmliteHeartbeatInterval", "fsec", 30.0)
    admin_users: list[str] = _key("SlurmliteAdminUsers", "list", factory=list)
    # workload runs (slurmlite run): snapshot size cap, how long unreferenced snapshots and
    # nodes' run logs are kept (s), and the QOS of each priority class ("CRITICAL=high,...")
    snapshot_max_mb: int = _key("SlurmliteSnapshotMaxMB", "pos", 1024)
    snapshot_keep: int = _key("SlurmliteSnapshotKeep", "sec", 7 * 86400)
    run_log_keep: int = _key("SlurmliteRunLogKeep", "sec", 7 * 86400)
    priority_class_qos: list[str] = _key("SlurmlitePriorityClassQOS", "list", factory=list)
    # notifications (controller.notify; docs/notifications.md): MailProg is run as Slurm runs
    # it; else SMTP to SlurmliteMailServer (host:port); SlurmliteWebhook gets every event
    mail_prog: str | None = _key("MailProg", "optpath")
    mail_domain: str = _key("MailDomain", "str", "")  # appended to a recipient without "@"
    mail_server: str = _key("SlurmliteMailServer", "str", "")
    mail_from: str = _key("SlurmliteMailFrom", "str", "slurm@localhost")
    webhook: str = _key("SlurmliteWebhook", "str", "")
    # OpenMetrics on the controller's port (controller/metrics, docs/metrics.md); "": off
    metrics_type: str = _key("MetricsType", "str", "")
    metrics_auth_users: list[str] = _key("MetricsAuthUsers", "list", factory=list)
    metrics_parameters: list[str] = _key("MetricsParameters", "list", factory=list)
    # URL prefixes a user's own webhook (--mail-user=https://...) may start with; []: none allowed
    user_webhooks: list[str] = _key("SlurmliteUserWebhooks", "list", factory=list)
    # jobs whose GPUs stay idle (slurmlite.idlegpus); {}: off; a partition's keys override
    idle_gpu_policy: dict[str, str] = _key("SlurmliteIdleGpuPolicy", "idlegpu", factory=dict)
    gpu_outside_use: GpuOutsideUse = _key("SlurmliteGpuOutsideUse", "gpuout", GpuOutsideUse())
    # the web dashboard (/ui, docs/dashboard.md) read-only without login, loopback clients only
    ui_anonymous: bool = _key("SlurmliteUiAnonymous", "bool", False)
    nodes: list[NodeConf] = field(default_factory=list)
    partitions: list[PartitionConf] = field(default_factory=list)
    gres: list[GresConf] = field(default_factory=list)  # gres.conf device lines
    gres_autodetect: str | None = None  # gres.conf AutoDetect for every node
    gres_node_autodetect: dict[str, str] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def node(self, name: str) -> NodeConf:
        """The node called ``name``; KeyError if there is none."""
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"unknown node '{name}'")

    def partition(self, name: str) -> PartitionConf:
        """The partition called ``name``; KeyError if there is none."""
        for part in self.partitions:
            if part.name == name:
                return part
        raise KeyError(f"unknown partition '{name}'")

    @property
    def default_partition(self) -> PartitionConf | None:
        return next((p for p in self.partitions if p.default), None)

    @property
    def config_overrides(self) -> bool:
        """``SlurmdParameters=config_overrides``: trust the config over what agents report."""
        return "config_overrides" in self.slurmd_parameters

    def expand_node_path(self, template: str, node_name: str) -> str:
        """``%n`` -> node name, ``%h`` -> its NodeHostname, ``%%`` -> ``%``."""
        host = next((n.hostname for n in self.nodes if n.name == node_name), node_name)
        subst = {"n": node_name, "h": host, "%": "%"}
        return re.sub(r"%([nh%])", lambda m: subst[m.group(1)], template)


def _keys(cls: type) -> dict[str, tuple[str, str, str]]:
    """{lower-cased key: (key as Slurm spells it, field name, kind)} of a dataclass."""
    return {
        f.metadata["key"].lower(): (f.metadata["key"], f.name, f.metadata["kind"])
        for f in fields(cls)
        if "key" in f.metadata
    }


GLOBAL_KEYS = _keys(Config) | {
    k.lower(): (k, "priority_weights", "weight") for k in PRIORITY_WEIGHT_KEYS
}
NODE_KEYS = _keys(NodeConf)
PARTITION_KEYS = _keys(PartitionConf)


class _Reader:
    """Pass one over the lines (and Includes); :meth:`finish` is pass two."""

    def __init__(self, cfg: Config, conf_dir: str) -> None:
        self.cfg, self.conf_dir, self.ctl_seen, self.names = cfg, conf_dir, False, set[str]()
        self.templates: dict[str, dict[str, Any]] = {"nodename": {}, "partitionname": {}}
        self.part_nodes: list[tuple[PartitionConf, str | None, str]] = []

    def warn(self, where: str, text: str) -> None:
        self.cfg.warnings.append(f"{where}: {text}")

    def read(self, text: str, fname: str, depth: int = 0) -> None:
        label = "slurm.conf" if fname.startswith("<") else os.path.basename(fname)
        for number, line in iter_lines(text):
            where = f"{label}:{number}"
            name = include_target(line)
            if name is not None:  # relative: conf dir
                if depth >= MAX_INCLUDE_DEPTH:
                    raise ConfigError(f"{where}: Include nested too deeply ('{name}')")
                self.read(_read_file(os.path.join(self.conf_dir, name), where), name, depth + 1)
                continue
            pairs = split_pairs(line, where)
            head = pairs[0][0].lower()
            for key, _ in pairs[1:]:
                if key.lower() in self.templates:
                    raise ConfigError(f"{where}: {key}= must start its line")
            if head in self.templates:
                self.record(head, pairs, where)
            else:
                for key, value in pairs:
                    self.global_key(key, value, where)

    def global_key(self, key: str, value: str, where: str) -> None:
        spec = GLOBAL_KEYS.get(key.lower())
        if spec is None:
            self.warn(where, f"unknown key '{key}' ignored")
            self.cfg.extra[key.lower()] = value
            return
        name, attr, kind = spec
        typed = convert(kind, value, name, where)
        if kind == "weight":  # PriorityWeightAge=N -> priority_weights["age"] = N
            self.cfg.priority_weights[name[14:].lower()] = typed
            return
        if kind == "host":  # first SlurmctldHost is the controller; later ones are backups
            m = _CTL_HOST.fullmatch(value)
            if m is None:
                raise ConfigError(f"{where}: invalid value '{value}' for {name}")
            if self.ctl_seen:
                self.warn(where, f"backup controller '{value}' ignored (one controller only)")
                return
            self.ctl_seen = True
            typed, self.cfg.control_addr = m.group(1), m.group(2) or m.group(1)
        setattr(self.cfg, attr, typed)

    def record(self, head: str, pairs: list[tuple[str, str]], where: str) -> None:
        """A NodeName= or PartitionName= line: typed values, then template or entries."""
        table = NODE_KEYS if head == "nodename" else PARTITION_KEYS
        got: dict[str, Any] = {}
        extra: dict[str, str] = {}
        for key, value in pairs[1:]:
            spec = table.get(key.lower())
            if spec is None:
                self.warn(where, f"unknown key '{key}' ignored")
                extra[key.lower()] = value
            else:
                got[spec[1]] = convert(spec[2], value, spec[0], where)
        if not pairs[0][1]:
            raise ConfigError(f"{where}: invalid value '' for {pairs[0][0]}")
        template = self.templates[head]
        if pairs[0][1].upper() == "DEFAULT":
            template.update(got, extra={**template.get("extra", {}), **extra})
            return
        got = {**template, **got, "extra": {**template.get("extra", {}), **extra}}
        if head == "nodename":
            self.add_nodes(pairs[0][1], got, where)
            return
        name = pairs[0][1]
        if any(p.name == name for p in self.cfg.partitions):
            raise ConfigError(f"{where}: duplicate partition '{name}'")
        nodes = got.pop("nodes", None)
        self.cfg.partitions.append(PartitionConf(name=name, **got))
        self.part_nodes.append((self.cfg.partitions[-1], nodes, where))

    def add_nodes(self, expr: str, got: dict[str, Any], where: str) -> None:
        names = expand_hosts(expr, "NodeName", where)
        addrs = per_node(got.pop("addr", ""), names, "NodeAddr", where)
        hostnames = per_node(got.pop("hostname", ""), names, "NodeHostname", where)
        ports = got.pop("port", None) or [0]  # 0: SlurmdPort, filled in by finish()
        if len(ports) not in (1, len(names)):
            raise ConfigError(f"{where}: Port gives {len(ports)} ports for {len(names)} nodes")
        got["gpus"], got["gpu_type"], others = parse_gres_spec(got.get("gres", ""))
        for other in others:
            self.warn(where, f"GRES '{other}' ignored (slurmlite schedules gpu only)")
        # Topology: CPUs alone means that many one-core sockets (as Slurm shows it);
        # without CPUs, CPUs = Sockets * CoresPerSocket * ThreadsPerCore.
        per_socket = got.get("cores_per_socket", 1) * got.get("threads_per_core", 1)
        if "cpus" in got:
            got.setdefault("sockets", max(1, got["cpus"] // per_socket))
        else:
            got["cpus"] = got.setdefault("sockets", 1) * per_socket
        for i, name in enumerate(names):
            if name in self.names:
                raise ConfigError(f"{where}: duplicate node '{name}'")
            self.names.add(name)
            port = ports[i] if len(ports) > 1 else ports[0]
            copies = {k: v.copy() if isinstance(v, list | dict) else v for k, v in got.items()}
            self.cfg.nodes.append(
                NodeConf(name=name, addr=addrs[i], hostname=hostnames[i], port=port, **copies)
            )

    def finish(self) -> None:
        cfg = self.cfg
        every = [node.name for node in cfg.nodes]
        for part, expr, where in self.part_nodes:
            wanted = (
                every if (expr or "").upper() == "ALL" else expand_hosts(expr or "", "Nodes", where)
            )
            for name in wanted:
                if name not in self.names:
                    raise ConfigError(
                        f"{where}: partition '{part.name}' names unknown node '{name}'"
                    )
            part.nodes = list(dict.fromkeys(wanted))
        for part in [p for p in cfg.partitions if p.default][:-1]:
            part.default = False  # several Default=YES: the last one wins
        for node in cfg.nodes:
            node.port = node.port or cfg.slurmd_port
        if any(node.gpus for node in cfg.nodes) and "gpu" not in cfg.gres_types:
            cfg.warnings.append("nodes have Gres=gpu but GresTypes does not name gpu")
        for _, attr, kind in GLOBAL_KEYS.values():
            value = getattr(cfg, attr)
            if kind in ("path", "optpath") and value and not os.path.isabs(value):
                setattr(cfg, attr, os.path.join(self.conf_dir, value))
        state = cfg.state_save_location
        cfg.store_url = cfg.store_url or "sqlite:///" + os.path.join(state, "slurmlite.db")
        cfg.socket_path = cfg.socket_path or os.path.join(state, "slurmctld.sock")
        cfg.key_file = cfg.key_file or os.path.join(self.conf_dir, "slurmlite.key")


def parse_config(text: str, path: str = "<string>", gres_text: str | None = None) -> Config:
    """Parse slurm.conf text.  ``path`` names it: relative paths and Includes start
    from its directory (a ``<string>`` reads as if it were /etc/slurm/slurm.conf).
    ``gres_text`` is the gres.conf beside it, if there is one."""
    real = not path.startswith("<")
    cfg = Config(path=os.path.abspath(path) if real else path)
    conf_dir = os.path.dirname(cfg.path if real else DEFAULT_CONF)
    reader = _Reader(cfg, conf_dir)
    reader.read(text, path)
    reader.finish()
    if gres_text is not None:
        gresconf.attach(cfg, gres_text, os.path.join(conf_dir, "gres.conf"))
    return cfg


def load_config(path: str | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Read ``path``, else ``$SLURM_CONF``, else /etc/slurm/slurm.conf, + gres.conf beside it."""
    path = conf_path(path, env)
    text = _read_file(path, os.path.basename(path))
    gres_path = os.path.join(os.path.dirname(os.path.abspath(path)), "gres.conf")
    gres_text = _read_file(gres_path, "gres.conf") if os.path.exists(gres_path) else None
    return parse_config(text, path, gres_text=gres_text)
