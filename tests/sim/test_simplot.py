"""``simplot.write_plot``: the figure files a user gets from ``slurmlite simulate --plot``.

A hand-built replay on an 8-CPU machine (four jobs, one of them split over two
CPU ranges), drawn as PNG and SVG; matplotlib missing; bad file names; and the
series downsampling that keeps big traces fast without hiding peaks.
"""

from __future__ import annotations

import sys

import pytest

from slurmlite.scheduler.replayed import JobRecord
from slurmlite.simplot import (
    MAX_STEPS,
    PlotRun,
    PlotUnavailable,
    downsample,
    gantt_boxes,
    write_plot,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

JOBS = (
    JobRecord(1, 0.0, 0.0, 3600.0, 4, 3600.0, user=1, resources=((0, 3),)),
    JobRecord(2, 60.0, 60.0, 1800.0, 2, 3600.0, user=2, resources=((4, 5),)),
    JobRecord(3, 120.0, 1800.0, 5400.0, 4, 7200.0, user=1, resources=((4, 5), (6, 7))),
    JobRecord(4, 200.0, 3600.0, 7200.0, 8, 7200.0, user=3, resources=((0, 7),)),
)
SERIES = (
    (0.0, 0, 4),
    (60.0, 0, 6),
    (120.0, 1, 6),
    (200.0, 2, 6),
    (1800.0, 1, 8),
    (3600.0, 0, 8),
    (7200.0, 0, 0),
)


def run(name: str) -> PlotRun:
    return PlotRun(name, JOBS, SERIES, [job.bounded_slowdown() for job in JOBS])


def test_png_is_a_real_image_of_a_readable_size(tmp_path):
    path = tmp_path / "replay.png"
    write_plot(str(path), [run("fcfs"), run("easy")], procs=8, title="four jobs")
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert 20_000 < len(data) < 2_000_000
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert width >= 800 and height >= 800  # large enough to read four panels


def test_svg_names_every_run_in_its_legends(tmp_path):
    path = tmp_path / "Replay.SVG"  # the suffix is read case-insensitively
    write_plot(
        str(path),
        [run("fcfs"), run("easy"), run("conservative")],
        procs=8,
        window=(0.0, 3600.0),
        title="policies compared",
    )
    text = path.read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    for label in ("fcfs", "easy", "conservative", "policies compared", "bounded slowdown"):
        assert label in text


def test_gantt_clips_jobs_to_the_window_and_splits_ranges():
    # window 1800..3600: job 2 ends at its start, job 4 starts at its end: neither shows
    boxes = gantt_boxes(JOBS, (1800.0, 3600.0))
    assert boxes == [
        (1, 0.0, 0.5, 0, 4),  # started before the window: clipped to 0 h
        (3, 0.0, 0.5, 4, 6),  # one rectangle per CPU range
        (3, 0.0, 0.5, 6, 8),
    ]


def test_empty_window_and_no_records_still_draw(tmp_path):
    path = tmp_path / "empty.png"
    write_plot(str(path), [PlotRun("idle", [], [], [])], procs=8, window=(9e5, 9.1e5))
    assert path.read_bytes().startswith(PNG_SIGNATURE)


def test_without_matplotlib_the_error_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    with pytest.raises(PlotUnavailable, match=r"pip install 'slurmlite\[plot\]'") as info:
        write_plot(str(tmp_path / "x.png"), [run("fcfs")], procs=8)
    assert str(info.value) == "--plot needs matplotlib: pip install 'slurmlite[plot]'"
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize("name", ["replay.pdf", "replay", "replay.png.txt"])
def test_other_suffixes_are_refused_before_drawing(tmp_path, name):
    with pytest.raises(ValueError, match=r"must end in \.png or \.svg"):
        write_plot(str(tmp_path / name), [run("fcfs")], procs=8)
    assert list(tmp_path.iterdir()) == []


def test_bad_arguments_are_refused(tmp_path):
    png = str(tmp_path / "x.png")
    with pytest.raises(ValueError, match="no runs"):
        write_plot(png, [], procs=8)
    with pytest.raises(ValueError, match="procs"):
        write_plot(png, [run("fcfs")], procs=0)
    with pytest.raises(ValueError, match="empty plot window"):
        write_plot(png, [run("fcfs")], procs=8, window=(10.0, 10.0))


def test_downsample_leaves_short_series_alone():
    assert downsample(SERIES) == list(SERIES)


def test_downsample_of_a_long_series_keeps_peaks_and_the_ends():
    series = [(float(t), t % 97, (t * 31) % 1000) for t in range(100_000)]
    series[54_321] = (54_321.0, 10_000, 5_000)  # one short spike
    steps = downsample(series)
    assert len(steps) <= MAX_STEPS + 1
    assert [t for t, _, _ in steps] == sorted(t for t, _, _ in steps)
    assert steps[0][0] == 0.0 and steps[-1] == series[-1]
    assert max(s[1] for s in steps) == 10_000 and max(s[2] for s in steps) == 5_000
    # an upper envelope: each step is at least the value in effect when it starts
    for t, waiting, busy in steps[:-1]:
        assert waiting >= series[int(t)][1] and busy >= series[int(t)][2]
