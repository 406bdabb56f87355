"""The scheduling policy, pure: a snapshot in, a plan out.

Nothing here reads the clock, touches the store or imports a framework
(``tests/unit/test_import_rules.py``): the same functions run in slurmctld,
in the unit and property tests, and in the simulator.  In reading order:

``snapshot.py``      what the scheduler sees (nodes, partitions, pending and
                     running jobs, the policy) and what it answers (``Plan``).
``shortfall.py``     what a node lacks for a job: the fit rules' named "no".
``select.py``        node selection inside a partition; the one best-fit key.
``feasibility.py``   never, not now, or now: the three answers for a job.
``limits.py``        QOS limits: who must wait because their user holds enough.
``passes.py``        the main pass: one walk down the queue (``schedule_pass``).
``timeline.py``      backfill's map of the future, per node and resource.
``backfill.py``      reservations for the queue's head, lower jobs started early.
``priority.py``      a job's priority at submit (basic and multifactor).
``multifactor.py``   the multifactor factors, their weighted sum, the breakdown.
``billing.py``       TRES billing weights: what a job costs.
``usage.py``         fair-share usage over time: decay and resets.
``fairshare.py``     classic fair-share factors; ``fairtree.py`` Fair Tree's ranking.
``explain.py``       why a job is pending, from the plan (``explain_nodes.py``
                     per node, ``explain_suggest.py`` changes verified by a pass).
``registry.py``      SchedulerType / PriorityType names -> functions: the only
                     place plugin names are known.
``orders.py``        queue orders as priority plugins (sjf, ljf, smallest, largest).
``simloop.py``       a discrete-event loop over the pass, for the property tests.
``swf.py``           workload traces (SWF) read as a stream, jobs converted.
``replay.py``        a trace through the pass with the classic event rules
                     (``slurmlite simulate``); ``replay_setup.py`` names its
                     policies, ``replay_slurm.py`` adds multifactor and
                     fair-share on trace time, ``replay_metrics.py`` counts
                     the figures and writes the CSV files, ``replayed.py`` is
                     the record of one job.

Pending reasons are named in ``slurmlite.reasons`` and checked when a plan is
written.
"""
