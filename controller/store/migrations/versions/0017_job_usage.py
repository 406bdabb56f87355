"""Measured usage: the latest summary of each (job, run, node).

Revision ID: 0017
Revises: 0016

See ``controller.store.models_usage``.  Skipped when the table is already
there, so a store adopted from tables made by newer models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "job_usage" in set(sa.inspect(op.get_bind()).get_table_names()):
        return
    op.create_table(
        "job_usage",
        sa.Column("job_id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("restart", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("node", sa.Text(), primary_key=True),
        sa.Column("samples", sa.Integer(), nullable=False),
        sa.Column("first_sample", sa.Float(), nullable=True),
        sa.Column("last_sample", sa.Float(), nullable=True),
        sa.Column("cpu_seconds", sa.Float(), nullable=False),
        sa.Column("max_rss_bytes", sa.BigInteger(), nullable=False),
        sa.Column("rss_sum_bytes", sa.Float(), nullable=False),
        sa.Column("gpu_util_avg", sa.Float(), nullable=True),
        sa.Column("gpus", sa.Text(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("job_usage")
