"""Index jobs.flags and jobs.end_time, so live-job queries do not scan the history.

Revision ID: 0002
Revises: 0001

What running and completing jobs hold on each node is summed on every
scheduling pass; with the state index alone, the ``flags = 'COMPLETING'``
half of that query scanned every job ever run; squeue's "finished within
MinJobAge" test needs ``end_time``.
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_flags", "jobs", ["flags"], if_not_exists=True)
    op.create_index("ix_jobs_end_time", "jobs", ["end_time"], if_not_exists=True)


def downgrade() -> None:
    op.drop_index("ix_jobs_end_time", table_name="jobs")
    op.drop_index("ix_jobs_flags", table_name="jobs")
