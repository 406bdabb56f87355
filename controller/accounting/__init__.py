"""Accounts, users, QOS, limits, fair-share usage and priorities in the store.

``accounts.py``        which account and QOS a job runs under (associations,
                       defaults, the views sacctmgr lists).
``account_edits.py``   adding, changing and deleting them (sacctmgr's verbs).
``qos_limits.py``      QOS limits: refused at submit, reasons in the pass.
``usage_charge.py``    fair-share usage: charging the jobs that ran, decay,
                       reset.
``priority_facts.py``  what multifactor priority reads outside the job.
``priorities.py``      ``PriorityService``: priorities at submit, on change and
                       every PriorityCalcPeriod (the formulas are
                       ``slurmlite.scheduler.multifactor``'s).
"""
