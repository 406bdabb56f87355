"""seff's help words: Perl seff's three letters and slurmlite's long options."""

from __future__ import annotations

from cli.help import HelpPage
from cli.seff import SEFF

WORDS = {
    "d": ("", "debug mode: print the raw accounting figures too"),
    "h": ("", "print the short usage and exit 1 (as seff does)"),
    "v": ("", "print the version and exit 1 (as seff does)"),
    "help": ("", "show this help and exit"),
    "usage": ("", "show a short usage summary and exit"),
    "version": ("", "print the version and exit"),
}

SECTIONS = (("Options:", "h v d help usage version"),)

EXPLAINED = """\
Prints the CPU, memory and GPU efficiency of a job from its accounting
record: CPU time over cores x wall-clock time, memory peak over memory held,
and per GPU the mean and peak utilization and the memory peak, sampled by
the node agents every JobAcctGatherFrequency seconds.

GPU utilization is NVML's: the share of time a kernel was running on the
GPU, not how much of the GPU the kernels used.  100 % can still leave most
of its cores idle; a low figure does mean the GPU sat waiting.

Examples:
  seff 42          one job
  seff 57_3        one task of array 57"""

PAGE = HelpPage(
    SEFF,
    "Usage: seff [Options] <Jobid>",
    SECTIONS,
    WORDS,
    own="help usage version",
    tail="<Jobid>",
    trailer=EXPLAINED,
)
