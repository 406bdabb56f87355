"""sbatch's help words and layout (groups and order of Slurm 22.05's ``sbatch --help``)."""

from __future__ import annotations

from cli.help import HelpPage
from cli.help.resources import LAST_GROUPS
from cli.help.resources import WORDS as SHARED
from slurmlite.options import SBATCH

WORDS = {
    "array": ("indexes", "a job array: 0-15, 1,3,5 or 0-15%4 (at most 4 at once)"),
    "batch": ("list", "node features the batch step needs"),
    "error": ("err", "file for the script's standard error (%j, %x, %A, %a...)"),
    "export": ("names", "variables passed to the job: ALL, NONE or a list"),
    "export-file": ("file|fd", "file of variables passed to the job"),
    "get-user-env": ("secs", "load the user's login environment"),
    "hint": ("type", "bind tasks following application hints"),
    "ignore-pbs": ("", "ignore #PBS and #BSUB lines in the script"),
    "input": ("in", "file for the script's standard input"),
    "kill-on-invalid-dep": ("yes|no", "cancel the job if a dependency can never be met"),
    "no-requeue": ("", "never requeue the job"),
    "ntasks-per-tres": ("n", "tasks for each generic resource"),
    "output": ("out", "file for the script's standard output (%j, %x, %A, %a...)"),
    "parsable": ("", "print only the job id (and ;cluster)"),
    "requeue": ("", "allow the job to be requeued"),
    "wait": ("", "wait for the job to end; exit with its exit code"),
    "wrap": ("command", "submit this command line wrapped in a sh script"),
}

SECTIONS = (
    (
        "Parallel run options:",
        "array account acctg-freq batch bb bbf begin comment container context cpu-freq"
        " cpus-per-task dependency deadline delay-boot chdir error export export-file get-user-env"
        " gid gres gres-flags hold ignore-pbs input job-name kill-on-invalid-dep no-kill"
        " licenses clusters distribution mail-type mail-user mcs-label network ntasks"
        " nice no-requeue ntasks-per-node nodes open-mode output overcommit partition parsable"
        " power priority profile propagate qos quiet reboot requeue oversubscribe core-spec"
        " signal spread-job switches test-only thread-spec time time-min uid use-min-nodes"
        " verbose wait wait-all-nodes wckey wrap",
    ),
    (
        "Constraint options:",
        "cluster-constraint contiguous constraint nodefile mem mincpus prefer reservation tmp"
        " nodelist exclude",
    ),
    ("Consumable resources related options:", "exclusive mem-per-cpu"),
    (
        "Affinity/Multi-core options:",
        "sockets-per-node cores-per-socket threads-per-core extra-node-info ntasks-per-core"
        " ntasks-per-socket ntasks-per-gpu ntasks-per-tres hint mem-bind",
    ),
    *LAST_GROUPS,
)

PAGE = HelpPage(
    SBATCH,
    "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]",
    SECTIONS,
    WORDS,
    shared=SHARED,
    also={"cluster": "clusters"},
    tail="[script [args...]]",
)
