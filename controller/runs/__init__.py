"""Workload runs on the controller: runs, their retries, code snapshots, secrets, logs."""
