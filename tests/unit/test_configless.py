"""Configless, both halves without daemons: what is served (``slurmlite.configless``)
and how an agent fetches and caches it (``agent.configless``, with a fake HTTP get)."""

from __future__ import annotations

import httpx
import pytest

from agent.configless import FetchError, fetch, load, local_conf, parse_servers
from slurmlite.configless import flatten, served_files, write_cache
from slurmlite.conftext import ConfigError


def test_includes_are_inlined_and_the_store_url_is_withheld(tmp_path):
    (tmp_path / "a.conf").write_text("Include b.conf\nNodeName=n1 CPUs=2\n")
    (tmp_path / "b.conf").write_text('SlurmliteStoreURL=postgresql://u:pw@h/d Prolog="/x y"\n')
    text = "ClusterName=lab # ours\nInclude a.conf\nKillWait=\\\n3\n"
    # 'Prolog' keeps its quotes (a space in it); the continuation is one line
    assert flatten(text, str(tmp_path)) == ["ClusterName=lab", 'Prolog="/x y"', "NodeName=n1 CPUs=2",
                                            "KillWait=3"]  # fmt: skip
    (tmp_path / "slurm.conf").write_text("SlurmliteStoreURL=sqlite:////s.db\nClusterName=lab\n")
    (tmp_path / "cgroup.conf").write_text("ConstrainRAMSpace=no\n")
    assert served_files(str(tmp_path / "slurm.conf")) == {
        "slurm.conf": "ClusterName=lab\n",
        "cgroup.conf": "ConstrainRAMSpace=no\n",
    }


def test_an_include_loop_is_refused_as_the_reader_refuses_it(tmp_path):
    (tmp_path / "a.conf").write_text("Include a.conf\n")
    with pytest.raises(ConfigError, match="Include nested too deeply"):
        flatten("Include a.conf\n", str(tmp_path))


def test_the_cache_holds_exactly_what_was_served(tmp_path):
    cache = tmp_path / "conf-cache"
    path = write_cache({"slurm.conf": "ClusterName=a\n", "gres.conf": "AutoDetect=off\n"}, cache)
    assert path.read_text() == "ClusterName=a\n" and (cache / "gres.conf").exists()
    write_cache({"slurm.conf": "ClusterName=b\n"}, cache)  # gres.conf no longer served
    assert sorted(p.name for p in cache.iterdir()) == ["slurm.conf"]
    for bad in ({"gres.conf": ""}, {"slurm.conf": "", "../evil": "x"}):
        with pytest.raises(ConfigError):
            write_cache(bad, cache)


def test_servers_and_ports():
    assert parse_servers("ctl") == [("ctl", 6817)]
    assert parse_servers("ctl:7000, ctl2") == [("ctl", 7000), ("ctl2", 6817)]
    for bad in ("", "ctl:", "ctl:x", ":7000", "ctl:70000"):
        with pytest.raises(ValueError):
            parse_servers(bad)


class FakeGet:
    """Answers in turn: an exception is raised, an int is a status with a body."""

    def __init__(self, *answers):  # type: ignore[no-untyped-def]
        self.answers, self.urls, self.headers = list(answers), [], []

    def __call__(self, url, headers, timeout):  # type: ignore[no-untyped-def]
        self.urls.append(url)
        self.headers.append(headers)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        status, body = answer
        return httpx.Response(status, json=body, request=httpx.Request("GET", url))


class Timer:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


JWT = {"SLURM_JWT": "tok"}  # the proof without a munged


def test_fetch_tries_the_next_server_and_again_until_one_answers():
    refused = httpx.ConnectError("refused")
    get = FakeGet(refused, refused, refused, (200, {"files": {"slurm.conf": "X=1\n"}}))
    t = Timer()
    files = fetch(parse_servers("c1,c2:7000"), env=JWT, get=get, sleep=t.sleep, timer=t)
    assert files == {"slurm.conf": "X=1\n"}
    assert get.urls == ["http://c1:6817/v1/config/files", "http://c2:7000/v1/config/files"] * 2
    assert get.headers[0] == {"X-SLURM-USER-TOKEN": "tok"} and t.now == 0.5  # one pause


def test_a_refusal_is_final_and_silence_ends_at_the_deadline():
    denied = (401, {"detail": {"errno": 1, "error": "x", "detail": "munge: Invalid credential"}})
    with pytest.raises(FetchError, match="refused the request: HTTP 401: munge: Invalid"):
        fetch(parse_servers("c1"), env=JWT, get=FakeGet(denied))
    t = Timer()
    get = FakeGet(*[httpx.ConnectError("refused")] * 5)
    with pytest.raises(
        FetchError, match=r"no configuration from c1:6817 in 2 s \(c1:6817: refused"
    ):
        fetch(parse_servers("c1"), deadline=2, env=JWT, get=get, sleep=t.sleep, timer=t)
    assert len(get.urls) == 5  # at 0, 0.5, 1, 1.5, 2 s


def test_load_caches_in_the_served_spool_dir(tmp_path, monkeypatch):
    conf = f"ClusterName=lab\nSlurmdSpoolDir={tmp_path}/%n\nNodeName=a1 CPUs=2\n"
    monkeypatch.setattr("agent.configless.fetch", lambda servers, deadline: {"slurm.conf": conf})
    cfg = load("ctl", "a1")
    assert cfg.path == str(tmp_path / "a1" / "conf-cache" / "slurm.conf")
    assert (cfg.cluster_name, [n.name for n in cfg.nodes]) == ("lab", ["a1"])


def test_a_jobs_slurm_conf_is_the_agents_own():
    env = {"SLURM_CONF": "/ctl/slurm.conf", "A": "1"}
    assert local_conf(env, "/spool/a1/conf-cache/slurm.conf") == {
        "SLURM_CONF": "/spool/a1/conf-cache/slurm.conf", "A": "1"}  # fmt: skip
    assert local_conf(env, "/ctl/slurm.conf") is env  # the same file: nothing to change
    assert local_conf({"A": "1"}, "/x") == {"A": "1"}  # not a job environment


def test_slurmd_says_what_is_wrong_with_its_conf_server_option():
    from click.testing import CliRunner

    from agent.main import main

    runner = CliRunner()
    r = runner.invoke(main, ["-N", "a1", "-f", "/x/slurm.conf", "--conf-server", "ctl"])
    assert (r.exit_code, r.output) == (
        1, "slurmd: error: -f and --conf-server exclude each other\n")  # fmt: skip
    r = runner.invoke(main, ["-N", "a1", "--conf-server", "ctl:x"])
    assert (r.exit_code, r.output) == (
        1, "slurmd: error: --conf-server: 'ctl:x' is not HOST[:PORT]\n")  # fmt: skip
