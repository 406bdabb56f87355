"""How each LIVE golden file is compared, and which golden job plays which role.

The golden captures are one story told with job ids 17-70 on the anchor
cluster: a few finished submissions (19-49), then a live queue (50: a
2-node ``--exclusive`` job filling both nodes; 51-59 pending behind it),
then cancels (52_*), then jobs ending in every state (65-70).  The live
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

from tests.e2e.golden_catalog import ARRAYS, BEGIN, DEPENDENCY, SRUN_IN_SCRIPT, STEPS

GOLDEN_ROLES: dict[int, str] = {
    17: "roots-job",
    19: "wrap",
    20: "parsable",
    21: "parsable-cluster",
    22: "stdin",
    24: "env-1node",
    29: "env-opts",
    36: "out-default",
    37: "out-pattern",
    42: "out-missing-dir",
    43: "out-chdir",
    44: "n3-a",
    45: "too-many-gpus",
    46: "too-much-mem",
    49: "n3-b",
    50: "big-running",
    51: "wants-2nodes",
    52: "small-one",
    54: "held",
    56: "gpu-job",
    58: "fails",
    60: "other-users-target",
    65: "ok",
    66: "fail1",
    67: "fail3",
    68: "killed9",
    70: "cancel-running",
}

TIMEOUT_ROLE = (
    "A TIMEOUT needs a job with a 1-minute limit: reused from the session where one exists"
)
NOT_REPLAYED: dict[int, str] = {
    18: TIMEOUT_ROLE,
    25: SRUN_IN_SCRIPT,
    26: SRUN_IN_SCRIPT,
    27: SRUN_IN_SCRIPT,
    28: SRUN_IN_SCRIPT,
    30: ARRAYS,
    33: STEPS,
    34: STEPS,
    35: STEPS,
    38: ARRAYS,
    40: ARRAYS,
    47: DEPENDENCY,
    48: DEPENDENCY,
    53: DEPENDENCY,
    55: BEGIN,
    57: ARRAYS,
    59: DEPENDENCY,
    69: SRUN_IN_SCRIPT,
}

REQUEUED = "requeued on the anchor: Slurm's sacct lists a requeued job by its new submit time"
ROOT_ONLY = "root's job: the anchor ran sacct as alice, who does not see it; ours runs as root"


@dataclass(frozen=True)
class Spec:
    """How one LIVE file is compared.

    kind: ``text`` (normalised free text), ``exact`` (byte for byte, captured
    at the right moment of the story), ``fixed`` / ``delimited`` tables,
    ``records`` (``scontrol show``), ``env`` (a job's environment).
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
    ignore: dict[str, str] = field(default_factory=dict)  # record keys whose values vary, why
    drop: dict[str, str] = field(default_factory=dict)  # record keys left out on both sides
    subst: tuple[tuple[str, str], ...] = ()  # more golden -> ours swaps (anchor artefacts)


SQ = Spec("fixed", order="groups")
SQ_H = Spec(
    "fixed",
    header=0,
    order="groups",
    names=("JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)"),
)
JOB = Spec("records")
NODE_ALLOC = Spec(
    "records",
    drop={"Port": "shown only for a node off the default port: n1 was on the anchor, ours are not"},
)
SACCT = Spec("fixed", header=2, unordered={"big-running": REQUEUED})
PIPE_60 = Spec("delimited", unordered={"big-running": REQUEUED})
SACCT_ALL_60 = {
    "small-one": "held on the anchor, so sacct had no record; ours runs (see golden_jobops)",
    "roots-job": ROOT_ONLY,
    "other-users-target": ROOT_ONLY,
}

SPECS: dict[str, Spec] = {
    "01_sbatch_test_only": Spec("text"),
    "10_env_1node_1task": Spec("env"),
    "15_env_options": Spec("env"),
    "20_output_chdir_relative": Spec("text"),
    "20_output_default_name": Spec("text"),
    "20_output_missing_dir": Spec("text"),
    # %N is the machine's host name on the anchor (both nodes on one host), the node here
    "20_output_pattern_jxNutJ": Spec("text", subst=((r"-patname-vm-", "-patname-n1-"),)),
    "50_sacct_pending_running": Spec("fixed", header=2),
    "50_sacct_submitit_pending": Spec("delimited"),
    "50_scontrol_show_job_gpu_pending": JOB,
    "50_scontrol_show_job_held": JOB,
    "50_scontrol_show_job_oneliner": JOB,
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
    "50_squeue_default": SQ,
    "50_squeue_h_o_default_like": SQ_H,
    "50_squeue_h_o_i_T_pipe": Spec("delimited", header=0, names=("JOBID", "STATE"), order="groups"),
    "50_squeue_h_o_i_t": Spec(
        "delimited", sep=" ", header=0, names=("JOBID", "ST"), order="groups"
    ),
    "50_squeue_j_T": Spec("exact"),
    "50_squeue_long": Spec("fixed", dated=True, order="groups"),
    "50_squeue_me": SQ,
    "50_squeue_name": Spec("text"),
    "50_squeue_o_many": Spec("delimited", order="groups"),
    "50_squeue_start": Spec("fixed"),  # by expected start (all unknown here), then job id
    "50_squeue_user_pending": SQ,
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
    "52_scancel_completed": Spec("exact"),
    "52_scancel_pending": Spec("exact"),
    "52_scancel_running": Spec("exact"),
    "52_scancel_signal_running": Spec("text"),
    "52_scontrol_requeue_running": Spec("text"),
    "52_squeue_after_cancel_running": Spec("exact"),
    "60_killed9_job_output": Spec("exact"),
    "60_sacct_X_states": Spec("fixed", header=2, unordered={"big-running": REQUEUED}),
    "60_sacct_brief": SACCT,
    "60_sacct_default": Spec(
        "fixed",
        header=2,
        unordered={"big-running": REQUEUED},
        extra=SACCT_ALL_60,
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
    "60_scontrol_show_job_completed": JOB,
    "60_scontrol_show_job_failed": JOB,
    "60_scontrol_show_job_timeout": Spec(
        "records",
        ignore={
            "JobName": "the reused job is not named tmo",
            "Command": "the reused job is a --wrap job, the anchor's ran timeout_job.sh",
            "ExitCode": "the reused job ignores SIGTERM (0:9), the anchor's did not (0:15)",
        },
    ),
    "60_sinfo_N_l_idle": Spec("fixed", dated=True, keyed=False),
    "60_squeue_after_all_done": Spec("exact"),
    "60_timeout_job_output": Spec("text"),
}
