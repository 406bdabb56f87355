"""``slurmlite keys node``: one private key file per node, where the config says or in --dir."""

from __future__ import annotations

import stat

from click.testing import CliRunner

from cli.slurmlite import main
from slurmlite.credential import generate_key_file, load_key, load_node_key, node_key


def test_writes_one_private_file_per_node_of_a_hostlist(tmp_path):
    key = tmp_path / "cluster.key"
    generate_key_file(key)
    out = tmp_path / "keys"
    r = CliRunner().invoke(
        main, ["keys", "node", "n[1-2],gpu7", "--dir", str(out), "--key-file", str(key)]
    )
    assert r.exit_code == 0, r.output
    assert r.output == "".join(f"wrote {out}/{n}.key\n" for n in ("n1", "n2", "gpu7"))
    for n in ("n1", "n2", "gpu7"):
        path = out / f"{n}.key"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert load_node_key(path, n) == node_key(load_key(key), n)


def test_without_dir_it_writes_where_the_agents_read_SlurmliteNodeKeyFile(tmp_path):
    generate_key_file(tmp_path / "slurmlite.key")  # the default SlurmliteKeyFile: beside the conf
    conf = tmp_path / "slurm.conf"
    conf.write_text("SlurmliteNodeKeyFile=keys/%n/node.key\nNodeName=a[1-2] CPUs=1\n")
    r = CliRunner().invoke(main, ["keys", "node", "a[1-2]", "-f", str(conf)])
    assert r.exit_code == 0, r.output
    assert load_node_key(tmp_path / "keys" / "a2" / "node.key", "a2") == node_key(
        load_key(tmp_path / "slurmlite.key"), "a2"
    )
    # no --dir and nowhere configured: said, nothing written
    conf.write_text("NodeName=a[1-2] CPUs=1\n")
    r = CliRunner().invoke(main, ["keys", "node", "a1", "-f", str(conf)])
    assert r.exit_code == 1
    assert "give --dir DIR, or set SlurmliteNodeKeyFile" in r.output


def test_names_that_could_leave_the_directory_and_missing_keys_are_refused(tmp_path):
    key = tmp_path / "cluster.key"
    generate_key_file(key)
    runner = CliRunner()
    r = runner.invoke(
        main, ["keys", "node", "../etc", "--dir", str(tmp_path), "--key-file", str(key)]
    )
    assert (r.exit_code, r.output) == (1, "slurmlite: error: invalid node name '../etc'\n")
    r = runner.invoke(
        main, ["keys", "node", "n[1-", "--dir", str(tmp_path), "--key-file", str(key)]
    )
    assert r.exit_code == 1 and "invalid node list 'n[1-'" in r.output
    r = runner.invoke(
        main, ["keys", "node", "n1", "--dir", str(tmp_path), "--key-file", str(tmp_path / "no")]
    )
    assert r.exit_code == 1 and "slurmlite keygen" in r.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster.key"]
