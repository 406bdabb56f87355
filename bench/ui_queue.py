"""``python -m bench.ui_queue [--jobs N] [--requests R] [--waiting]``: the dashboard's pages.

A throwaway cluster (``bench.common.bench_cluster``, two nodes with two fake
GPUs each) is filled with ``--jobs`` pending jobs (default 10,000) through
the service, as ``sbatch`` sends them (``bench.common.submit_many``): held
jobs by default, so the queue stays put while it is measured; with
``--waiting``, one job holds every GPU and the others ask for a GPU each
and wait (Resources, Priority) while the scheduler's passes run beside
the page requests.  Then, through the real app -- httpx against slurmctld's
uvicorn on loopback (its TCP port), logged in with a ``slurmlite ui`` link
like a browser -- ``--requests`` GETs (default 50) one after another, each
timed from request to the last byte:

1. ``/ui/queue``: the first page (200 rows; the target: 100 ms with 10,000
   pending jobs, issue 16), then its last page;
2. ``/ui/queue`` right after a submission (the live cache re-reads one row);
3. ``/ui/`` (the overview: GPU grid, pending jobs counted by reason);
4. ``/ui/jobs/N/explain`` for the highest-priority pending job, a few times:
   what opening one row's *Why is job N pending?* costs (a scheduling pass
   over the whole queue; the queue page no longer pays it);
5. the submission rate of a burst of ``--submits`` held jobs (default 8,000)
   alone, then while a browser reloads the queue and the overview every
   second (what a dashboard left open costs the controller).

Figures are printed, nothing is asserted.  Example line::

    /ui/queue (page 1 of 50) with 10,000 pending: median 21.9 ms, p90 27.4 ms (target 100 ms), 178 kB
"""

from __future__ import annotations

import argparse
import re
import threading
import time

import httpx

from bench.common import bench_cluster, fmt, median, p90, submit_many

TARGET_MS = 100.0


def _login(cl) -> httpx.Client:  # type: ignore[no-untyped-def]
    """A keep-alive client carrying a dashboard session, as a browser after the link."""
    link = cl.client().request("POST", "/v1/ui/link")["url"]
    base = link.split("/ui/", 1)[0]
    browser = httpx.Client(base_url=base, timeout=60)
    got = browser.get(link[len(base) :], follow_redirects=False)
    if got.status_code != 303:
        raise RuntimeError(f"login refused: {got.status_code} {got.text[:200]}")
    return browser


def _times(browser: httpx.Client, path: str, count: int, before=None) -> tuple[list[float], str]:  # type: ignore[no-untyped-def]
    """``count`` timed GETs of ``path`` (ms each; ``before`` runs untimed before each) and
    the last answer's text."""
    times, text = [], ""
    for _ in range(count):
        if before is not None:
            before()
        began = time.perf_counter()
        got = browser.get(path)
        times.append((time.perf_counter() - began) * 1000)
        got.raise_for_status()
        text = got.text
    return times, text


def _line(label: str, times: list[float], text: str, target: bool = False) -> None:
    goal = f" (target {fmt(TARGET_MS)} ms)" if target else ""
    print(
        f"{label}: median {fmt(median(times))} ms, p90 {fmt(p90(times))} ms{goal}, "
        f"{len(text.encode()) / 1000:.0f} kB"
    )


def _rate(cl, job, count: int, browser: httpx.Client | None) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """Submissions per second of a burst; with ``browser``, the page rounds made meanwhile
    (the queue and the overview, once a second)."""
    stop, rounds = threading.Event(), [0]

    def watch() -> None:
        while not stop.is_set():
            for path in ("/ui/queue", "/ui/"):
                browser.get(path).raise_for_status()  # type: ignore[union-attr]
            rounds[0] += 1
            stop.wait(1.0)

    watcher = threading.Thread(target=watch, daemon=True)
    if browser is not None:
        watcher.start()
    try:
        ids, secs = submit_many(cl, job, count)
    finally:
        stop.set()
        if browser is not None:
            watcher.join()
    return len(ids) / secs, rounds[0]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=50)
    ap.add_argument("--waiting", action="store_true", help="jobs wait for GPUs, not held")
    ap.add_argument("--submits", type=int, default=8_000, help="burst for the rate figure")
    args = ap.parse_args(argv)
    conf = (f"MaxJobCount={args.jobs + args.requests + 2 * args.submits + 100}",)
    with bench_cluster(extra_conf=conf, gpus_per_node=2) as cl:
        if args.waiting:  # every GPU held for a day: the others wait
            cl.client().submit(cl.request("--wrap", "sleep 86400", "-N2", "--gpus-per-node=2"))
            job = cl.request("--wrap", "true", "--gpus=1", "--time=30")
        else:
            job = cl.request("--wrap", "true", "--hold")
        started = time.perf_counter()
        submit_many(cl, job, args.jobs)
        kind = "waiting" if args.waiting else "held"
        print(f"  ({args.jobs:,} {kind} jobs in {time.perf_counter() - started:.1f} s)")
        browser = _login(cl)
        print("  (httpx over loopback TCP to slurmctld's uvicorn, one keep-alive connection)")
        try:
            browser.get("/ui/queue")  # the live cache's first load is not a page's cost
            n = args.requests
            times, text = _times(browser, "/ui/queue", n)
            pages = re.search(r'data-pages="(\d+)"', text)
            last = int(pages.group(1)) if pages else 1
            _line(f"/ui/queue (page 1 of {last}) with {args.jobs:,} pending", times, text, True)
            times, text = _times(browser, f"/ui/queue?page={last}", n)
            _line(f"  its last page (?page={last})", times, text, True)
            one = cl.client()
            times, text = _times(browser, "/ui/queue", max(1, n // 4), lambda: one.submit(job))
            one.close()
            _line("  right after a submission each time", times, text, True)
            times, text = _times(browser, "/ui/", n)
            _line("/ui/ (overview)", times, text)
            queue = browser.get("/ui/queue").text
            first = re.search(r'<tr data-job-id="(\d+)" data-state="PENDING"', queue)
            if first:
                times, text = _times(browser, f"/ui/jobs/{first.group(1)}/explain", 5)
                _line(f"/ui/jobs/{first.group(1)}/explain (one row opened)", times, text)
            held = cl.request("--wrap", "true", "--hold")
            alone, _ = _rate(cl, held, args.submits, None)
            watched, rounds = _rate(cl, held, args.submits, browser)
            print(
                f"submissions ({args.submits:,} in a burst): {fmt(alone)}/s alone, "
                f"{fmt(watched)}/s while the queue and overview reload every second "
                f"({rounds} rounds; {100 * (watched - alone) / alone:+.1f} %)"
            )
        finally:
            browser.close()


if __name__ == "__main__":
    main()
