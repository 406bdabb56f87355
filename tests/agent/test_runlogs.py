"""The agent's run logs: folders per job, chunks on whole characters, owners checked, pruning."""

from __future__ import annotations

import os
import time

from agent.runlogs import RunLogs


def test_chunks_end_on_whole_characters_and_read_back_whole(tmp_path):
    logs = RunLogs(tmp_path)
    folder = logs.prepare(7, os.getuid(), os.getgid())
    text = "naïve café — ünïcode\n" * 3
    with open(f"{folder}/attempt0.log", "w") as f:
        f.write(text)
    got, offset = "", 0
    while True:
        chunk = logs.read(7, 0, os.getuid(), offset, 5)  # 5 bytes: cuts inside characters
        if not chunk["data"]:
            break
        got, offset = got + chunk["data"], chunk["next"]
    assert got == text and offset == len(text.encode())


def test_only_a_regular_file_of_the_run_s_user_is_read(tmp_path):
    logs = RunLogs(tmp_path)
    folder = logs.prepare(8, os.getuid(), os.getgid())
    (tmp_path / "secret").write_text("not yours")
    os.symlink(tmp_path / "secret", f"{folder}/attempt0.log")
    assert logs.read(8, 0, os.getuid(), 0, 100) == {
        "found": False,
        "data": "",
        "next": 0,
        "size": 0,
    }
    os.unlink(f"{folder}/attempt0.log")
    with open(f"{folder}/attempt0.log", "w") as f:
        f.write("mine")
    assert logs.read(8, 0, os.getuid() + 1, 0, 100)["found"] is False  # another owner
    assert logs.read(8, 0, os.getuid(), 0, 100)["data"] == "mine"
    assert logs.read(8, 1, os.getuid(), 0, 100)["found"] is False  # no such attempt


def test_folders_not_written_for_the_keep_time_are_pruned(tmp_path):
    logs = RunLogs(tmp_path)
    old, new = logs.prepare(1, os.getuid(), os.getgid()), logs.prepare(2, os.getuid(), os.getgid())
    for folder in (old, new):
        with open(f"{folder}/attempt0.log", "w") as f:
            f.write("x")
    past = time.time() - 3600
    os.utime(old, (past, past))
    os.utime(f"{old}/attempt0.log", (past, past))
    assert logs.prune(keep=600) == 1
    assert not os.path.exists(old) and os.path.exists(new)
