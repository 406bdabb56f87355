"""srun's help words and layout (groups and order of Slurm 22.05's ``srun --help``)."""

from __future__ import annotations

from cli.help import HelpPage
from cli.help.resources import LAST_GROUPS
from cli.help.resources import WORDS as SHARED
from slurmlite.srun_options import SRUN

WORDS = {
    "accel-bind": ("type", "bind tasks to accelerators near them"),
    "bcast": ("dest_path", "copy the executable to the nodes first"),
    "bcast-exclude": ("paths", "libraries --send-libs leaves out"),
    "chdir": ("path", "working directory of the tasks"),
    "compress": ("library", "compress the --bcast data"),
    "cpu-bind": ("type", "bind tasks to CPUs"),
    "disable-status": ("", "Ctrl-C once ends the step instead of printing its status"),
    "epilog": ("program", "run this program after the step"),
    "error": ("err", "where the tasks' standard error goes"),
    "exact": ("", "give the step exactly the CPUs it asks for"),
    "export": ("names", "variables passed to the tasks: ALL, NONE or a list"),
    "het-group": ("value", "heterogeneous job components to run in"),
    "hint": ("type", "bind tasks following application hints"),
    "input": ("in", "where the tasks' standard input comes from"),
    "jobid": ("id", "run the step inside this existing job"),
    "kill-on-bad-exit": ("0|1", "end the step when one task fails"),
    "label": ("", "prefix each output line with its task number"),
    "mpi": ("type", "MPI plugin (none, pmi2, pmix)"),
    "multi-prog": ("", "run a different program on each task (a config file)"),
    "no-allocate": ("", "run without an allocation (root only)"),
    "output": ("out", "where the tasks' standard output goes"),
    "overlap": ("", "let the step share resources with other steps"),
    "preserve-env": ("", "keep SLURM_NNODES and SLURM_NTASKS as they are"),
    "prolog": ("program", "run this program before the step"),
    "pty": ("", "run task 0 in a pseudo-terminal"),
    "quit-on-interrupt": ("", "Ctrl-C ends the step at once"),
    "relative": ("n", "start the step on this node of the allocation"),
    "resv-ports": ("count", "reserve communication ports for the step"),
    "send-libs": ("yes|no", "with --bcast, also copy the shared libraries"),
    "slurmd-debug": ("level", "debug level of the node daemon for this step"),
    "task-epilog": ("program", "run this program after each task"),
    "task-prolog": ("program", "run this program before each task"),
    "threads": ("threads", "threads srun uses to start the tasks"),
    "unbuffered": ("", "pass the tasks' output on unbuffered"),
    "wait": ("sec", "seconds to wait for the other tasks after the first ends"),
}

SECTIONS = (
    (
        "Parallel run options:",
        "account acctg-freq bb bbf bcast bcast-exclude begin cpus-per-task comment compress"
        " container context cpu-freq dependency deadline delay-boot chdir error exact epilog"
        " export disable-status nodefile het-group gid gres gres-flags hold immediate input"
        " job-name jobid kill-on-bad-exit label licenses clusters distribution"
        " mail-type mail-user mcs-label mpi multi-prog network ntasks nice ntasks-per-node nodes"
        " no-allocate no-kill open-mode output overcommit overlap partition power priority"
        " profile prolog propagate pty quit-on-interrupt qos quiet reboot relative"
        " resv-ports send-libs oversubscribe core-spec signal slurmd-debug spread-job switches"
        " threads time task-epilog task-prolog test-only thread-spec time-min uid"
        " unbuffered use-min-nodes verbose wait wckey x11",
    ),
    (
        "Constraint options:",
        "cluster-constraint contiguous constraint mem mincpus prefer reservation tmp nodelist"
        " exclude",
    ),
    ("Consumable resources related options:", "exclusive mem-per-cpu preserve-env"),
    (
        "Affinity/Multi-core options:",
        "sockets-per-node cores-per-socket threads-per-core extra-node-info ntasks-per-core"
        " ntasks-per-socket ntasks-per-gpu accel-bind cpu-bind hint mem-bind",
    ),
    *LAST_GROUPS,
)

PAGE = HelpPage(
    SRUN,
    "Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]]"
    " executable(0) [args(0)...]",
    SECTIONS,
    WORDS,
    shared=SHARED,
    also={"cluster": "clusters"},
    tail="executable [args...]",
)
