"""``client_settings`` (the commands' quick read of slurm.conf) agrees with the full reader.

A command finds the controller's socket without typing the whole
configuration (start-up time); if the two readers ever disagreed, a command
would knock on the wrong socket.  Each case writes a slurm.conf, reads it
both ways and compares what a command uses.
"""

from __future__ import annotations

import pytest

from slurmlite.config import load_config
from slurmlite.conftext import ConfigError, client_settings

NODES = "NodeName=n[1-2] CPUs=4\nPartitionName=debug Nodes=ALL Default=YES\n"

CASES = {
    "defaults": "",
    "absolute state dir": "StateSaveLocation=/var/lib/lab\n",
    "relative state dir": "StateSaveLocation=state\nClusterName=lab\n",
    "socket of ours, relative": "SlurmliteSocket=run/ctl.sock\n",
    "socket of ours, absolute": "StateSaveLocation=st\nSlurmliteSocket=/run/x.sock\n",
    "keys in any case, quoted, last wins": (
        'clustername="first"\nCLUSTERNAME=second  # comment\nstatesavelocation=a\n'
        "StateSaveLocation=b\n"
    ),
    "line continuation": "ClusterName=\\\nlab StateSaveLocation=s\n",
}


@pytest.mark.parametrize("body", CASES.values(), ids=list(CASES))
def test_client_settings_match_the_full_reader(tmp_path, body):
    conf = tmp_path / "slurm.conf"
    conf.write_text(body + NODES)
    full = load_config(str(conf))
    quick = client_settings(str(conf))
    assert (quick.path, quick.cluster_name, quick.socket_path) == (
        full.path,
        full.cluster_name,
        full.socket_path,
    )


def test_include_is_followed_relative_to_the_config_directory(tmp_path):
    (tmp_path / "site.conf").write_text("ClusterName=included\nStateSaveLocation=/srv/ctl\n")
    conf = tmp_path / "slurm.conf"
    conf.write_text("Include site.conf\n" + NODES)
    quick = client_settings(str(conf))
    assert quick.cluster_name == "included" == load_config(str(conf)).cluster_name
    assert quick.socket_path == "/srv/ctl/slurmctld.sock"


def test_slurm_conf_from_the_environment_and_missing_file_error(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=envlab\n" + NODES)
    assert client_settings(env={"SLURM_CONF": str(conf)}).cluster_name == "envlab"
    with pytest.raises(ConfigError, match="cannot read"):
        client_settings(str(tmp_path / "absent.conf"))


def test_a_line_that_is_not_key_value_is_an_error_naming_file_and_line(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=lab\nthis is not a pair\n")
    with pytest.raises(ConfigError, match=r"slurm.conf:2: expected Key=Value"):
        client_settings(str(conf))


def test_message_timeout_is_read_and_checked_as_the_full_reader_does(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("MessageTimeout=3\n" + NODES)
    assert client_settings(str(conf)).message_timeout == 3 == load_config(str(conf)).message_timeout
    conf.write_text(NODES)
    assert (
        client_settings(str(conf)).message_timeout == 10 == load_config(str(conf)).message_timeout
    )
    for bad in ("0", "ten", "-1"):
        conf.write_text(f"ClusterName=lab\nMessageTimeout={bad}\n" + NODES)
        for reader in (client_settings, load_config):
            with pytest.raises(
                ConfigError, match=rf"slurm.conf:2: invalid value '{bad}' for MessageTimeout"
            ):
                reader(str(conf))
