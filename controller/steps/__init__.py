"""Job steps (srun inside a job) and allocations without a batch script (salloc).

``place.py``        pure placement of a step inside its job's allocation:
                    nodes, tasks, CPUs and GPUs left by running steps.
``create.py``       ``create_step``: check the job, place the step, record it,
                    sign one order per node.
``ends.py``         the end of a step: its nodes' reports, and closing steps
                    that will never hear from all of them.
``allocations.py``  keepalives and the end of an allocation; InactiveLimit.
"""
