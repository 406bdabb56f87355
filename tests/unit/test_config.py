"""slurm.conf subset (slurmlite/config.py): what an admin sees when slurmlite
reads the file of a Slurm lab — values, defaults, warnings and errors."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from slurmlite.config import (
    DEFAULT_CONF,
    GLOBAL_KEYS,
    NODE_KEYS,
    PARTITION_KEYS,
    Config,
    ConfigError,
    load_config,
    parse_config,
)
from slurmlite.config_show import config_items

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "slurm.conf.example"


def parse(text: str, path: str = "/etc/slurm/slurm.conf") -> Config:
    return parse_config(text, path)


def error_of(text: str, path: str = "/etc/slurm/slurm.conf") -> str:
    with pytest.raises(ConfigError) as info:
        parse(text, path)
    return str(info.value)


def test_an_empty_file_gives_slurms_defaults():
    cfg = parse("")
    assert (cfg.slurmctld_port, cfg.slurmd_port) == (6817, 6818)
    assert (cfg.slurmd_timeout, cfg.kill_wait, cfg.min_job_age) == (300, 30, 300)
    assert (cfg.max_job_count, cfg.max_array_size, cfg.def_mem_per_cpu) == (10000, 1001, 0)
    assert cfg.scheduler_type == "sched/backfill"
    assert cfg.select_type == "select/cons_tres"
    assert cfg.priority_type == "priority/multifactor"
    assert (cfg.return_to_service, cfg.auth_type) == (0, "auth/local")
    assert cfg.state_save_location == "/var/spool/slurmctld"
    assert cfg.slurmd_spool_dir == "/var/spool/slurmd"
    assert (cfg.default_account, cfg.default_qos, cfg.heartbeat_interval) == (
        "default",
        "normal",
        30,
    )
    assert cfg.admin_users == [] and cfg.nodes == [] and cfg.partitions == []
    assert cfg.default_partition is None and cfg.warnings == []


def test_slurmlite_paths_derive_from_state_save_location_and_config_dir():
    cfg = parse("StateSaveLocation=/srv/state\n", "/opt/lab/slurm.conf")
    assert cfg.store_url == "sqlite:////srv/state/slurmlite.db"  # sqlite:/// + absolute path
    assert cfg.socket_path == "/srv/state/slurmctld.sock"
    assert cfg.key_file == "/opt/lab/slurmlite.key"


def test_explicit_slurmlite_keys_win_over_derived_defaults():
    cfg = parse(
        "SlurmliteStoreURL=postgresql://u:pw@db/slurm\nSlurmliteSocket=/run/ctl.sock\n"
        "SlurmliteKeyFile=/etc/key\nSlurmliteDefaultAccount=lab\nSlurmliteDefaultQOS=high\n"
        "SlurmliteHeartbeatInterval=0.5\nSlurmliteAdminUsers=alice,bob\n"
    )
    assert cfg.store_url == "postgresql://u:pw@db/slurm"
    assert (cfg.socket_path, cfg.key_file) == ("/run/ctl.sock", "/etc/key")
    assert (cfg.default_account, cfg.default_qos) == ("lab", "high")
    assert cfg.heartbeat_interval == 0.5
    assert cfg.admin_users == ["alice", "bob"]


def test_relative_paths_start_from_the_config_directory():
    cfg = parse("StateSaveLocation=state\nSlurmdSpoolDir=spool/%n\n", "/opt/lab/slurm.conf")
    assert cfg.state_save_location == "/opt/lab/state"
    assert cfg.slurmd_spool_dir == "/opt/lab/spool/%n"
    assert cfg.socket_path == "/opt/lab/state/slurmctld.sock"


def test_keys_are_case_insensitive_and_comments_quotes_continuations_work():
    cfg = parse(
        'clustername="my lab"   # a comment\n'
        "KillWait=10\n  KILLWAIT = 45\n"  # repeated: the last wins
        "# SlurmdTimeout=1\nSchedulerParameters=bf_window=60,\\\nbf_continue\n"
        'NodeName=n1 Features="a#b,c" \\\n   CPUs=2\n'
    )
    assert cfg.cluster_name == "my lab"
    assert cfg.kill_wait == 45
    assert cfg.slurmd_timeout == 300  # commented out
    assert cfg.scheduler_parameters == {"bf_window": "60", "bf_continue": ""}
    assert cfg.node("n1").features == ["a#b", "c"]  # '#' inside quotes is not a comment
    assert cfg.node("n1").cpus == 2  # from the continued line


def test_include_reads_a_file_relative_to_the_config_dir(tmp_path):
    (tmp_path / "nodes.conf").write_text("NodeName=n[1-2] CPUs=4\n")
    (tmp_path / "slurm.conf").write_text("ClusterName=lab\nInclude nodes.conf\n")
    cfg = load_config(str(tmp_path / "slurm.conf"))
    assert [n.name for n in cfg.nodes] == ["n1", "n2"]


def test_errors_in_an_included_file_name_that_file_and_line(tmp_path):
    (tmp_path / "nodes.conf").write_text("# nodes\nNodeName=n1 CPUs=lots\n")
    (tmp_path / "slurm.conf").write_text("Include nodes.conf\n")
    with pytest.raises(ConfigError, match=r"^nodes.conf:2: invalid value 'lots' for CPUs$"):
        load_config(str(tmp_path / "slurm.conf"))


def test_a_missing_include_or_an_include_loop_is_an_error(tmp_path):
    (tmp_path / "slurm.conf").write_text("ClusterName=x\nInclude nope.conf\n")
    with pytest.raises(ConfigError, match=r"^slurm.conf:2: cannot read .*nope.conf"):
        load_config(str(tmp_path / "slurm.conf"))
    (tmp_path / "slurm.conf").write_text("Include slurm.conf\n")  # not a hang
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_config(str(tmp_path / "slurm.conf"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\n" * 6 + "NodeName=n1 CPUs=abc\n", "slurm.conf:7: invalid value 'abc' for CPUs"),
        ("KillWait=-1\n", "slurm.conf:1: invalid value '-1' for KillWait"),
        ("SlurmctldPort=70000\n", "slurm.conf:1: invalid value '70000' for SlurmctldPort"),
        ("ReturnToService=3\n", "slurm.conf:1: invalid value '3' for ReturnToService"),
        ("AuthType=auth/none\n", "slurm.conf:1: invalid value 'auth/none' for AuthType"),
        (
            "SlurmliteHeartbeatInterval=0\n",
            "slurm.conf:1: invalid value '0' for SlurmliteHeartbeatInterval",
        ),
        ("ClusterName lab\n", "slurm.conf:1: expected Key=Value, found 'ClusterName'"),
        ("NodeName=n[1-\n", "slurm.conf:1: invalid hostlist 'n[1-' for NodeName"),
        ("NodeName=n1 State=BUSY\n", "slurm.conf:1: invalid value 'BUSY' for State"),
        ("NodeName=n1 Gres=gpu::2\n", "slurm.conf:1: invalid value 'gpu::2' for Gres"),
        ("NodeName=n1\nNodeName=n[0-1]\n", "slurm.conf:2: duplicate node 'n1'"),
        ("CPUs=2 NodeName=n1\n", "slurm.conf:1: NodeName= must start its line"),
        ("PartitionName=p MaxTime=1:2:3:4\n", "slurm.conf:1: invalid value '1:2:3:4' for MaxTime"),
        ("PartitionName=p Default=maybe\n", "slurm.conf:1: invalid value 'maybe' for Default"),
        ("PartitionName=p State=OPEN\n", "slurm.conf:1: invalid value 'OPEN' for State"),
        ("PartitionName=p\nPartitionName=p\n", "slurm.conf:2: duplicate partition 'p'"),
        (
            "NodeName=n1\nPartitionName=p Nodes=n[1-2]\n",
            "slurm.conf:2: partition 'p' names unknown node 'n2'",
        ),
    ],
)
def test_a_broken_line_raises_an_error_naming_file_and_line(text, message):
    assert error_of(text) == message


def test_unknown_keys_warn_and_are_kept_raw():
    cfg = parse(
        "ClusterName=x\n" * 11
        + "Foo=1\nNodeName=n1 TmpDisk=100\nPartitionName=p Nodes=n1 OverSubscribe=NO\n"
    )
    assert cfg.warnings == [
        "slurm.conf:12: unknown key 'Foo' ignored",
        "slurm.conf:13: unknown key 'TmpDisk' ignored",
        "slurm.conf:14: unknown key 'OverSubscribe' ignored",
    ]
    assert cfg.extra == {"foo": "1"}
    assert cfg.node("n1").extra == {"tmpdisk": "100"}
    assert cfg.partition("p").extra == {"oversubscribe": "NO"}


def test_slurmctld_host_with_address_and_backups():
    cfg = parse("SlurmctldHost=head(10.0.0.1)\nSlurmctldHost=backup\n")
    assert (cfg.control_host, cfg.control_addr) == ("head", "10.0.0.1")
    assert cfg.warnings == [
        "slurm.conf:2: backup controller 'backup' ignored (one controller only)"
    ]
    plain = parse("SlurmctldHost=head\n")
    assert (plain.control_host, plain.control_addr) == ("head", "head")


def test_lists_and_parameter_dicts():
    cfg = parse(
        "GresTypes=gpu\nSlurmdParameters=config_overrides,foo\n"
        "SchedulerParameters=bf_window=2880,bf_resolution=60,bf_continue\n"
    )
    assert cfg.gres_types == ["gpu"]
    assert cfg.slurmd_parameters == ["config_overrides", "foo"]
    assert cfg.config_overrides is True and parse("").config_overrides is False
    assert cfg.scheduler_parameters == {
        "bf_window": "2880",
        "bf_resolution": "60",
        "bf_continue": "",
    }


def test_priority_weights_feed_the_multifactor_factors():
    cfg = parse("PriorityWeightFairshare=10000\npriorityweightage=1000\nPriorityWeightQOS=5\n")
    factors = "age assoc fairshare jobsize partition qos".split()  # unset ones weigh 0
    assert list(cfg.priority_weights) == factors
    assert [cfg.priority_weights[f] for f in factors] == [1000, 0, 10000, 0, 0, 5]
    assert cfg.warnings == []
    shown = dict(config_items(cfg))
    assert (shown["PriorityWeightFairshare"], shown["PriorityWeightJobSize"]) == ("10000", "0")
    assert error_of("PriorityWeightAge=high\n") == (
        "slurm.conf:1: invalid value 'high' for PriorityWeightAge"
    )


def test_node_line_expands_a_hostlist_and_applies_defaults():
    cfg = parse("NodeName=gpu[01-02],cpu1 CPUs=8 RealMemory=64000 Features=a100,nvlink\n")
    assert [n.name for n in cfg.nodes] == ["gpu01", "gpu02", "cpu1"]
    node = cfg.node("gpu02")
    assert (node.cpus, node.real_memory, node.features) == (8, 64000, ["a100", "nvlink"])
    assert (node.addr, node.hostname, node.port) == ("gpu02", "gpu02", 6818)
    assert (node.weight, node.state, node.gpus, node.gpu_type) == (1, "UNKNOWN", 0, None)
    bare = parse("NodeName=n1\n").node("n1")
    assert (bare.cpus, bare.real_memory) == (1, 1)


def test_nodes_do_not_share_mutable_lists():
    cfg = parse("NodeName=n[1-2] Features=x\n")
    cfg.node("n1").features.append("y")
    assert cfg.node("n2").features == ["x"]


def test_nodename_default_is_a_template_for_later_lines_only():
    cfg = parse(
        "NodeName=early\n"
        "NodeName=DEFAULT CPUs=16 RealMemory=1000 State=DOWN\n"
        "NodeName=a\n"
        "NodeName=b CPUs=4\n"  # the line's own value beats the template
        "NodeName=DEFAULT RealMemory=2000\n"  # later DEFAULT lines add to the template
        "NodeName=c\n"
    )
    assert cfg.node("early").cpus == 1
    assert (cfg.node("a").cpus, cfg.node("a").state) == (16, "DOWN")
    assert cfg.node("b").cpus == 4
    assert (cfg.node("c").cpus, cfg.node("c").real_memory) == (16, 2000)


def test_node_addr_and_port_give_one_value_per_node_or_one_for_all():
    cfg = parse(
        "NodeName=g[1-2] NodeAddr=10.0.0.[11-12] NodeHostname=h[1-2]\n"
        "NodeName=n[1-2] NodeAddr=localhost Port=[17001-17002]\n"  # two agents on one host
    )
    assert [f"{n.addr}/{n.hostname}:{n.port}" for n in cfg.nodes] == [
        "10.0.0.11/h1:6818",
        "10.0.0.12/h2:6818",
        "localhost/n1:17001",
        "localhost/n2:17002",
    ]
    assert error_of("NodeName=n[1-3] NodeAddr=a,b\n").endswith("NodeAddr names 2 hosts for 3 nodes")
    assert error_of("NodeName=n[1-3] Port=[1-2]\n").endswith("Port gives 2 ports for 3 nodes")


def test_slurmd_port_is_the_default_for_nodes_wherever_it_is_set():
    cfg = parse("NodeName=n1\nNodeName=n2 Port=7000\nSlurmdPort=7100\n")
    assert [n.port for n in cfg.nodes] == [7100, 7000]


@pytest.mark.parametrize(
    ("gres", "gpus", "gpu_type"),
    [
        ("gpu:4", 4, None),
        ("gpu:a100:4", 4, "a100"),
        ("gpu", 1, None),  # count defaults to 1
        ("gpu:a100", 1, "a100"),
        ("gpu:no_consume:2", 2, None),
        ("(null)", 0, None),
    ],
)
def test_gres_gives_gpu_count_and_type(gres, gpus, gpu_type):
    node = parse(f"NodeName=n1 Gres={gres}\n").node("n1")
    assert (node.gpus, node.gpu_type, node.gres) == (gpus, gpu_type, gres)


def test_other_gres_names_warn_and_do_not_count_as_gpus():
    cfg = parse("GresTypes=gpu\nNodeName=n1 Gres=gpu:2,shard:8\n")
    assert cfg.node("n1").gpus == 2
    assert cfg.warnings == ["slurm.conf:2: GRES 'shard' ignored (slurmlite schedules gpu only)"]


def test_gpus_without_gres_types_warn():
    assert parse("NodeName=n1 Gres=gpu:1\n").warnings == [
        "nodes have Gres=gpu but GresTypes does not name gpu"
    ]


def test_cpus_come_from_topology_when_not_given():
    node = parse("NodeName=n1 Sockets=2 CoresPerSocket=8 ThreadsPerCore=2\n").node("n1")
    assert node.cpus == 32  # 2 sockets * 8 cores * 2 threads
    only_cpus = parse("NodeName=n1 CPUs=4\n").node("n1")
    assert (only_cpus.sockets, only_cpus.cores_per_socket, only_cpus.boards) == (4, 1, 1)
    both = parse("NodeName=n1 CPUs=8 CoresPerSocket=4\n").node("n1")
    assert (both.cpus, both.sockets) == (8, 2)  # 8 CPUs / 4 cores per socket


def test_node_path_templates_expand_per_node():
    cfg = parse("SlurmdSpoolDir=/var/spool/slurmd/%n\nNodeName=n1 NodeHostname=host1\n")
    assert cfg.expand_node_path(cfg.slurmd_spool_dir, "n1") == "/var/spool/slurmd/n1"
    assert cfg.expand_node_path("/log/%h-%n-100%%.log", "n1") == "/log/host1-n1-100%.log"
    assert cfg.expand_node_path("/x/%h", "unknown") == "/x/unknown"


def test_unknown_node_or_partition_lookups_raise_key_error():
    cfg = parse("NodeName=n1\nPartitionName=p Nodes=n1\n")
    with pytest.raises(KeyError):
        cfg.node("n9")
    with pytest.raises(KeyError):
        cfg.partition("q")


def test_partition_line_reads_times_in_minutes_and_defaults():
    cfg = parse(
        "NodeName=n[1-4]\n"
        "PartitionName=gpu Nodes=n[1-2] MaxTime=2-00:00:00 DefaultTime=4:00:00 "
        "PriorityJobFactor=10 PriorityTier=2 State=drain\n"
        "PartitionName=cpu Nodes=n3,n4\n"
    )
    gpu, cpu = cfg.partitions
    assert gpu.nodes == ["n1", "n2"]
    assert (gpu.max_time, gpu.default_time) == (2880, 240)  # 2 days * 1440; 4 h * 60
    assert (gpu.priority_job_factor, gpu.priority_tier, gpu.state) == (10, 2, "DRAIN")
    assert (cpu.max_time, cpu.default_time, cpu.state, cpu.default) == (None, None, "UP", False)
    assert (cpu.priority_job_factor, cpu.priority_tier) == (1, 1)


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("30", 30), ("10:30", 11), ("1-2", 1560), ("UNLIMITED", None), ("infinite", None)],
)
def test_max_time_forms(text, minutes):
    # 10:30 is 630 s -> ceil(630/60) = 11 min; 1-2 is 26 h = 1560 min
    assert parse(f"PartitionName=p MaxTime={text}\n").partition("p").max_time == minutes


def test_default_time_unset_means_max_time():
    part = parse("PartitionName=p MaxTime=60\n").partition("p")
    assert part.default_time is None and part.effective_default_time == 60
    part = parse("PartitionName=p MaxTime=60 DefaultTime=5\n").partition("p")
    assert part.effective_default_time == 5


def test_nodes_all_names_every_node_even_those_defined_later():
    cfg = parse("NodeName=a\nPartitionName=p Nodes=ALL\nNodeName=b\n")
    assert cfg.partition("p").nodes == ["a", "b"]


def test_partition_nodes_keep_order_without_duplicates():
    cfg = parse("NodeName=n[1-3]\nPartitionName=p Nodes=n3,n1,n3\n")
    assert cfg.partition("p").nodes == ["n3", "n1"]


def test_the_last_default_yes_wins():
    cfg = parse(
        "PartitionName=a Default=YES\nPartitionName=b Default=yes\nPartitionName=c Default=NO\n"
    )
    assert [p.default for p in cfg.partitions] == [False, True, False]
    assert cfg.default_partition is not None and cfg.default_partition.name == "b"


def test_partitionname_default_is_a_template():
    cfg = parse(
        "NodeName=n1\nPartitionName=DEFAULT Nodes=ALL MaxTime=60 State=DOWN\n"
        "PartitionName=a\nPartitionName=b MaxTime=10\n"
    )
    assert [(p.name, p.nodes, p.max_time, p.state) for p in cfg.partitions] == [
        ("a", ["n1"], 60, "DOWN"),
        ("b", ["n1"], 10, "DOWN"),
    ]


def test_load_config_prefers_path_then_slurm_conf_env(tmp_path):
    first, second = tmp_path / "first.conf", tmp_path / "second.conf"
    first.write_text("ClusterName=first\n")
    second.write_text("ClusterName=second\n")
    env = {"SLURM_CONF": str(second)}
    assert load_config(str(first), env).cluster_name == "first"
    loaded = load_config(None, env)
    assert (loaded.cluster_name, loaded.path) == ("second", str(second))


def test_load_config_falls_back_to_etc_slurm(monkeypatch):
    seen = []

    def fake_read(path: str, where: str) -> str:
        seen.append(path)
        return "ClusterName=etc\n" if path.endswith("slurm.conf") else ""

    monkeypatch.setattr("slurmlite.config._read_file", fake_read)
    assert load_config(None, {}).cluster_name == "etc"
    assert seen[0] == DEFAULT_CONF == "/etc/slurm/slurm.conf"


def test_a_missing_config_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read .*nothing.conf: No such file"):
        load_config(str(tmp_path / "nothing.conf"))


def test_load_config_reads_gres_conf_beside_slurm_conf(tmp_path):
    (tmp_path / "slurm.conf").write_text("GresTypes=gpu\nNodeName=g1 Gres=gpu:2\n")
    assert load_config(str(tmp_path / "slurm.conf")).gres == []  # gres.conf is optional
    (tmp_path / "gres.conf").write_text("NodeName=g1 Name=gpu File=/dev/nvidia[0-1]\n")
    cfg = load_config(str(tmp_path / "slurm.conf"))
    assert [g.files for g in cfg.gres] == [["/dev/nvidia0", "/dev/nvidia1"]]


def test_importing_config_stays_light():
    code = (
        "import sys, slurmlite.config as c; c.parse_config('NodeName=n1');"
        "print(' '.join(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    heavy = {"sqlalchemy", "fastapi", "pydantic", "httpx", "click", "pynvml", "slurmlite.timefmt"}
    assert heavy.isdisjoint(out)


def test_example_names_every_key_the_parser_knows():
    text = EXAMPLE.read_text()
    tables = (GLOBAL_KEYS, NODE_KEYS, PARTITION_KEYS)
    keys = [spec[0] for table in tables for spec in table.values()]
    missing = [k for k in keys if not re.search(rf"(?<![\w]){k}=", text)]
    assert missing == []
    assert re.search(r"^# Include <file>", text, re.M)
    for line in text.splitlines():  # our own keys are marked as extensions
        if line.lstrip("#").startswith("Slurmlite"):
            assert "[slurmlite]" in line, line


def test_example_parses_cleanly_into_a_gpu_lab(tmp_path):
    cfg = parse(EXAMPLE.read_text(), str(tmp_path / "slurm.conf"))
    assert cfg.warnings == []
    gpu_nodes = [n for n in cfg.nodes if n.gpus]
    assert len(gpu_nodes) == 2 and len(cfg.partitions) == 2
    assert cfg.default_partition is not None


def test_example_defaults_match_the_parsers_defaults():
    # Uncomment every "#Key=value" default line that has a literal value (no <...>),
    # then add one node and one partition: the result must equal a bare config.
    text = EXAMPLE.read_text().split("# ====")[0]
    lines = [ln[1:] for ln in text.splitlines() if re.match(r"#[A-Za-z]\w*=", ln)]
    literal = [ln for ln in lines if "<" not in ln.split("#")[0]]
    assert len(literal) >= 30  # the defaults section really is there
    tail = "NodeName=x\nPartitionName=p Nodes=x\n"
    from_example = parse("\n".join(literal) + "\n" + tail)
    assert from_example.warnings == []
    bare = parse(tail)
    from_example.path = bare.path
    assert from_example == bare
