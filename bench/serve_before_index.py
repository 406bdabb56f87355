"""``python -m bench.serve_before_index CONF``: slurmctld -D without migrations (``bench.store_growth``).

Measures a store left at the revision before 0010 (the history index): the
controller's own code with ``Database`` told not to upgrade.  A module of
its own, importing nothing else of the benchmarks, so its start-up is the
controller's.
"""

from __future__ import annotations

import sys

import controller.store.db as db

db.upgrade = lambda engine: None  # type: ignore[assignment]

if __name__ == "__main__":
    from controller.main import main

    main(["-D", "-f", sys.argv[1]])
