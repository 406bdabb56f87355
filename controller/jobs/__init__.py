"""Jobs: submitting, changing, cancelling and completing them.

``validate.py``      ``SubmitValidator``: a submission checked against the
                     configuration, partitions, accounts and limits, turned
                     into a job row (priority at submit included).
``submit_queue.py``  group commit: concurrent submissions share a transaction.
``service.py``       ``JobService``: submit, read, cancel, and the agent
                     orders that follow a change.
``completions.py``   ``CompletionRecorder`` (mixed into ``JobService``): the
                     ends agents report, a batch in one transaction, idempotent.
``operations.py``    ``JobOps``: hold, release, requeue, update (scontrol).
``node_scripts.py``  a node's failed Prolog (drain, requeue held) or Epilog (drain).
"""
