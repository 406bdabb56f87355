"""salloc's help words and layout (groups and order of Slurm 22.05's ``salloc --help``)."""

from __future__ import annotations

from cli.help import HelpPage
from cli.help.resources import LAST_GROUPS
from cli.help.resources import WORDS as SHARED
from slurmlite.srun_options import SALLOC

WORDS = {
    "bell": ("", "ring the terminal bell when the allocation is granted"),
    "chdir": ("path", "working directory of the command salloc starts"),
    "get-user-env": ("secs", "load the user's login environment"),
    "hint": ("type", "bind tasks following application hints"),
    "kill-command": ("signal", "signal to send the command when the allocation ends"),
    "no-bell": ("", "never ring the terminal bell"),
    "no-shell": ("", "only allocate; start no command"),
}

SECTIONS = (
    (
        "Parallel run options:",
        "account acctg-freq bb bbf begin bell cpus-per-task comment container context cpu-freq"
        " dependency deadline delay-boot chdir nodefile get-user-env gid gres gres-flags hold"
        " immediate job-name kill-command no-kill licenses clusters distribution"
        " mail-type mail-user mcs-label network ntasks nice no-bell ntasks-per-node nodes no-shell"
        " overcommit partition power priority profile qos quiet reboot oversubscribe core-spec"
        " signal spread-job switches test-only thread-spec time time-min uid use-min-nodes"
        " verbose wait-all-nodes wckey x11",
    ),
    (
        "Constraint options:",
        "cluster-constraint contiguous constraint mem mincpus prefer reservation tmp nodelist"
        " exclude",
    ),
    ("Consumable resources related options:", "exclusive mem-per-cpu"),
    (
        "Affinity/Multi-core options:",
        "sockets-per-node cores-per-socket threads-per-core extra-node-info ntasks-per-core"
        " ntasks-per-socket ntasks-per-gpu hint mem-bind",
    ),
    *LAST_GROUPS,
)

PAGE = HelpPage(
    SALLOC,
    "Usage: salloc [OPTIONS(0)...] [ : [OPTIONS(N)...]] [command(0) [args(0)...]]",
    SECTIONS,
    WORDS,
    shared=SHARED,
    also={"cluster": "clusters"},
    tail="[command [args...]]",
)
