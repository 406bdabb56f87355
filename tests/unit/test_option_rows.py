"""The rows sbatch, srun and salloc share: stated once, prefixed per command.

``slurmlite.option_rows.resource_rows(prefix)`` gives each shared row with its
input variables named for one command; ``command_table`` lays a table out from
those names and the command's own rows, and refuses a name it does not know
(a typo would otherwise drop a real option from a command without a word).
"""

from __future__ import annotations

import pytest

from slurmlite.option_rows import IGN, SUP, UNS, command_table, resource_rows, row
from slurmlite.options import SBATCH
from slurmlite.srun_options import SALLOC, SRUN


def test_a_shared_row_differs_only_in_its_prefix():
    assert SBATCH.spec("account").env == ("SBATCH_ACCOUNT",)
    assert SRUN.spec("account").env == ("SLURM_ACCOUNT",)
    assert SALLOC.spec("account").env == ("SALLOC_ACCOUNT",)
    # a variable with a fixed name keeps it: SBATCH_CLUSTERS, then SLURM_CLUSTERS
    assert resource_rows("SBATCH_")["clusters"].env == ("SBATCH_CLUSTERS", "SLURM_CLUSTERS")


def test_each_command_keeps_its_own_support_of_a_shared_row():
    # --hold and --signal work in sbatch; srun and salloc refuse them
    assert SBATCH.spec("hold").status == SUP and SBATCH.spec("signal").status == SUP
    assert SRUN.spec("hold").status == UNS and SALLOC.spec("signal").status == UNS
    assert SALLOC.spec("wait_all_nodes").status == IGN
    assert SBATCH.spec("wait_all_nodes").status == UNS


def test_layout_keeps_the_commands_own_order():
    table = command_table("x", "X_", ["time account", row("own"), "qos"])
    assert [s.name for s in table.specs] == ["--time", "--account", "--own", "--qos"]
    assert table.spec("time").env == ("X_TIMELIMIT",)


def test_an_unknown_row_name_is_refused():
    with pytest.raises(ValueError, match="no shared option row 'acount'"):
        command_table("x", "X_", ["acount"])


def test_support_for_a_row_not_laid_out_is_refused():
    with pytest.raises(ValueError, match=r"\['hold'\]"):
        command_table("x", "X_", ["account"], status={"hold": SUP})
