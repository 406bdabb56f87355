"""OpenMetrics on the controller's port (``MetricsType=metrics/openmetrics``).

Slurm 25.11's layout and names (``/metrics/jobs``, ``/nodes``,
``/partitions``, ``/scheduler``, ``/jobs-users-accts``: ``slurm_*`` gauges)
plus slurmlite's own ``slurmlite_*`` series: counters that survive restarts,
histograms, and per-GPU usage.  One module a concept:

* ``jobstats``   jobs counted by state, once, for the jobs, partition, user
  and account endpoints;
* ``jobcounts``  those counts kept up to date from the live job cache's
  changes, so a scrape never counts every job;
* ``nodestats``  nodes counted by state and their resources;
* ``counters``   the store-backed counters (migration 0022);
* ``gpus``       per-GPU utilization and memory of running jobs (job_usage);
* ``service``    what each endpoint answers, built from the live job cache,
  the node rows and the counters: never the scheduler's pass, never a full
  read of the jobs table.

Routes and access rules: ``controller.api.routes_metrics``; user guide:
docs/metrics.md.
"""
