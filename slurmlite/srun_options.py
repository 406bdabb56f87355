"""srun's and salloc's option tables, in the style of ``slurmlite.options``.

Every option Slurm 22.05's srun and salloc know is a row, so that a real
option is implemented, accepted and ignored, or refused by name
(``srun: error: --multi-prog is not supported yet``, exit 1), and anything
else gets getopt's ``srun: unrecognized option '--bogus'`` plus ``Try "srun
--help" for more information``, exit 255 -- the same path sbatch's option
errors take in 22.05 (golden ``40_sbatch_bad_option``).  Both tables stop at
the first word that is not an option (``srun -n2 hostname -s``: ``-s`` is
hostname's), as real srun's ``+`` getopt string does.

``env`` lists the input variables (spec §6.6, srun(1)/salloc(1) "INPUT
ENVIRONMENT VARIABLES"); later names win over earlier ones
(``SRUN_CPUS_PER_TASK`` over ``SLURM_CPUS_PER_TASK``) and the command line
beats all of them.  Inside an allocation several of srun's variables are also
the allocation's *output* (``SLURM_NTASKS``, ``SLURM_NNODES``...):
``slurmlite.srun_request`` decides which of those still apply to a step.

Reading a row: ``row("kill-on-bad-exit", "K", OPT, env="SLURM_KILL_BAD_EXIT")``
is ``-K[0|1]`` / ``--kill-on-bad-exit[=0|1]`` with an optional value.  The
words between the rows name the rows srun and salloc share with sbatch
(``slurmlite.option_rows``), their variables prefixed ``SLURM_`` for srun and
``SALLOC_`` for salloc; ``status`` is where a command's support differs.
Sources: srun(1) and salloc(1) of Slurm 22.05 (facts only).  Their help
words are in ``cli/help/srun.py`` and ``cli/help/salloc.py``.
"""

from __future__ import annotations

from slurmlite.option_rows import IGN, OPT, REQ, SUP, UNS, command_table, flag_row, row

# ---------------------------------------------------------------------- srun

