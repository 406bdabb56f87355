"""controller.accounting: who may run under which account and QOS, what they used, and
the priorities and shares that follow from it.

In reading order:

* ``accounts.py`` -- accounts, users and QOS: which account and QOS a job runs
  under (``Accounts``; its ``records`` are the association tree fair-share reads);
* ``account_edits.py`` -- adding, changing and deleting them (``sacctmgr``);
* ``qos_limits.py`` -- the QOS table's limits, and what is refused at submit;
* ``usage_charge.py`` -- usage in the store: reset, decay, and the charge of
  each job that ran (billing x seconds x UsageFactor);
* ``priority_facts.py`` -- what multifactor priority reads outside the job
  (cluster, partitions, QOS, associations), a job's TRES, and the breakdown's
  JSON text (``jobs.prio_factors``);
* ``priorities.py`` -- ``PriorityService``: priorities at submit, on change and
  every PriorityCalcPeriod (the pure arithmetic is ``slurmlite.scheduler.multifactor``);
* ``priority_listing.py`` -- what sprio lists (``GET /v1/priorities``);
* ``shares.py`` -- the fair-share table sshare prints (``GET /v1/shares``).
"""
