"""sbatch argv + environment + script -> JobSubmit (and sbatch's errors).

Golden texts are embedded (so the suite runs anywhere) and, when the golden
directory is present, checked against the real Slurm 22.05 captures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurmlite.batchscript import MAX_SCRIPT_BYTES, WRAP_COMMENT
from slurmlite.errors import CommandLineError
from slurmlite.sbatch_request import SbatchCommand, build_submit
from tests.golden_path import optional_golden

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/alice", "SLURM_CONF": "/etc/slurm/slurm.conf"}


def golden(name: str) -> list[str] | None:
    path = optional_golden(name)
    return path.read_text().splitlines() if path is not None else None


def check_golden_stderr(name: str, lines: list[str], status: int) -> None:
    text = golden(name)
    if text is None:
        return
    assert text[-1] == f"[exit {status}]"
    assert text[text.index("[stderr]") + 1 : -1] == lines


def check_golden_env(name: str, echo: dict[str, str]) -> None:
    """Every variable we echo appears with that value in the job's real env."""
    text = golden(name)
    if text is None:
        return
    for var, value in echo.items():
        assert f"{var}={value}" in text, var


def sbatch(
    *argv: str,
    cwd: Path | str = "/home/alice/work",
    env: dict[str, str] | None = None,
    stdin: bytes = b"",
    umask: int | None = None,
) -> SbatchCommand:
    def read_stdin() -> bytes:
        return stdin

    return build_submit(
        list(argv), ENV if env is None else env, str(cwd), read_stdin, "vm", "alice", umask=umask
    )


def fails(*argv: str, **kw) -> CommandLineError:
    with pytest.raises(CommandLineError) as info:
        sbatch(*argv, **kw)
    return info.value


def script(tmp_path: Path, body: str, name: str = "job.sh") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


# ------------------------------------------------------- golden error files


TRY = 'Try "sbatch --help" for more information'


@pytest.mark.parametrize(
    "golden_file, command_line, lines, status",
    [
        ("40_sbatch_bad_option", "--bogus-option --wrap true",
         ["sbatch: unrecognized option '--bogus-option'", TRY], 255),
        ("40_sbatch_no_args_wrap_missing", "--wrap",
         ["sbatch: option '--wrap' requires an argument", TRY], 255),
        ("40_sbatch_bad_time", "--time=abc --wrap true",
         ["sbatch: error: Invalid --time specification"], 255),
        ("40_sbatch_bad_mem_unit", "--mem=12X --wrap true",
         ["sbatch: error: Invalid --mem specification"], 255),
        ("40_sbatch_bad_gres_name", "--gres=fpga:1 --wrap true",
         ["sbatch: error: Invalid generic resource (gres) specification"], 1),
        ("40_sbatch_empty_stdin", "", ["sbatch: error: Batch script is empty!"], 1),
        ("40_sbatch_missing_file", "nonexistent.sh",
         ["sbatch: error: Unable to open file nonexistent.sh"], 1),
    ],
)  # fmt: skip
def test_golden_errors(golden_file, command_line, lines, status, tmp_path):
    err = fails(*command_line.split(), cwd=tmp_path)
    assert (err.lines, err.exit_code) == (lines, status)
    check_golden_stderr(f"{golden_file}.txt", lines, status)


def test_golden_no_shebang(tmp_path):
    script(tmp_path, "echo hi\n", "noshebang.sh")
    err = fails("noshebang.sh", cwd=tmp_path)
    lines = [
        "sbatch: error: This does not look like a batch script.  The first",
        "sbatch: error: line must start with #! followed by the path to an interpreter.",
        "sbatch: error: For instance: #!/bin/sh",
    ]
    assert (err.lines, err.exit_code) == (lines, 1)
    check_golden_stderr("40_sbatch_no_shebang.txt", lines, 1)


def test_golden_version_and_help_requests():
    assert sbatch("--version").request == "version"  # 00_sbatch_version.txt
    assert sbatch("--help").request == "help"
    assert sbatch("--usage").submit is None
    # --version answers before a later bad option is reached ...
    assert sbatch("-V", "--bogus").request == "version"
    # ... but not after it
    assert fails("--bogus", "-V").exit_code == 255


