"""Notifications: ``--mail-type`` events, recorded durably, delivered off the loop.

``outbox.py``      the rule's mechanism: a job's state change writes its
                   events into ``notify_outbox`` in the same transaction
                   (a session hook), and the time-limit warnings are
                   recorded once per run by a periodic check.
``arrays.py``      an array without ARRAY_TASKS notifies as one job: its first
                   BEGIN, one summary (exit code range) when its last task ends.
``senders.py``     where a message goes: SMTP, ``MailProg`` (invoked as Slurm
                   invokes it), a JSON webhook; a recording fake for tests.
``worker.py``      the delivery thread: due rows, the body (with the job's
                   ``seff`` summary), retry with backoff, ``delivered`` marks.

The state-change rule itself (which change is which event, and Slurm's
subject line) is pure: ``slurmlite.mailtype``.
"""
