"""The SystemComment sentences (slurmlite.failures) and the agent's reading of a failed start."""

from __future__ import annotations

from pathlib import Path

from agent.launch_causes import open_cause
from agent.wrapper import FAIL_MARK, PID_MARK
from slurmlite import failures


def test_the_sentences_name_the_node_the_limit_and_what_was_used():
    assert failures.prolog_failed("/etc/p.sh", "n2", "exit status 3") == (
        "prolog /etc/p.sh failed on n2 with exit 3"
    )
    assert failures.prolog_failed("/etc/p.sh", "n2", "timed out after 20 s") == (
        "prolog /etc/p.sh failed on n2: timed out after 20 s"
    )
    asked = failures.memory_asked(2048, None, 1)
    assert failures.out_of_memory("n1", 2048 << 20, asked) == "out of memory on n1: used 2048M of --mem=2G"  # fmt: skip
    assert failures.memory_asked(None, 500, 4) == "--mem-per-cpu=500M x 4 CPUs"
    assert failures.time_limit(1, 61.7) == "time limit 00:01:00 reached after 00:01:01 of run time"
    assert failures.with_outcome("node n2 stopped", requeued=False) == "node n2 stopped; job failed"


def test_a_launch_sentence_is_read_back_with_a_path_containing_colons():
    text = failures.launch_failed(
        "n1", failures.cannot_open("output", "/a: b/slurm-7.out", "Permission denied")
    )
    assert (
        text
        == "launch failed on n1: cannot open --output file /a: b/slurm-7.out: Permission denied"
    )
    read = failures.read_open_failure(text)
    assert read == failures.OpenFailure("n1", "--output", "/a: b/slurm-7.out", "Permission denied")
    assert failures.read_open_failure("out of memory on n1: over --mem=1G") is None


def test_the_shells_vague_words_become_the_errno_text(tmp_path: Path):
    (tmp_path / "afile").write_text("")

    def report(path: Path, shell: str) -> list[str]:
        return [f"{PID_MARK}42", f"sh: 1: cannot create {path}: {shell}", f"{FAIL_MARK}cannot open output file {path}"]  # fmt: skip

    missing = tmp_path / "nosuchdir" / "out.txt"
    assert open_cause(report(missing, "Directory nonexistent")) == (
        f"cannot open --output file {missing}: No such file or directory"
    )
    through = tmp_path / "afile" / "out.txt"
    assert open_cause(report(through, "Directory nonexistent")).endswith(": Not a directory")
    assert open_cause(report(missing, "Permission denied")).endswith(": Permission denied")
    assert open_cause([f"{PID_MARK}42"]) is None