def test_golden_parsable_cluster():
    # 01_sbatch_parsable_cluster.txt: sbatch --parsable -M anchor --wrap true -> "21;anchor"
    cmd = sbatch("--parsable", "-M", "anchor", "--wrap", "true")
    assert cmd.parsable and cmd.cluster == "anchor"
    assert "--clusters" in cmd.ignored
    assert sbatch("--wrap", "true", env={"SLURM_CLUSTERS": "anchor,b"}).cluster == "anchor"


def test_golden_wrap_and_test_only():
    cmd = sbatch("--test-only", "-N1", "--wrap", "true")  # 01_sbatch_test_only.txt
    assert cmd.test_only and cmd.submit.test_only
    job = cmd.submit
    assert job.script == f"#!/bin/sh\n{WRAP_COMMENT}\n\ntrue\n"
    assert job.name == "wrap" and job.command is None
    assert (job.nodes_min, job.nodes_max) == (1, 1)


def test_golden_stdin_script():
    # 01_sbatch_stdin.txt: printf "#!/bin/bash\necho from-stdin\n" | sbatch
    job = sbatch(stdin=b"#!/bin/bash\necho from-stdin\n").submit
    assert job.script == "#!/bin/bash\necho from-stdin\n"
    assert job.name == "sbatch" and job.command is None
    job = sbatch("/dev/stdin", stdin=b"#!/bin/sh\ntrue\n").submit  # snakemake's form
    assert job.name == "stdin"


def test_golden_env_options(tmp_path):
    body = (
        "#!/bin/bash\n#SBATCH --job-name=opts-job\n#SBATCH --cpus-per-task=2\n"
        "#SBATCH --mem=500M\n#SBATCH --time=10\n#SBATCH --account=acct_b\n"
        "#SBATCH --partition=long\n#SBATCH --comment=hello\n#SBATCH --gpus=1\nenv | sort\n"
    )
    script(tmp_path, body, "env_opts.sh")
    job = sbatch("env_opts.sh", cwd=tmp_path).submit
    assert (job.name, job.cpus_per_task, job.mem_per_node, job.time_limit) == (
        "opts-job",
        2,
        500,
        10,
    )
    assert (job.account, job.partition, job.comment) == ("acct_b", "long", "hello")
    assert (job.gpus_total, job.tres_per_job, job.tres_per_node) == (1, "gres:gpu:1", None)
    assert job.command == str(tmp_path / "env_opts.sh")  # found in the cwd
    assert job.echo_env == {"SLURM_CPUS_PER_TASK": "2", "SLURM_GPUS": "1"}
    check_golden_env("15_env_options.txt", job.echo_env)


def test_golden_gpus_per_node_two_nodes(tmp_path):
    body = "#!/bin/bash\n#SBATCH -N 2\n#SBATCH --gpus-per-node=2\n#SBATCH --ntasks-per-node=1\n"
    script(tmp_path, body + "env\n", "env_gpn.sh")
    job = sbatch("env_gpn.sh", cwd=tmp_path).submit
    assert (job.nodes_min, job.nodes_max, job.ntasks_per_node) == (2, 2, 1)
    assert job.ntasks == 2  # 2 nodes x 1 task per node
    assert (job.gpus_per_node, job.tres_per_node) == (2, "gres:gpu:2")
    assert job.echo_env == {
        "SLURM_GPUS_PER_NODE": "2",
        "SLURM_NTASKS_PER_NODE": "1",
        "SLURM_NTASKS": "2",
        "SLURM_NPROCS": "2",
    }
    check_golden_env("14_env_gpus_per_node2_2nodes.txt", job.echo_env)


