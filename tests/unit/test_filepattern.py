"""Output file-name patterns (spec §6.3, golden 20_output_*.txt)."""

from __future__ import annotations

import pytest

from slurmlite.filepattern import NO_VAL, default_output, expand_pattern, resolve_output


def batch(pattern: str, **kw: object) -> str:
    """Expand for a batch step of job 37 (user alice, node n1) unless told otherwise."""
    args: dict = dict(job_id=37, job_name="patname", user="alice", node="n1")
    args.update(kw)
    return expand_pattern(pattern, **args)


def test_golden_pattern_j_x_N_u_t_J_percent() -> None:
    # golden 20_output_pattern_jxNutJ.txt: pat-37-patname-vm-alice-0-37-%.out, where the
    # anchor's %N shows the machine hostname "vm"; slurmlite uses the node name.
    pattern = "pat-%j-%x-%N-%u-%t-%J-%%.out"
    assert batch(pattern, node="vm") == "pat-37-patname-vm-alice-0-37-%.out"
    assert batch(pattern) == "pat-37-patname-n1-alice-0-37-%.out"


def test_golden_array_pattern_uses_master_id_index_and_own_id() -> None:
    # golden 20_output_pattern_array.txt: array 38, task 0 ran as job 39, task 1 as 38.
    pattern = "arr-%A_%a-%j.out"
    assert batch(pattern, job_id=39, array_job_id=38, array_task_id=0) == "arr-38_0-39.out"
    assert batch(pattern, job_id=38, array_job_id=38, array_task_id=1) == "arr-38_1-38.out"


def test_default_names() -> None:
    # golden 20_output_default_name.txt -> slurm-36.out; 20_output_array_default.txt ->
    # slurm-40_3.out (array 40, index 3; the task's own id does not appear).
    assert default_output(array=False) == "slurm-%j.out"
    assert default_output(array=True) == "slurm-%A_%a.out"
    assert batch(default_output(False), job_id=36) == "slurm-36.out"
    got = batch(default_output(True), job_id=41, array_job_id=40, array_task_id=3)
    assert got == "slurm-40_3.out"


def test_non_array_job_a_is_no_val_and_A_is_job_id() -> None:
    assert NO_VAL == 4294967294
    assert batch("%A-%a") == "37-4294967294"
    # %b = index mod 10: 4294967294 % 10 = 4 for a non-array job, 13 % 10 = 3 for index 13
    assert batch("%b") == "4"
    assert batch("%b", array_job_id=30, array_task_id=13) == "3"


@pytest.mark.parametrize(
    ("pattern", "kw", "expected"),
    [
        ("job%4j.out", {"job_id": 128}, "job0128.out"),  # spec §6.3 example
        ("job%2j-%2t.out", {"job_id": 128, "task": 0}, "job128-00.out"),  # width 2 < 3 digits
        ("job%2j-%2t.out", {"job_id": 128, "task": 1}, "job128-01.out"),
        ("job%J.out", {"job_id": 128, "step": "0"}, "job128.0.out"),  # step: id.step
        ("job%J.out", {"job_id": 128}, "job128.out"),  # batch: just the id
        ("%12j", {"job_id": 5}, "0000000005"),  # widths above 9 count as 10
        ("%s", {}, "batch"),
        ("%3s", {"step": "2"}, "002"),
        ("%n-%r", {"node_index": 1, "restarts": 2}, "1-2"),
        ("%5x|%5u|%5N", {}, "patname|alice|n1"),  # width ignored for text
    ],
)
def test_tokens_and_padding(pattern: str, kw: dict, expected: str) -> None:
    assert batch(pattern, **kw) == expected


def test_unknown_tokens_and_trailing_percent_stay_literal() -> None:
    assert batch("a%qb") == "a%qb"
    assert batch("a%3qb") == "a%3qb"
    assert batch("end%") == "end%"
    assert batch("end%4") == "end%4"


def test_backslash_disables_all_expansion() -> None:
    assert batch("job\\%j-%x.out") == "job%j-%x.out"


def test_resolve_output_relative_to_work_dir() -> None:
    # golden 20_output_chdir_relative.txt: --chdir=sub --output=o-%j.txt lands in sub/
    assert resolve_output("o-%j.txt", "/home/alice/work/sub") == "/home/alice/work/sub/o-%j.txt"
    assert resolve_output("/var/log/x-%j.out", "/home/alice") == "/var/log/x-%j.out"