SRUN = command_table(
    "srun",
    "SLURM_",
    (
        row("accel-bind", "", REQ, IGN),
        "account acctg-freq bb bbf",
        row("bcast", "", OPT, UNS, env="SLURM_BCAST"),
        row("bcast-exclude", "", REQ, UNS),
        "begin",
        row("chdir", "D", REQ, env="SLURM_WORKING_DIR"),
        row("cluster-constraint", "", REQ, UNS),
        "cluster",
        row("clusters", "M", REQ, IGN, env="SLURM_CLUSTERS"),
        "comment",
        row("compress", "", OPT, IGN, env="SLURM_COMPRESS"),
        "constraint",
        row("container", "", REQ, UNS, env="SRUN_CONTAINER"),
        "context contiguous core-spec cores-per-socket",
        row("cpu-bind", "", REQ, IGN, env="SLURM_CPU_BIND"),  # no CPU binding here
        "cpu-freq cpus-per-gpu",
        row("cpus-per-task", "c", REQ, env="SLURM_CPUS_PER_TASK SRUN_CPUS_PER_TASK"),
        "deadline delay-boot",
        row("dependency", "d", REQ, env="SLURM_DEPENDENCY"),  # its own allocation only
        flag_row("disable-status", "X", env="SLURM_DISABLE_STATUS"),
        "distribution",
        row("epilog", "", REQ, UNS, env="SLURM_EPILOG"),
        row("error", "e", REQ, env="SLURM_STDERRMODE"),
        flag_row("exact", "", IGN, env="SLURM_EXACT"),  # steps get what they ask for anyway
        "exclude exclusive",
        row("export", "", REQ, env="SLURM_EXPORT_ENV SRUN_EXPORT_ENV"),
        "extra-node-info gid gpu-bind gpu-freq gpus gpus-per-node",
        row("gpus-per-socket", "", REQ, UNS),
        "gpus-per-task",
        row("gres", "", REQ, env="SLURM_GRES SLURM_STEP_GRES"),
        "gres-flags",
        row("het-group", "", REQ, UNS),
        "help",
        row("hint", "", REQ, UNS, env="SLURM_HINT"),
        "hold immediate",
        row("input", "i", REQ, env="SLURM_STDINMODE"),
        "job-name",
        row("jobid", "", REQ, env="SLURM_JOBID SLURM_JOB_ID"),
        row("kill-on-bad-exit", "K", OPT, env="SLURM_KILL_BAD_EXIT"),
        flag_row("label", "l", env="SLURM_LABELIO"),
        "licenses mail-type mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus",
        row("mpi", "", REQ, env="SLURM_MPI_TYPE"),
        flag_row("multi-prog", "", UNS),
        "network nice",
        flag_row("no-allocate", "Z", UNS),
        "no-kill nodefile nodelist",
        row("nodes", "N", REQ, env="SLURM_JOB_NUM_NODES SLURM_NNODES"),
        row("ntasks", "n", REQ, env="SLURM_NPROCS SLURM_NTASKS"),
        "ntasks-per-core ntasks-per-gpu",
        row("ntasks-per-node", "", REQ, env="SLURM_NTASKS_PER_NODE"),
        "ntasks-per-socket open-mode",
        row("output", "o", REQ, env="SLURM_STDOUTMODE"),
        "overcommit",
        flag_row("overlap", "", env="SLURM_OVERLAP"),
        "oversubscribe partition power prefer",
        flag_row("preserve-env", "E", UNS),
        "priority profile",
        row("prolog", "", REQ, UNS, env="SLURM_PROLOG"),
        "propagate",
        flag_row("pty"),
        "qos quiet",
        flag_row("quit-on-interrupt"),
        "reboot",
        row("relative", "r", REQ, UNS),
        "reservation",
        row("resv-ports", "", OPT, IGN, env="SLURM_RESV_PORTS"),
        row("send-libs", "", OPT, IGN),
        "signal",
        row("slurmd-debug", "", REQ, IGN),
        "sockets-per-node spread-job",
        row("switches", "", REQ, UNS, env="SLURM_REQ_SWITCH"),
        row("task-epilog", "", REQ, UNS, env="SLURM_TASK_EPILOG"),
        row("task-prolog", "", REQ, UNS, env="SLURM_TASK_PROLOG"),
        "tasks-per-node test-only thread-spec",
        row("threads", "T", REQ, IGN, env="SLURM_THREADS"),
        row("threads-per-core", "", REQ, UNS),
        "time time-min tmp uid",
        flag_row("unbuffered", "u", env="SLURM_UNBUFFEREDIO"),
        "usage use-min-nodes",
        flag_row("verbose", "v", repeat="count"),
        "version",
        row("wait", "W", REQ, env="SLURM_WAIT"),
        "wckey x11",
    ),
    status={"begin": SUP, "distribution": SUP, "gpus-per-task": SUP},
    permute=False,
    error_exit=255,
)

# srun options acted on by srun itself (not the step's shape), for -v reports
SRUN_LOCAL = frozenset(
    {"disable_status", "quit_on_interrupt", "pty", "label", "unbuffered", "quiet", "verbose"}
)

# -------------------------------------------------------------------- salloc

SALLOC = command_table(
    "salloc",
    "SALLOC_",
    (
        "account acctg-freq bb bbf begin",
        flag_row("bell", "", IGN, env="SALLOC_BELL"),
        "chdir cluster-constraint cluster clusters comment constraint container context",
        "contiguous core-spec cores-per-socket cpu-freq cpus-per-gpu cpus-per-task deadline",
        "delay-boot dependency",
        row("distribution", "m", REQ, IGN),  # only steps have a task layout
        "exclude exclusive extra-node-info",
        row("get-user-env", "", OPT, UNS),
        "gid gpu-bind gpu-freq gpus gpus-per-node gpus-per-socket gpus-per-task gres gres-flags",
        "help",
        row("hint", "", REQ, UNS, env="SALLOC_HINT SLURM_HINT"),
        "hold immediate job-name",
        row("kill-command", "K", OPT, IGN),
        "licenses mail-type mail-user mcs-label mem mem-bind mem-per-cpu mem-per-gpu mincpus",
        "network nice",
        flag_row("no-bell", "", IGN),
        "no-kill",
        flag_row("no-shell", "", UNS),
        "nodefile nodelist nodes ntasks ntasks-per-core ntasks-per-gpu ntasks-per-node",
        "ntasks-per-socket overcommit oversubscribe partition power prefer priority profile qos",
        "quiet reboot reservation signal sockets-per-node spread-job switches tasks-per-node",
        "test-only thread-spec threads-per-core time time-min tmp uid usage use-min-nodes verbose",
        "version wait-all-nodes wckey x11",
    ),
    # salloc's nodes are up already
    status={"begin": SUP, "dependency": SUP, "wait-all-nodes": IGN},
    permute=False,
    error_exit=255,
)