@pytest.mark.parametrize(
    "golden_file, directives, echo",
    [
        (
            "10_env_1node_1task.txt",
            "-N 1\n#SBATCH -n 1",
            {"SLURM_NTASKS": "1", "SLURM_NPROCS": "1"},
        ),
        (
            "11_env_1node_2tasks_srun.txt",
            "-N 1\n#SBATCH --ntasks-per-node=2",
            {"SLURM_NTASKS": "2", "SLURM_NPROCS": "2", "SLURM_NTASKS_PER_NODE": "2"},
        ),
        ("13_env_gres_gpu1.txt", "--gres=gpu:1", {}),
    ],
)
def test_golden_task_echoes(golden_file, directives, echo, tmp_path):
    script(tmp_path, f"#!/bin/bash\n#SBATCH {directives}\nenv\n")
    job = sbatch("job.sh", cwd=tmp_path).submit
    assert job.echo_env == echo
    check_golden_env(golden_file, echo)


def test_gres_request_as_slurm_shows_it():
    # 50_squeue_o_many.txt %b and scontrol TresPerNode=gres:gpu:2
    job = sbatch("--gres=gpu:2", "--wrap", "x").submit
    assert (job.gpus_per_node, job.gpu_type, job.tres_per_node) == (2, None, "gres:gpu:2")
    job = sbatch("--gres=gpu:a100:1", "--wrap", "x").submit
    assert (job.gpus_per_node, job.gpu_type, job.tres_per_node) == (1, "a100", "gres:gpu:a100:1")
    assert sbatch("--gres=none", "--wrap", "x").submit.tres_per_node is None
    err = fails("--gres=gpu:1", "--gpus-per-node=1", "--wrap", "x")
    assert err.lines == ["sbatch: error: Invalid generic resource (gres) specification"]


def test_chdir_and_output_patterns():
    # 20_output_chdir_relative.txt: --chdir=sub --output='o-%j.txt'
    job = sbatch("--chdir=sub", "--output=o-%j.txt", "-e", "e.txt", "--wrap", "pwd").submit
    assert job.work_dir == "/home/alice/work/sub"
    assert job.submit_dir == "/home/alice/work"  # SLURM_SUBMIT_DIR is the cwd
    assert (job.std_out, job.std_err, job.std_in) == ("o-%j.txt", "e.txt", None)
    assert sbatch("-D", "/scratch", "--wrap", "x").submit.work_dir == "/scratch"


# ----------------------------------------------------------- precedence


def test_directives_lose_to_env_which_loses_to_command_line(tmp_path):
    script(tmp_path, "#!/bin/sh\n#SBATCH -t 10 -J from-script\ntrue\n")
    env = {**ENV, "SBATCH_TIMELIMIT": "20"}
    assert sbatch("job.sh", cwd=tmp_path).submit.time_limit == 10
    assert sbatch("job.sh", cwd=tmp_path, env=env).submit.time_limit == 20
    job = sbatch("-t", "30", "job.sh", cwd=tmp_path, env=env).submit
    assert (job.time_limit, job.name) == (30, "from-script")


def test_env_flag_variables(tmp_path):
    script(tmp_path, "#!/bin/sh\n#SBATCH --requeue\ntrue\n")
    assert sbatch("job.sh", cwd=tmp_path).submit.requeue is True
    env = {**ENV, "SBATCH_NO_REQUEUE": "1"}
    assert sbatch("job.sh", cwd=tmp_path, env=env).submit.requeue is False
    env = {**ENV, "SBATCH_REQUEUE": "no"}  # not yes/empty/number: switched off
    assert sbatch("job.sh", cwd=tmp_path, env=env).submit.requeue is None
    assert sbatch("--no-requeue", "--requeue", "--wrap", "x").submit.requeue is True


def test_early_options_in_directives_are_skipped(tmp_path):
    script(tmp_path, "#!/bin/sh\n#SBATCH --wrap=other -v --help -p a\ntrue\n")
    cmd = sbatch("job.sh", cwd=tmp_path)
    assert cmd.request is None and cmd.verbose == 0
    assert cmd.submit.script.startswith("#!/bin/sh\n#SBATCH")  # the file, not a wrap
    assert cmd.submit.partition == "a"


