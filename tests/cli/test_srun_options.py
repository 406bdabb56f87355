"""srun's and salloc's options and input variables -> the step and allocation they ask for."""

from __future__ import annotations

import pytest

from slurmlite.errors import CommandLineError
from slurmlite.options import SBATCH
from slurmlite.srun_options import SALLOC, SRUN
from slurmlite.srun_request import build_salloc, build_srun

INSIDE = {"SLURM_JOB_ID": "7"}  # what a batch script or salloc shell has


def srun(*args: str, env: dict[str, str] | None = None):
    return build_srun(list(args), env if env is not None else {}, "/home/a/work", "login")


def refused(*args: str, env: dict[str, str] | None = None) -> tuple[list[str], int]:
    with pytest.raises(CommandLineError) as info:
        srun(*args, env=env)
    return info.value.lines, info.value.exit_code


# ------------------------------------------------------------------- getopt


def test_unknown_option_has_getopts_words_and_exit_255():
    # the same path as sbatch's in 22.05 (golden 40_sbatch_bad_option)
    assert refused("--bogus-option", "true") == (
        ["srun: unrecognized option '--bogus-option'", 'Try "srun --help" for more information'],
        255,
    )
    with pytest.raises(CommandLineError) as info:
        build_salloc(["--label"], {}, "/", "h")  # an srun-only option
    assert info.value.lines[0] == "salloc: unrecognized option '--label'"


def test_options_stop_at_the_command():
    cmd = srun("-n2", "hostname", "-s", "--label", env=INSIDE)
    assert cmd.argv == ["hostname", "-s", "--label"] and cmd.label is False


def test_real_options_slurmlite_lacks_are_refused_by_name():
    assert refused("--multi-prog", "x") == (["srun: error: --multi-prog is not supported yet"], 1)


def test_value_errors_speak_as_srun():
    assert refused("--time=abc", "x") == (["srun: error: Invalid --time specification"], 255)
    assert refused("-n", "0", "x") == (['srun: error: Invalid numeric value "0" for --ntasks.'], 1)
    assert refused("-W", "soon", "x") == (
        ['srun: error: Invalid numeric value "soon" for --wait.'],
        1,
    )
    assert refused("-m", "diagonal", "x") == (
        ["srun: error: Invalid --distribution specification"],
        255,
    )
    assert refused("-m", "plane=4", "x")[0] == [
        "srun: error: --distribution=plane is not supported yet"
    ]
    assert refused() == (["srun: fatal: No command given to execute."], 1)


def test_srun_and_salloc_accept_every_resource_option_sbatch_does():
    resource = {"nodes", "ntasks", "ntasks-per-node", "cpus-per-task", "mem", "mem-per-cpu",
                "gres", "gpus", "gpus-per-node", "time", "partition", "account", "qos",
                "nodelist", "exclude", "constraint", "job-name", "exclusive", "chdir"}  # fmt: skip
    sbatch_names = {n for _, s in SBATCH.long_names for n in s.long}
    for table in (SRUN, SALLOC):
        names = {n for n, _ in table.long_names}
        assert resource <= names & sbatch_names, table.prog


# ------------------------------------------------- inside an allocation


def test_a_bare_srun_inherits_the_allocations_task_count():
    # sbatch -N2 --ntasks-per-node=2: the script's srun runs SLURM_NTASKS=4 tasks
    env = {**INSIDE, "SLURM_NTASKS": "4", "SLURM_NNODES": "2", "SLURM_JOB_NAME": "job.sh"}
    cmd = srun("hostname", env=env)
    assert (cmd.job_id, cmd.submit) == (7, None)
    assert cmd.step["ntasks"] == 4
    assert cmd.step["nodes"] is None  # the node count is the allocation's, not a request
    assert cmd.step["name"] == "hostname"  # not the batch job's name (golden 60_sacct_torchx)


def test_shaping_the_step_on_the_command_line_drops_the_inherited_task_count():
    env = {**INSIDE, "SLURM_NTASKS": "4"}
    assert srun("-N1", "hostname", env=env).step["ntasks"] is None
    assert srun("--ntasks-per-node=1", "hostname", env=env).step["ntasks"] is None
    assert srun("-N1", "-n2", "hostname", env=env).step["ntasks"] == 2


def test_variables_lose_to_the_command_line_and_srun_cpus_per_task_wins():
    env = {**INSIDE, "SLURM_CPUS_PER_TASK": "4", "SRUN_CPUS_PER_TASK": "2", "SLURM_LABELIO": "1"}
    cmd = srun("hostname", env=env)
    assert cmd.step["cpus_per_task"] == 2 and cmd.label is True
    assert srun("-c3", "hostname", env=env).step["cpus_per_task"] == 3


def test_jobid_names_an_existing_allocation():
    cmd = srun("--jobid", "42", "--overlap", "--pty", "bash")
    assert (cmd.job_id, cmd.submit, cmd.step["overlap"], cmd.step["pty"]) == (42, None, True, True)
    assert cmd.unbuffered and not cmd.label  # a terminal is never line-buffered or labelled
    assert refused("--jobid=x", "bash")[0] == [
        'srun: error: Invalid numeric value "x" for --jobid.'
    ]


# ------------------------------------------------------------------ I/O


