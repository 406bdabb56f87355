"""Where each golden file of ``golden/slurm-22.05`` is checked, and how a file is read.

Every file of the golden directory is in exactly one of five lists (a test
in ``test_golden.py`` checks that none is forgotten and none is counted twice):

* ``EXACT``: the output does not depend on job ids, times or the capture
  host, so stdout, stderr and the exit code must match byte for byte
  (``test_golden.py``; ``--version``'s added ``(slurmlite X)`` left out).
* ``SHAPE``: a single submission whose output differs only in the job id;
  numbers are replaced on both sides (``test_golden.py``).
* ``LIVE``: the golden scenario is replayed with real jobs on the session
  cluster and compared by shape: headers exactly, column edges and
  justification, the sequence of ``Key=`` fields, and every value except
  ids, times, durations, priorities and facts of the capture host (load,
  free memory, which node ran a job) (``test_golden_live.py``, specs in
  ``golden_live_specs.py``).
* ``JSON``: a ``--json`` document, compared with ours by shape: the same
  envelope and ``meta``, each record with the golden's keys, order and
  value types (``tests/golden_json.py``, ``test_golden.py``).
* ``DEFERRED``: the file needs a feature slurmlite does not have yet; the
  value names the issue that brings it (``None``: no open issue yet) and the
  feature.  ``REFUSALS`` says how each such feature is refused today, and a
  test checks that it still is, so this list cannot silently go stale.

A golden file (README of the directory): line 1 is ``$ command`` (run as
alice) or ``# command`` (run as root), then stdout, then ``[stderr]`` and
stderr, then ``[exit N]``.  Environment dumps have no exit line: their
``[job script X]``, ``[file X]`` and ``[ls X]`` sections follow stdout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.golden_path import GOLDEN

EXACT = [
    "00_sbatch_version",
    "00_sinfo_version",
    "30_scontrol_show_hostlist",
    "30_scontrol_show_hostlistsorted",
    "30_scontrol_show_hostnames",
    "30_scontrol_show_hostnames_padded",
    "40_sbatch_array_too_big",
    "40_sbatch_bad_account",
    "40_sbatch_bad_array",
    "40_sbatch_bad_gres_name",
    "40_sbatch_bad_mem_unit",
    "40_sbatch_bad_option",
    "40_sbatch_bad_partition",
    "40_sbatch_bad_qos",
    "40_sbatch_bad_time",
    "40_sbatch_empty_stdin",
    "40_sbatch_missing_file",
    "40_sbatch_no_args_wrap_missing",
    "40_sbatch_no_shebang",
    "40_sbatch_too_many_gpus",
    "40_sbatch_too_much_mem",
    "50_scontrol_show_job_nonexistent",
    "50_scontrol_show_partition",  # partitions only: no ids, no times
    "50_squeue_nonexistent",
    "50_squeue_nonexistent_h",
    "50_sinfo_o_P",
    "50_sinfo_P_m_noconvert",
    "52_scancel_bad_id",
    "52_scancel_nonexistent",
    "52_scancel_nonexistent_signal",
    "52_scancel_nonexistent_verbose",
    "60_sacct_helpformat",
    "60_sacct_nonexistent",
    "60_squeue_helpformat",
]

SHAPE = [
    "01_sbatch_wrap",
    "01_sbatch_parsable",
    "01_sbatch_parsable_cluster",
    "01_sbatch_stdin",
    "40_sbatch_too_many_nodes",
    "41_sbatch_N3_pending_reason",
    "40_sbatch_bad_dependency",
    "41_dependency_on_unknown_job",
]

LIVE = [
    "01_sbatch_test_only",
    "10_env_1node_1task",
    "11_env_1node_2tasks_srun",
    "12_env_2nodes",
    "13_env_gres_gpu1",
    "14_env_gpus_per_node2_2nodes",
    "15_env_options",
    "16_env_array_0-2",
    "17_env_srun_direct_2nodes",
    "17_srun_label_hostname",
    "17_srun_step_in_env",
    "20_output_array_default",
    "20_output_chdir_relative",
    "20_output_default_name",
    "20_output_missing_dir",
    "20_output_pattern_array",
    "20_output_pattern_jxNutJ",
    "50_sacct_pending_running",
    "50_sacct_submitit_pending",
    "50_scontrol_show_job_array_pending",
    "50_scontrol_show_job_gpu_pending",
    "50_scontrol_show_job_held",
    "50_scontrol_show_job_oneliner",
    "50_scontrol_show_job_pending_dependency",
    "50_scontrol_show_job_pending_resources",
    "50_scontrol_show_job_running",
    "50_scontrol_show_node",
    "50_scontrol_show_node_n1_oneliner",
    "50_sinfo_N_l",
    "50_sinfo_Node_gres",
    "50_sinfo_default",
    "50_sinfo_s",
    "50_sprio",
    "50_sprio_l",
    "50_sprio_w",
    "50_squeue_O_fields",
    "50_squeue_all_states",
    "50_squeue_array_expanded",
    "50_squeue_default",
    "50_squeue_h_o_default_like",
    "50_squeue_h_o_i_T_pipe",
    "50_squeue_h_o_i_t",
    "50_squeue_j_T",
    "50_squeue_j_array_task",
    "50_squeue_long",
    "50_squeue_me",
    "50_squeue_name",
    "50_squeue_o_many",
    "50_squeue_start",
    "50_squeue_user_pending",
    "50_sshare",
    "50_sshare_a_l",
    "50_sshare_parsable",
    "51_scancel_other_users_job",
    "51_scontrol_hold",
    "51_scontrol_hold_admin",
    "51_scontrol_release",
    "51_scontrol_release_admin",
    "51_scontrol_release_admin_hold_as_user",
    "51_scontrol_update_other_users_job",
    "51_scontrol_update_timelimit",
    "51_scontrol_update_timelimit_increase_as_user",
    "52_scancel_already_cancelled",
    "52_scancel_array_task",
    "52_scancel_completed",
    "52_scancel_pending",
    "52_scancel_running",
    "52_scancel_signal_running",
    "52_scontrol_requeue_running",
    "52_squeue_after_cancel_pending",
    "52_squeue_after_cancel_running",
    "60_killed9_job_output",
    "60_sacct_X_states",
    "60_sacct_brief",
    "60_sacct_default",
    "60_sacct_format_widths",
    "60_sacct_j_states",
    "60_sacct_long",
    "60_sacct_parsable2",
    "60_sacct_parsable2_noheader",
    "60_sacct_snakemake",
    "60_sacct_submitit",
    "60_sacct_torchx",
    "60_scontrol_show_job_completed",
    "60_scontrol_show_job_failed",
    "60_scontrol_show_job_timeout",
    "60_sinfo_N_l_idle",
    "60_squeue_after_all_done",
    "60_stepfail_job_output",
    "60_timeout_job_output",
]

JSON = [
    "50_squeue_json_one",
    "60_sacct_json_one",
]

DEFERRED: dict[str, tuple[int | None, str]] = {}  # every feature the files use has arrived


@dataclass(frozen=True)
class Refusal:
    """How a missing feature is refused today: a command, its exit code, a piece of stderr.

    ``marker`` is a pattern every golden file deferred for this feature
    contains, so a file cannot be deferred for a feature it does not use.
    """

    command: str
    code: int
    stderr: str
    marker: str


REFUSALS: dict[str, Refusal] = {}


@dataclass
class Golden:
    """One golden file, split into its parts."""

    name: str
    command: str
    as_root: bool
    stdout: str
    stderr: str
    code: int | None  # None: the file has no [exit N] line (environment dumps, JSON)
    sections: dict[str, str]  # "[job script X]" / "[file X]" bodies by their header


def load(name: str) -> Golden:
    lines = (GOLDEN / f"{name}.txt").read_text().split("\n")
    out: list[str] = []
    err: list[str] = []
    target = out
    code: int | None = None
    sections: dict[str, list[str]] = {}
    for line in lines[1:]:
        if re.fullmatch(r"\[(job script|file|ls) .*\]", line):
            target = sections.setdefault(line[1:-1], [])
        elif target is not out and target is not err:
            target.append(line)
        elif m := re.fullmatch(r"\[exit (\d+)\]", line):
            code = int(m.group(1))
            target = []  # nothing else follows but sections
        elif line == "[stderr]":
            target = err
        else:
            target.append(line)
    return Golden(
        name=name,
        command=lines[0][2:],
        as_root=lines[0].startswith("#"),
        stdout=_text(out),
        stderr=_text(err),
        code=code,
        sections={k: _text(v).rstrip("\n") + "\n" for k, v in sections.items()},
    )


def _text(lines: list[str]) -> str:
    return "".join(x + "\n" for x in lines)


def all_names() -> list[str]:
    return sorted(p.stem for p in GOLDEN.glob("*.txt"))