def test_directive_errors(tmp_path):
    script(tmp_path, "#!/bin/sh\n#SBATCH -p a stray -N 2\ntrue\n")
    err = fails("job.sh", cwd=tmp_path)
    assert err.lines == ["sbatch: error: Invalid directive found in batch script: stray"]
    assert err.exit_code == 255
    script(tmp_path, "#!/bin/sh\n#SBATCH --foo\ntrue\n")
    err = fails("job.sh", cwd=tmp_path)
    assert err.lines[0] == "sbatch: unrecognized option '--foo'" and err.exit_code == 255
    script(tmp_path, "#!/bin/sh\n#SBATCH --hint=nomultithread\ntrue\n")
    assert fails("job.sh", cwd=tmp_path).lines == ["sbatch: error: --hint is not supported yet"]


# -------------------------------------------------------------- the script


def test_script_lookup(tmp_path):
    (tmp_path / "bin").mkdir()
    script(tmp_path / "bin", "#!/bin/sh\ntrue\n", "onpath.sh")
    env = {**ENV, "PATH": f"{tmp_path / 'bin'}:/bin"}
    job = sbatch("onpath.sh", cwd=tmp_path, env=env).submit
    assert job.command == str(tmp_path / "bin" / "onpath.sh") and job.name == "onpath.sh"
    script(tmp_path, "#!/bin/sh\ntrue\n", "local.sh")
    assert sbatch("./local.sh", cwd=tmp_path).submit.command == "./local.sh"  # as given
    assert sbatch(str(tmp_path / "local.sh"), cwd="/").submit.name == "local.sh"


def test_script_is_read_at_submit_time(tmp_path):
    # submitit renames the file right after sbatch returns: the text travels
    path = script(tmp_path, "#!/bin/sh\necho one\n")
    job = sbatch("job.sh", cwd=tmp_path).submit
    path.unlink()
    assert job.script == "#!/bin/sh\necho one\n"


@pytest.mark.parametrize(
    "data, lines",
    [
        (b" \n\t\n", ["Batch script contains only whitespace!"]),
        (
            b"#!/bin/sh\r\necho\r\n",
            [
                "Batch script contains DOS line breaks (\\r\\n)",
                "instead of expected UNIX line breaks (\\n).",
            ],
        ),
        (
            b"#!/bin/sh\necho \0\n",
            # Slurm 22.05's words (src/sbatch/sbatch.c)
            [
                "The Slurm controller does not allow scripts that",
                "contain a NULL character '\\0'.",
            ],
        ),
    ],
)
def test_script_sanity_checks(data, lines):
    err = fails(stdin=data)
    assert err.lines == [f"sbatch: error: {line}" for line in lines] and err.exit_code == 1


def test_script_size_limit():
    # 4 MiB = 4194304 bytes is the most the controller accepts
    body = b"#!/bin/sh\n" + b"#" * (MAX_SCRIPT_BYTES - 10)
    assert sbatch(stdin=body).submit is not None
    err = fails(stdin=body + b"\n")
    assert err.lines == [
        "sbatch: error: Batch job submission failed: "
        "Pathname of a file, directory or other parameter too long"
    ]


def test_wrap_with_a_script_is_an_error(tmp_path):
    err = fails("--wrap", "true", "job.sh", cwd=tmp_path)
    assert err.lines == ["sbatch: error: Script arguments not permitted with --wrap option"]
    assert err.exit_code == 1


def test_words_after_the_script_are_its_arguments_options_among_them(tmp_path):
    script(tmp_path, "#!/bin/sh\necho $1\n")
    sub = sbatch("-J", "x", "job.sh", "a", "--steps", "5", "", cwd=tmp_path).fields
    assert sub["script_args"] == ["a", "--steps", "5", ""] and sub["name"] == "x"
    assert "script_args" not in sbatch("job.sh", cwd=tmp_path).fields


def test_hetjob_command_line_is_refused(tmp_path):
    assert "hetjob" in fails("-N1", ":", "-N2", "job.sh", cwd=tmp_path).lines[0]


