"""dep_chain: a chain of ``afterok`` jobs, the time from one link's end to the next's.

``python -m bench.dep_chain --links N`` (default 1,000; ``bench.run``'s quick
mode uses 20) submits ``true`` jobs on the 2-node bench cluster, each one
``--dependency=afterok:`` the one before, all at once, and clocks from the
burst until the last one is COMPLETED.  Every link waits for the scheduler
pass after its target ended (``controller.sched.deps``), so the figure is
seconds per link: total / links.  Every job must end COMPLETED, or the
figure is refused.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable

from bench.common import Figure, bench_cluster, wait_for


def chain(links: int, log: Callable[[str], None] = print) -> Figure:
    with bench_cluster(log=log) as cl:
        base = cl.request("--wrap", "true")
        client = cl.client()
        try:
            started = time.perf_counter()
            ids = [client.submit(base).job_id]
            for _ in range(links - 1):
                req = dataclasses.replace(base, dependency=f"afterok:{ids[-1]}")
                ids.append(client.submit(req).job_id)

            def done() -> bool:
                jobs = client.get_jobs(job_ids=[ids[-1]], all_states=True)
                return bool(jobs) and jobs[0].state == "COMPLETED"

            wait_for(done, 30 + links * 5, f"{links} chained jobs to finish", every=0.05)
            elapsed = time.perf_counter() - started
            wanted = set(ids)
            states = {j.state for j in client.get_accounting() if j.job_id in wanted}
        finally:
            client.close()
    if states != {"COMPLETED"}:
        raise RuntimeError(f"not every link completed: {states}")
    return Figure(
        key="dep-chain",
        label=f"afterok chain of {links:,} true jobs",
        value=elapsed / links * 1000,
        unit="ms/link",
        how="each job afterok on the one before, all submitted at once; clock until the last ends",
        reference="none quoted",
        detail=f"{elapsed:.1f} s in all",
    )


def dep_chain(quick: bool, log: Callable[[str], None]) -> list[Figure]:
    return [chain(20 if quick else 1000, log)]


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m bench.dep_chain")
    p.add_argument("--links", type=int, default=1000)
    figure = chain(max(1, p.parse_args().links))
    print(f"{figure.label}: {figure.value:.0f} {figure.unit} ({figure.detail})")


if __name__ == "__main__":
    main()
