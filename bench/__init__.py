"""slurmlite's benchmarks: ``make bench`` (``python -m bench.run``).

Each benchmark starts its own throwaway local cluster (``slurmlite cluster
up --dir <tmpdir>`` with node names ``bnode[1-2]``, so it never collides with
a test cluster), measures, and always stops the cluster again.  What is
measured, and the issue-3 targets next to real Slurm 22.05's figures:

=============  ===========================================  ==========  ===========
name           figure                                       target      Slurm 22.05
=============  ===========================================  ==========  ===========
startup        ``sbatch --wrap true`` whole process         <= 50 ms    4 ms
startup        ``squeue``, empty queue                      <= 50 ms    4 ms
startup        ``sacct -j ID``                              <= 50 ms    92 ms
queue          ``squeue`` with 1,000 / 10,000 pending jobs  60 / 100 ms 10 ms / --
latency        ``sbatch`` -> the job's first line runs      <= 100 ms   1.8 s
throughput     1,000 ``true`` jobs, 2 x 64 CPUs             >= 200/s    1.7-23/s
api            submissions, 16 keep-alive connections       >= 2,000/s  ~290/s
=============  ===========================================  ==========  ===========

When real Slurm is installed (Debian 12: ``apt-get install slurmctld slurmd
slurm-client``, with ``munge``), each benchmark also starts a throwaway
single-host Slurm on loopback (``bench.realslurm``) after its own cluster
is down, measures the same thing there, and prints that figure and the ratio
slurmlite / Slurm; otherwise (or with ``--no-slurm``, or ``--quick`` without
``--slurm``) the Slurm column is what the issue quotes for real Slurm 22.05
on this kind of machine, not a measurement of this run.  Timings are wall
clock (``time.perf_counter``); command times run the installed console
scripts (or real Slurm's programs) as a user would, one fresh process each,
and report the median and the 90th percentile.
"""