def test_value_errors_come_before_reading_the_script():
    # Slurm checks every command-line value in its first pass
    err = fails("--time=abc", "nonexistent.sh")
    assert err.lines == ["sbatch: error: Invalid --time specification"]


# ------------------------------------------------------- values and checks


@pytest.mark.parametrize(
    "argv, lines, status",
    [
        (["-n", "0"], ['sbatch: error: Invalid numeric value "0" for --ntasks.'], 1),
        (["-c", "x"], ['sbatch: error: Invalid numeric value "x" for --cpus-per-task.'], 1),
        (["-N", "abc"], ['sbatch: error: "abc" is not a valid node count'], 255),
        (["--open-mode=x"], ["sbatch: error: Invalid --open-mode specification"], 255),
        (["--exclusive=bogus"], ["sbatch: error: Invalid --exclusive specification"], 255),
        (["--exclusive=user"], ["sbatch: error: --exclusive=user is not supported yet"], 1),
        (["--mem-per-cpu=1Q"], ["sbatch: error: Invalid --mem-per-cpu specification"], 255),
        (["--signal=USR1@x"], ["sbatch: error: Invalid --signal specification"], 255),
        (["--signal=R:USR1@60"], ["sbatch: error: --signal=R: is not supported yet"], 1),
        (
            ["--mem=1G", "--mem-per-cpu=100"],
            ["sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."],
            1,
        ),
        (["-Q", "-v"], ["sbatch: error: don't specify both --verbose (-v) and --quiet (-Q)"], 1),
        (["-N1", "-w", "n[1-2]"], ["sbatch: error: invalid number of nodes (-N 2-1)"], 1),
    ],
)
def test_value_errors(argv, lines, status):
    err = fails(*argv, "--wrap", "x")
    assert (err.lines, err.exit_code) == (lines, status)


def test_memory_from_env_yields_to_the_command_line():
    env = {**ENV, "SBATCH_MEM_PER_NODE": "1G"}
    job = sbatch("--mem-per-cpu=100", "--wrap", "x", env=env).submit
    assert (job.mem_per_node, job.mem_per_cpu) == (None, 100)
    env["SBATCH_MEM_PER_CPU"] = "5"
    err = fails("--wrap", "x", env=env)
    assert err.lines == [
        "sbatch: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE "
        "are mutually exclusive."
    ]


def test_time_and_memory_values():
    assert sbatch("-t", "0", "--wrap", "x").submit.time_unlimited  # --time=0 = UNLIMITED
    job = sbatch("-t", "10:30", "--mem=2G", "--wrap", "x").submit
    assert (job.time_limit, job.time_unlimited, job.mem_per_node) == (11, False, 2048)
    job = sbatch("--wrap", "x").submit
    assert (job.time_limit, job.time_unlimited, job.mem_per_node) == (None, False, None)
    assert sbatch("--mem=0", "--wrap", "x").submit.mem_per_node == 0  # whole node


def test_nodes_and_tasks():
    job = sbatch("-N", "2-4", "--wrap", "x").submit
    assert (job.nodes_min, job.nodes_max, job.ntasks) == (2, 4, None)
    # a node list raises the minimum to its host count
    job = sbatch("-w", "n[1-3],n1", "--wrap", "x").submit
    assert (job.nodes_min, job.nodes_max, job.req_nodes) == (3, None, ["n1", "n2", "n3"])
    assert sbatch("-x", "n[2-3]", "--wrap", "x").submit.exc_nodes == ["n2", "n3"]
    # fewer tasks than nodes: the node count drops, with Slurm's warning
    cmd = sbatch("-n", "1", "-N", "2", "--wrap", "x")
    assert (cmd.submit.nodes_min, cmd.submit.nodes_max) == (1, 1)
    assert cmd.warnings == [
        "sbatch: Warning: can't run 1 processes on 2 nodes, setting nnodes to 1"
    ]
    # a range maximum is capped by the task count: 2-4 nodes, 3 tasks -> 2-3
    job = sbatch("-n", "3", "-N", "2-4", "--wrap", "x").submit
    assert (job.nodes_min, job.nodes_max, job.ntasks) == (2, 3, 3)


