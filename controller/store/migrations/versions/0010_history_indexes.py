"""Index the history by user and end time, so years of finished jobs cost sacct nothing.

Revision ID: 0010
Revises: 0008

sacct's default listing is "the caller's jobs that had not ended before
midnight": ``user = :name AND (end_time IS NULL OR end_time >= :midnight)``.
With the single-column indexes alone the store reads every job the user
ever ran (tens of thousands after two years, each row ~1 KB) and drops all
but today's; ``ix_jobs_user_end_time`` answers it with two short range scans
(the NULLs, then ``>= :midnight``) on both SQLite and PostgreSQL.  The purge
(``controller.jobs.retention``) walks ``ix_jobs_end_time`` from the oldest.
Figures: ``python -m bench.store_growth`` (README, "The store as it grows").

Creating the index on a store of a million jobs takes seconds (measured
there); it is skipped when already there, so a store adopted from tables
made by newer models migrates.
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_jobs_user_end_time", "jobs", ["user", "end_time"], if_not_exists=True)


def downgrade() -> None:
    op.drop_index("ix_jobs_user_end_time", table_name="jobs")
