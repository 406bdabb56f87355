"""slurmctld: the controller, in packages named for what they hold.

Read it in this order; each package's ``__init__`` maps its own files.

``store/``       the job store: tables, sessions, migrations, and the queries
                 (listings, the live-job cache, row <-> wire conversion).
``auth/``        who is asking: Unix-socket peer credentials, node-signed
                 requests, munge credentials and JSON Web Tokens.
``nodes/``       node agents: registration, heartbeats, liveness, reconciling
                 what a node runs, and the client that sends them signed orders.
``accounting/``  accounts, users, QOS and their limits; fair-share usage;
                 multifactor priorities as the store keeps them.
``steps/``       job steps and allocations (srun, salloc): placement inside an
                 allocation, step ends.
``sched/``       the loop: snapshot -> ``schedule_pass`` -> apply -> dispatch;
                 ``sbatch --test-only``'s will-run test.
``jobs/``        submissions (validation, group commit), job verbs, cancel and
                 completion.
``api/``         thin FastAPI routes, their schemas and dependencies.

``context.py`` wires the services once (``Controller``); ``main.py`` is the
``slurmctld`` command.  Packages import downwards only, in the order above
(api -> services -> store, never back); ``tests/unit/test_package_graph.py``
pins it.  The policy itself lives in ``slurmlite.scheduler`` and is pure.
"""