def test_node_list_from_a_file(tmp_path):
    (tmp_path / "hosts").write_text("n1 n2\nn3\n")
    job = sbatch("-w", "./hosts", "--wrap", "x", cwd=tmp_path).submit
    assert job.req_nodes == ["n1", "n2", "n3"]
    err = fails("-w", "n[1-", "--wrap", "x")
    assert err.lines == ["sbatch: error: Batch job submission failed: Invalid node name specified"]


def test_flags_and_small_options():
    job = sbatch(
        "-H", "--nice", "--exclusive", "--open-mode=append", "-C", "a100&nvlink",
        "-A", "acct_a", "-q", "normal", "-i", "in.txt", "--wrap", "x", umask=0o022,
    ).submit  # fmt: skip
    assert job.hold and job.exclusive and job.nice == 100  # bare --nice = +100
    assert (job.open_mode, job.echo_env["SLURM_OPEN_MODE"]) == ("append", "a")
    assert (job.constraint, job.account, job.qos, job.std_in) == (
        "a100&nvlink",
        "acct_a",
        "normal",
        "in.txt",
    )
    assert job.umask == "0022" and job.submit_host == "vm"
    assert sbatch("--nice=-5", "--wrap", "x").submit.nice == -5


def test_ignored_options_are_accepted_and_listed():
    cmd = sbatch("--wckey=w", "--profile=all", "--wrap", "x")
    assert cmd.submit is not None
    assert cmd.ignored == ["--wckey", "--profile"]


def test_unsupported_from_env_names_the_variable():
    err = fails("--wrap", "x", env={**ENV, "SBATCH_RESERVATION": "maint"})
    assert err.lines == [
        "sbatch: error: --reservation (from SBATCH_RESERVATION) is not supported yet"
    ]


def test_job_name_sources(tmp_path):
    script(tmp_path, "#!/bin/sh\ntrue\n")
    assert sbatch("job.sh", cwd=tmp_path).submit.name == "job.sh"
    env = {**ENV, "SBATCH_JOB_NAME": "from-env"}
    assert sbatch("job.sh", cwd=tmp_path, env=env).submit.name == "from-env"
    assert sbatch("-J", "cli", "job.sh", cwd=tmp_path, env=env).submit.name == "cli"


def test_quiet_verbose_and_prefixes():
    cmd = sbatch("-Q", "--parsable", "--wrap", "x")
    assert cmd.quiet and cmd.parsable
    assert sbatch("-vv", "--wrap", "x").verbose == 2
    # --part is --partition; -pdebug carries its value
    assert sbatch("--part=a", "--wrap", "x").submit.partition == "a"
    assert sbatch("-pdebug", "--wrap", "x").submit.partition == "debug"


# ------------------------------------------------------------------ export


def test_export_default_is_the_whole_environment():
    job = sbatch("--wrap", "x").submit
    assert job.environment == ENV and job.export == "ALL" and job.echo_env == {}


def test_export_none_and_lists():
    job = sbatch("--export=NONE", "--wrap", "x").submit
    assert job.environment == {"SLURM_CONF": "/etc/slurm/slurm.conf"}  # SLURM_* always
    assert job.export == "NONE" and job.echo_env == {"SLURM_EXPORT_ENV": "NONE"}
    job = sbatch("--export=HOME,FOO=bar", "--wrap", "x").submit
    assert job.environment == {
        "HOME": "/home/alice",
        "FOO": "bar",
        "SLURM_CONF": "/etc/slurm/slurm.conf",
    }
    job = sbatch("--export=ALL,FOO=bar", "--wrap", "x").submit
    assert job.environment == {**ENV, "FOO": "bar"}
    env = {**ENV, "SBATCH_EXPORT": "NONE"}
    assert sbatch("--wrap", "x", env=env).submit.export == "NONE"
