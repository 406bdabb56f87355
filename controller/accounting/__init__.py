"""Accounts, users, QOS, limits, fair-share usage and priorities in the store.

``accounts.py``          which account and QOS a job runs under (associations,
                         defaults, the views sacctmgr lists).
``account_edits.py``     adding, changing and deleting them (sacctmgr's verbs).
``qos_limits.py``        QOS limits: refused at submit, reasons in the pass.
``usage_charge.py``      fair-share usage: charging the jobs that ran, decay,
                         reset.
``priority_facts.py``    what multifactor priority reads outside the job, a
                         job's TRES, and the breakdown's JSON (``prio_factors``).
``priorities.py``        ``PriorityService``: priorities at submit, on change and
                         every PriorityCalcPeriod (the formulas, the age-only
                         re-evaluation included, are ``slurmlite.scheduler.multifactor``'s).
``priority_listing.py``  what sprio lists (``GET /v1/priorities``).
``shares.py``            the fair-share table sshare prints (``GET /v1/shares``).
``usage.py``             what jobs used: the agents' usage summaries (``job_usage``).
``usage_history.py``     per-GPU utilization over time, fed as summaries arrive
                         (the dashboard job page's sparklines).
"""
