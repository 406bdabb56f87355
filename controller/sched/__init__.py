"""The scheduling loop: snapshot -> ``schedule_pass`` -> apply -> dispatch.

``parts.py``       ``SchedParts``: the store, nodes, priorities, signer, clock
                   and configuration the loop and a pass use.
``gather.py``      the store read into a ``slurmlite.scheduler`` snapshot
                   (pending jobs cached between passes).
``apply.py``       which pass runs (event pass or full backfill pass), and its
                   plan written in one transaction: starts, reasons, estimates.
``launch.py``      a started job turned into a signed batch launch.
``warnsignal.py``  ``--signal=SIG@secs`` warnings due before a time limit.
``requeue.py``     a run back in the queue (node failure, scontrol, prologs),
                   with the cause recorded.
``idlegpus.py``    ``SlurmliteIdleGpuPolicy``: running jobs whose GPUs stay idle
                   flagged (reason GpusIdle), then requeued or cancelled.
``ctld_scripts.py`` PrologSlurmctld (job CONFIGURING) and EpilogSlurmctld (job
                   COMPLETING), run off the loop's thread.
``loop.py``        ``SchedulerLoop``: liveness, time limits, steps, the pass,
                   and delivering the orders.
``willrun.py``     ``sbatch --test-only``: the same pass on a snapshot with the
                   probe added.
``explain_job.py`` ``slurmlite explain``: a fresh snapshot and the job's stored
                   factors handed to ``slurmlite.scheduler.explain``.
``invariants.py``  the store's invariants as named rules, checked and repaired
                   (controller start, ``slurmlite check``, after e2e tests).
"""
