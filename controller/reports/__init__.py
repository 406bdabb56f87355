"""Usage reports without slurmdbd: what ``sreport`` and ``slurmlite report`` print.

Slurm keeps hourly usage roll-ups in slurmdbd; slurmlite computes the same
figures on demand from its own store, one SQL aggregate per report:

* ``held``        the one formula: a job's allocated TRES x its time clipped
                  to the period, as SQLAlchemy Core expressions;
* ``utilization`` ``GET /v1/reports/usage``: the cluster's allocated, down,
                  idle and reported TRES-seconds, and each (user, account)'s
                  usage (sreport cluster utilization, AccountUtilizationByUser,
                  user topusage);
* ``lab``         ``GET /v1/reports/lab``: jobs, CPU/GPU-hours, mean wait,
                  success rate and measured GPU utilization per user or account
                  (``slurmlite report``).

``PrivateData=usage`` limits a non-operator to their own rows
(``utilization.own_only``).
"""
