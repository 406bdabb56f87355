"""``python -m bench.metrics_scrape [--jobs N] [--scrapes S] [--submits M]``: /metrics cost.

A throwaway cluster (``bench.common.bench_cluster``, ``MetricsType=metrics/openmetrics``)
is filled with ``--jobs`` held jobs (default 10,000: they stay pending, so
every scrape counts them all), then:

1. ``/metrics/jobs``: ``--scrapes`` GETs (default 200) one after another over
   the controller's Unix socket with a keep-alive client; the median and p90
   of the round trip (the target: 5 ms), and the size of the answer; then a
   quarter as many, each right after a submission (the cost when the queue
   is busy: the changed row is read and the counts follow it); each other
   endpoint once;
2. the submission rate: ``--submits`` held jobs (default 6,000) in one burst
   of 16 connections (``bench.common.submit_many``), first alone, then while
   a thread scrapes every ``/metrics`` endpoint once a second, as a
   Prometheus with five scrape jobs at a 1 s interval would.

Figures are printed, nothing is asserted.  Example line::

    /metrics/jobs with 10,000 pending: median 2.1 ms, p90 2.6 ms (target 5 ms), 3.9 kB
"""

from __future__ import annotations

import argparse
import threading
import time

import httpx

from bench.common import bench_cluster, fmt, median, p90, submit_many
from slurmlite.config import load_config

ENDPOINTS = ("jobs", "nodes", "partitions", "scheduler", "jobs-users-accts")


def _client(conf: str) -> httpx.Client:
    cfg = load_config(conf)
    return httpx.Client(
        transport=httpx.HTTPTransport(uds=cfg.socket_path), base_url="http://slurmctld"
    )


def _time_get(client: httpx.Client, path: str) -> tuple[float, int]:
    began = time.perf_counter()
    got = client.get(path)
    took = (time.perf_counter() - began) * 1000
    got.raise_for_status()
    return took, len(got.content)


def _rate(cl, count: int, scraping: bool) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """Submissions per second of a burst; with ``scraping``, the scrapes made meanwhile."""
    stop = threading.Event()
    scrapes = [0]

    def scrape() -> None:
        with _client(str(cl.conf)) as c:
            while not stop.is_set():
                for name in ENDPOINTS:
                    c.get(f"/metrics/{name}").raise_for_status()
                scrapes[0] += 1
                stop.wait(1.0)

    watcher = threading.Thread(target=scrape, daemon=True)
    if scraping:
        watcher.start()
    try:
        ids, secs = submit_many(cl, cl.request("--wrap", "true", "--hold"), count)
    finally:
        stop.set()
        if scraping:
            watcher.join()
    return len(ids) / secs, scrapes[0]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--scrapes", type=int, default=200)
    ap.add_argument("--submits", type=int, default=6_000)
    args = ap.parse_args(argv)
    conf = ("MetricsType=metrics/openmetrics", f"MaxJobCount={args.jobs + 3 * args.submits}")
    with bench_cluster(extra_conf=conf, gpus_per_node=2) as cl:
        started = time.perf_counter()
        submit_many(cl, cl.request("--wrap", "true", "--hold"), args.jobs)
        print(f"  ({args.jobs:,} held jobs in {time.perf_counter() - started:.1f} s)")
        with _client(str(cl.conf)) as c:
            _time_get(c, "/metrics/jobs")  # the live cache's first load is not a scrape's cost
            times, size = [], 0
            for _ in range(args.scrapes):
                took, size = _time_get(c, "/metrics/jobs")
                times.append(took)
            print(
                f"/metrics/jobs with {args.jobs:,} pending: median {fmt(median(times))} ms, "
                f"p90 {fmt(p90(times))} ms (target 5 ms), {size / 1000:.1f} kB"
            )
            # a job changed since the last scrape: its row is read again, the counts follow
            one = cl.client()
            held = cl.request("--wrap", "true", "--hold")
            changed = []
            for _ in range(args.scrapes // 4):
                one.submit(held)
                changed.append(_time_get(c, "/metrics/jobs")[0])
            one.close()
            print(
                f"  right after each submission: median {fmt(median(changed))} ms, "
                f"p90 {fmt(p90(changed))} ms"
            )
            for name in ENDPOINTS[1:]:
                took, size = _time_get(c, f"/metrics/{name}")
                print(f"  /metrics/{name}: {fmt(took)} ms, {size / 1000:.1f} kB")
        alone, _ = _rate(cl, args.submits, scraping=False)
        scraped, scrapes = _rate(cl, args.submits, scraping=True)
        print(
            f"submissions/s, {args.submits:,} in a burst of 16 connections: {fmt(alone)} alone, "
            f"{fmt(scraped)} while every endpoint is scraped each second "
            f"({scrapes} rounds; {100 * (scraped - alone) / alone:+.1f} %)"
        )


if __name__ == "__main__":
    main()
