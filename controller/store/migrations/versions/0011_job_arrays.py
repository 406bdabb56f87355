"""Job arrays: one row per array until its tasks start (``slurmlite.arrays``).

Revision ID: 0011
Revises: 0010

* ``jobs.array_job_id``: the array's id ``N`` on every row of an array (the
  master, whose own id is ``N``, and each task split off it); indexed, since
  ``scancel N``, ``squeue -j N`` and dependencies on ``N`` find the tasks by it;
* ``jobs.array_task_id``: the task's index (NULL on the master while it still
  holds pending tasks);
* ``jobs.array_pending``: on the master, the indices not yet split off, as
  range text (``5-9999``); NULL on tasks and plain jobs;
* ``jobs.array_max_tasks``: the ``%N`` throttle, on the master (NULL: none);
* ``jobs.array_info``: ``count,min,max,step`` of the whole array, on every
  row, for ``SLURM_ARRAY_TASK_COUNT/MIN/MAX/STEP``.

Jobs stored before are plain jobs (all NULL).  Every change is skipped when
already there, so a store adopted from tables made by newer models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_COLUMNS = (
    ("array_job_id", sa.Integer),
    ("array_task_id", sa.Integer),
    ("array_pending", sa.Text),
    ("array_max_tasks", sa.Integer),
    ("array_info", sa.Text),
)


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    jobs = {c["name"] for c in inspector.get_columns("jobs")}
    with op.batch_alter_table("jobs") as batch:
        for name, kind in _COLUMNS:
            if name not in jobs:
                batch.add_column(sa.Column(name, kind(), nullable=True))
    op.create_index("ix_jobs_array_job_id", "jobs", ["array_job_id"], if_not_exists=True)


def downgrade() -> None:
    op.drop_index("ix_jobs_array_job_id", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        for name, _ in reversed(_COLUMNS):
            batch.drop_column(name)
