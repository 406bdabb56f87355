"""How each LIVE golden file is compared, and which golden job plays which role.

The golden captures are one story told with job ids 17-70 on the anchor
cluster: a few finished submissions (19-49: among them the environment
dumps of batch jobs whose scripts run ``srun`` (24-29) and three ``srun``
commands that make their own allocation (33-35)), then a live queue (50: a
2-node ``--exclusive`` job filling both nodes; 51-59 pending behind it),
then cancels (52_*), then jobs ending in every state (65-70; 69's job
step fails).  The live
suite replays that story with the same job names, in the same order, so
that a golden job id and ours name the same *role*::

    golden 56 "gpu-job" (--gres=gpu:2, pending)  <->  ours 123 "gpu-job"  ->  role "gpu-job"

``GOLDEN_ROLES`` gives the role of every golden job id we replay;
``NOT_REPLAYED`` the golden jobs we cannot replay yet and why (their rows
are left out of every comparison; the missing features are in
``golden_catalog.REFUSALS``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

GOLDEN_ROLES: dict[int, str] = {
    17: "roots-job",
    19: "wrap",
    20: "parsable",
    21: "parsable-cluster",
    22: "stdin",
    24: "env-1node",
    25: "env-2tasks",
    26: "env-2nodes",
    27: "env-gpu",
    28: "env-gpn",
    29: "env-opts",
    30: "env-array",
    33: "srun-direct",
    34: "srun-label",
    35: "srun-printenv",
    36: "out-default",
    37: "out-pattern",
    38: "out-pattern-array",
    40: "out-array-default",
    42: "out-missing-dir",
    43: "out-chdir",
    44: "n3-a",
    45: "too-many-gpus",
    46: "too-much-mem",
    49: "n3-b",
    50: "big-running",
    51: "wants-2nodes",
    52: "small-one",
    53: "after-big",
    54: "held",
    55: "later",
    56: "gpu-job",
    57: "arr",
    58: "fails",
    59: "never",
    60: "other-users-target",
    65: "ok",
    66: "fail1",
    67: "fail3",
    68: "killed9",
    69: "stepfail",
    70: "cancel-running",
}

TIMEOUT_ROLE = (
    "A TIMEOUT needs a job with a 1-minute limit: reused from the session where one exists"
)
# 47 and 48 are single submissions with a dependency on no job (40_sbatch_bad_dependency,
# 41_dependency_on_unknown_job), replayed on their own by test_golden.py
ALONE = "replayed on its own (test_golden.py, SHAPE)"
NOT_REPLAYED: dict[int, str] = {
    18: TIMEOUT_ROLE,
    47: ALONE,
    48: ALONE,
}

CAPTURE_HOST = "<capture host>"  # in a ``subst`` replacement: our machine's host name
# The anchor's two nodes were one machine, so what a task's ``hostname`` prints is the
# machine's name ("vm"); ours are one machine too.
ON_THE_MACHINE = ((r"(?m)(?<=^\d: )vm$", CAPTURE_HOST),)

# Slurm's srun listens for its tasks' I/O and exits on a port of the launch host and tells
# the tasks where; ours has none to tell: the tasks' I/O and exits come back on the
# agent's answer to srun's POST /v1/steps (protocol.py, "job steps").
NO_CALLBACK = "srun has no callback address: task I/O comes back on the agent's answer"
SRUN_ADDRESS = {
    name: NO_CALLBACK
    for name in (
        "SLURM_LAUNCH_NODE_IPADDR",
        "SLURM_SRUN_COMM_HOST",
        "SLURM_SRUN_COMM_PORT",
        "SLURM_STEP_LAUNCHER_PORT",
    )
}
REQUEUED = "requeued on the anchor: Slurm's sacct lists a requeued job by its new submit time"
ROOT_ONLY = "root's job: the anchor ran sacct as alice, who does not see it; ours runs as root"


@dataclass(frozen=True)
class Spec:
    """How one LIVE file is compared.

    kind: ``text`` (normalised free text), ``exact`` (stdout byte for byte
    once the golden's capture-host facts are swapped for ours and ``id_lines``
    mapped to roles, captured at the right moment of the story), ``fixed`` / ``delimited`` tables, ``records``
    (``scontrol show``), ``env`` (environment dumps: each ``[file X]`` of a
    batch job, or the command's own output; see ``golden_compare.env_dump_differences``).
    """

    kind: str
    header: int = 1  # header lines of a table (sacct: names + dashes)
    dated: bool = False  # the first line is the date (squeue -l, sinfo -l)
    sep: str = "|"
    names: tuple[str, ...] | None = None  # column names of a headerless table
    keyed: bool = True  # rows are jobs, matched by role (else compared row by row)
    order: str = "id"  # "id", "groups" (squeue: by the golden's partition/state groups)
    unordered: dict[str, str] = field(default_factory=dict)  # roles left out of the order check
    skip: dict[str, str] = field(default_factory=dict)  # golden roles not compared here, why
    extra: dict[str, str] = field(default_factory=dict)  # our roles the golden does not list
    # record keys whose values are not compared / env variables left out of both sides, why
    ignore: dict[str, str] = field(default_factory=dict)
    drop: dict[str, str] = field(default_factory=dict)  # record keys left out on both sides
    subst: tuple[tuple[str, str], ...] = ()  # more golden -> ours swaps (anchor artefacts)
    id_lines: tuple[int, ...] = ()  # ``exact``: lines holding only a job id, compared by role
    # tables of no jobs (keyed False): only rows matching this pattern, on both sides
    rows: str | None = None
    # column -> pattern: a cell matching it is compared only as "a value of that shape"
    shapes: dict[str, str] = field(default_factory=dict)


# sshare: the golden's tree (root -> user root, acct_a, acct_b -> users alice and root) is
# the story's (golden_scenario.Story.accounts); its alice is played by nobody (the story's
# jobs run as root, who is also in the tree).  Rows of other accounts (the configured
# default account, which other tests' jobs used) are left out; every number is compared
# by its shape only (usage and fair-share differ from run to run), blank cells exactly.
SSHARE_ROWS = r"^ {0,2}(root|acct_a|acct_b)[ |]"
SIX = r"\d+\.\d{6}|inf"
SSHARE_SHAPES = {
    "NormShares": SIX,
    "RawUsage": r"\d+",
    "NormUsage": SIX,
    "EffectvUsage": SIX,
    "FairShare": SIX,
    "LevelFS": SIX,
    "TRESRunMins": r"cpu=\d+,mem=\d+[\w/=,]*\+?",
}
AS_NOBODY = ((r"\balice\b", "nobody"),)
SSHARE = Spec(
    "fixed", header=2, keyed=False, rows=SSHARE_ROWS, shapes=SSHARE_SHAPES, subst=AS_NOBODY
)
SSHARE_P = Spec("delimited", keyed=False, rows=SSHARE_ROWS, shapes=SSHARE_SHAPES, subst=AS_NOBODY)

STEP_ENV = Spec("env", ignore=SRUN_ADDRESS)
SQ = Spec("fixed", order="groups")
SQ_H = Spec(
    "fixed",
    header=0,
    order="groups",
    names=("JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)"),
)
JOB = Spec("records")
ARRAY_TASKS = Spec("delimited", sep=" ", header=0, names=("JOBID", "STATE", "REASON"))
NODE_ALLOC = Spec(
    "records",
    drop={"Port": "shown only for a node off the default port: n1 was on the anchor, ours are not"},
)
SACCT = Spec("fixed", header=2, unordered={"big-running": REQUEUED})
PIPE_60 = Spec("delimited", unordered={"big-running": REQUEUED})
# the anchor's arr tasks ran a command the golden does not show: two had ended, two were
# running when its story cancelled them; ours run ``true``.  Its task 9, cancelled while
# pending, has no row in the anchor's default sacct; ours has (CANCELLED, as with -j).
ARR_TIMING = "the anchor's array tasks ran for an unknown time (see ARR_TIMING)"
SACCT_ALL_60 = {
    "small-one": "held on the anchor, so sacct had no record; ours runs (see golden_jobops)",
    "roots-job": ROOT_ONLY,
    "other-users-target": ROOT_ONLY,
}

SPECS: dict[str, Spec] = {
    "01_sbatch_test_only": Spec("text"),
    "10_env_1node_1task": Spec("env"),
    "11_env_1node_2tasks_srun": STEP_ENV,
    "12_env_2nodes": STEP_ENV,
    "13_env_gres_gpu1": STEP_ENV,
    "14_env_gpus_per_node2_2nodes": STEP_ENV,
    "15_env_options": Spec("env"),
    "16_env_array_0-2": Spec("env"),  # each task's file, its ids by role
    "17_env_srun_direct_2nodes": STEP_ENV,
    "17_srun_label_hostname": Spec("exact", subst=ON_THE_MACHINE),
    "17_srun_step_in_env": Spec("exact", id_lines=(0,)),
    "20_output_array_default": Spec("text"),
    "20_output_chdir_relative": Spec("text"),
    "20_output_default_name": Spec("text"),
    "20_output_missing_dir": Spec("text"),
    "20_output_pattern_array": Spec("text"),
    # %N is the machine's host name on the anchor (both nodes on one host), the node here
    "20_output_pattern_jxNutJ": Spec("text", subst=((r"-patname-vm-", "-patname-n1-"),)),
    "50_sacct_pending_running": Spec("fixed", header=2),
    "50_sacct_submitit_pending": Spec("delimited"),
    "50_scontrol_show_job_array_pending": JOB,
    "50_scontrol_show_job_gpu_pending": JOB,
    "50_scontrol_show_job_held": JOB,
    "50_scontrol_show_job_oneliner": JOB,
    "50_scontrol_show_job_pending_dependency": JOB,
    "50_scontrol_show_job_pending_resources": JOB,
    "50_scontrol_show_job_running": JOB,
    "50_scontrol_show_node": NODE_ALLOC,
    "50_scontrol_show_node_n1_oneliner": NODE_ALLOC,
    "50_sinfo_N_l": Spec("fixed", dated=True, keyed=False),
    "50_sinfo_Node_gres": Spec("exact"),
    "50_sinfo_default": Spec("exact"),
    "50_sinfo_s": Spec("exact"),
    "50_squeue_O_fields": SQ,
    "50_squeue_all_states": SQ,
    "50_squeue_array_expanded": SQ,
    "50_squeue_default": SQ,
    "50_squeue_h_o_default_like": SQ_H,
    "50_squeue_h_o_i_T_pipe": Spec("delimited", header=0, names=("JOBID", "STATE"), order="groups"),
    "50_squeue_h_o_i_t": Spec(
        "delimited", sep=" ", header=0, names=("JOBID", "ST"), order="groups"
    ),
    "50_squeue_j_T": Spec("exact"),
    "50_squeue_j_array_task": ARRAY_TASKS,
    "50_squeue_long": Spec("fixed", dated=True, order="groups"),
    "50_squeue_me": SQ,
    "50_squeue_name": Spec("text"),
    "50_squeue_o_many": Spec("delimited", order="groups"),
    "50_squeue_start": Spec("fixed"),  # by expected start (all unknown here), then job id
    "50_squeue_user_pending": SQ,
    # sprio: the anchor's weights (Story.accounts); FAIRSHARE is 10000 x the user's factor,
    # which depends on the session's usage: compared by its shape
    "50_sprio": Spec("fixed", shapes={"FAIRSHARE": r"\d+"}),
    "50_sprio_l": Spec("fixed", shapes={"FAIRSHARE": r"\d+"}),
    "50_sprio_w": Spec("fixed", keyed=False),
    "50_sshare": SSHARE,  # run as nobody: the caller's own user rows only
    "50_sshare_a_l": SSHARE,
    "50_sshare_parsable": SSHARE_P,
    "51_scancel_other_users_job": Spec("text"),
    # the 51_scontrol_* files: see golden_jobops (nobody's job plays golden 51, 52 and 55)
    "51_scontrol_hold": Spec("text"),
    "51_scontrol_hold_admin": Spec("text"),
    # "sleep 2" after the release: a pass has given the job its reason (Priority/Resources)
    "51_scontrol_release": Spec("delimited", sep=" ", header=0, names=("JOBID", "STATE", "REASON")),
    "51_scontrol_release_admin": Spec("text"),
    "51_scontrol_release_admin_hold_as_user": Spec("text"),
    "51_scontrol_update_other_users_job": Spec("text"),
    "51_scontrol_update_timelimit": Spec("text"),
    "51_scontrol_update_timelimit_increase_as_user": Spec("text"),
    "52_scancel_already_cancelled": Spec("exact"),
    "52_scancel_array_task": Spec("exact"),
    "52_scancel_completed": Spec("exact"),
    "52_scancel_pending": Spec("exact"),
    "52_scancel_running": Spec("exact"),
    "52_scancel_signal_running": Spec("text"),
    "52_scontrol_requeue_running": Spec("text"),
    "52_squeue_after_cancel_pending": ARRAY_TASKS,
    "52_squeue_after_cancel_running": Spec("exact"),
    "60_killed9_job_output": Spec("exact"),
    "60_sacct_X_states": Spec("fixed", header=2, unordered={"big-running": REQUEUED}),
    "60_sacct_brief": SACCT,
    "60_sacct_default": Spec(
        "fixed",
        header=2,
        unordered={"big-running": REQUEUED},
        skip={"arr": ARR_TIMING},
        extra={**SACCT_ALL_60, "arr": ARR_TIMING},
    ),
    "60_sacct_format_widths": Spec("fixed", header=2),
    "60_sacct_j_states": SACCT,
    "60_sacct_long": Spec("delimited"),
    "60_sacct_parsable2": Spec("delimited"),
    "60_sacct_parsable2_noheader": Spec(
        "delimited",
        header=0,
        names=("JobID", "JobName", "Partition", "Account", "AllocCPUS", "State", "ExitCode"),
        unordered={"big-running": REQUEUED},
    ),
    "60_sacct_snakemake": Spec("delimited", header=0, names=("JobIDRaw", "State")),
    "60_sacct_submitit": PIPE_60,
    "60_sacct_torchx": Spec("delimited"),
    "60_scontrol_show_job_completed": JOB,
    "60_scontrol_show_job_failed": JOB,
    "60_scontrol_show_job_timeout": Spec(
        "records",
        ignore={
            "JobName": "the reused job is not named tmo",
            "Command": "the reused job is a --wrap job, the anchor's ran timeout_job.sh",
            "ExitCode": "the reused job ignores SIGTERM (0:9), the anchor's did not (0:15)",
        },
        drop={"SystemComment": "slurmlite's addition: why it ended (the limit, the run time)"},
    ),
    "60_sinfo_N_l_idle": Spec("fixed", dated=True, keyed=False),
    "60_squeue_after_all_done": Spec("exact"),
    "60_stepfail_job_output": Spec("text"),
    "60_timeout_job_output": Spec("text"),
}