@pytest.mark.parametrize(
    "args,fields,filters",
    [
        ((), ("", "", "", None), (None, None, True)),
        (("-o", "none", "-e", "2"), ("/dev/null", "", "", None), (None, 2, True)),
        (("-o", "out-%t.txt"), ("out-%t.txt", "out-%t.txt", "", None), (None, None, True)),
        (("-o", "1"), ("", "", "", None), (1, 1, True)),  # stderr follows -o without -e
        (("-i", "none"), ("", "", "/dev/null", None), (None, None, False)),
        (("-i", "0"), ("", "", "", 0), (None, None, True)),  # snakemake: sh -s reads task 0's
        (("-i", "in.txt"), ("", "", "in.txt", None), (None, None, False)),
    ],
)
def test_io_modes(args, fields, filters):
    cmd = srun(*args, "prog", env=INSIDE)
    step = cmd.step
    assert (step["std_out"], step["std_err"], step["std_in"], step["stdin_task"]) == fields
    assert (cmd.out_task, cmd.err_task, cmd.read_stdin) == filters


def test_kill_on_bad_exit_and_wait_forms():
    assert srun("-K", "x", env=INSIDE).kill_on_bad_exit is True
    assert srun("--kill-on-bad-exit=1", "x", env=INSIDE).step["kill_on_bad_exit"] is True
    assert srun("--kill-on-bad-exit=0", "x", env=INSIDE).kill_on_bad_exit is False
    assert srun("--wait=60", "x", env=INSIDE).wait_s == 60  # torchx's srun line
    assert srun("-m", "cyclic:block", "x", env=INSIDE).step["distribution"] == "cyclic"


def test_mpi_types_other_than_none_are_accepted_with_a_warning():
    assert srun("--mpi=none", "x", env=INSIDE).warnings == []
    assert srun("--mpi=pmix", "x", env=INSIDE).warnings == [
        "srun: warning: --mpi=pmix ignored: tasks start without MPI"
    ]
    assert srun("x", env={**INSIDE, "SLURM_MPI_TYPE": "pmi2"}).warnings == []  # site default


def test_cpu_bind_is_accepted_and_reported_as_ignored():
    cmd = srun("-n1", "--cpu-bind=q", "--cpus-per-task=2", "snakemake", env=INSIDE)
    assert cmd.ignored == ["--cpu-bind"] and cmd.step["cpus_per_task"] == 2


# ------------------------------------------------- outside an allocation


def test_outside_an_allocation_srun_asks_for_one_named_after_the_program():
    cmd = srun("-N2", "-n4", "--gres=gpu:1", "-t", "10", "/usr/bin/python3", "train.py")
    sub = cmd.submit
    assert cmd.job_id is None and sub["allocation"] is True and sub["script"] == ""
    assert (sub["name"], sub["nodes_min"], sub["ntasks"], sub["time_limit"]) == (
        "python3",
        2,
        4,
        10,
    )
    assert (sub["gpus_per_node"], sub["tres_per_node"]) == (1, "gres:gpu:1")
    assert sub["submit_dir"] == sub["work_dir"] == "/home/a/work"
    assert "std_out" not in sub  # the step's output, not the allocation's
    assert cmd.step["gpus_per_node"] == 1 and cmd.step["nodes"] == 2
    assert srun("-J", "mine", "x").submit["name"] == "mine"
    assert srun("x", env={"SLURM_JOB_NAME": "env-name"}).submit["name"] == "env-name"


def test_gpus_per_task_sizes_the_allocation():
    assert srun("-n2", "--gpus-per-task=1", "x").submit["gpus_total"] == 2  # 2 tasks x 1
    sub = srun("-N2", "--ntasks-per-node=2", "--gpus-per-task=1", "x").submit
    assert sub["gpus_per_node"] == 2  # 2 tasks per node x 1


def test_fewer_tasks_than_nodes_warns_as_srun():
    cmd = srun("-N3", "-n2", "x")
    assert cmd.warnings == ["srun: Warning: can't run 2 processes on 3 nodes, setting nnodes to 2"]


# -------------------------------------------------------------------- salloc


def test_salloc_runs_the_users_shell_by_default_and_reads_salloc_variables():
    cmd = build_salloc(["-N2"], {"SHELL": "/bin/zsh", "SALLOC_PARTITION": "long"}, "/w", "h")
    assert cmd.argv == ["/bin/zsh"]
    assert (cmd.submit["name"], cmd.submit["partition"], cmd.submit["nodes_min"]) == (
        "zsh",
        "long",
        2,
    )
    cmd = build_salloc(["-p", "debug", "srun", "-n2", "hostname"], {}, "/w", "h")
    assert cmd.argv == ["srun", "-n2", "hostname"] and cmd.submit["partition"] == "debug"


def test_dependency_and_begin_wait_the_allocation_as_sbatch_would():
    sub = srun("-d", "afterok:7:8", "--begin=now+1hour", "x").submit
    assert sub["dependency"] == "afterok:7,afterok:8" and sub["begin_time"] > 0  # stored form
    sub = build_salloc(["--dependency=singleton", "true"], {}, "/w", "h").submit
    assert sub["dependency"] == "singleton"
    assert srun("x", env={"SLURM_DEPENDENCY": "afterany:9"}).submit["dependency"] == "afterany:9"
    assert "dependency" not in srun("x").submit
    # a list that does not parse is refused in each command's own words (exit 1)
    assert refused("-d", "afterok:x", "true") == (
        ["srun: error: Unable to allocate resources: Job dependency problem"],
        1,
    )
    with pytest.raises(CommandLineError) as info:
        build_salloc(["--dependency=bogus"], {}, "/w", "h")
    assert info.value.lines == ["salloc: error: Job submit/allocate failed: Job dependency problem"]
