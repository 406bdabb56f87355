"""Workload runs, the history of requeued jobs, code snapshots and secrets.

Revision ID: 0016
Revises: 0015

* ``runs``: one row per ``slurmlite run`` (its id is its job's), unique by
  (uid, idempotency key);
* ``job_runs``: one row per ended run of a requeued job (``restart`` = the
  restart count that run had);
* ``snapshot_owners``: who uploaded which code snapshot;
* ``secrets``: each user's encrypted secrets.

See ``controller.store.models_runs``.  Each table is skipped when already
there, so a store adopted from tables made by newer models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    have = set(sa.inspect(op.get_bind()).get_table_names())
    if "runs" not in have:
        op.create_table(
            "runs",
            sa.Column("job_id", sa.Integer(), primary_key=True, autoincrement=False),
            sa.Column("uid", sa.BigInteger(), nullable=False),
            sa.Column("name", sa.Text(), nullable=False),
            sa.Column("spec", sa.Text(), nullable=False),
            sa.Column("idempotency_key", sa.Text(), nullable=True),
            sa.Column("snapshot", sa.String(64), nullable=True),
            sa.Column("secrets", sa.Text(), nullable=False),
            sa.Column("max_retries", sa.Integer(), nullable=False),
            sa.Column("retries", sa.Integer(), nullable=False),
            sa.Column("mlflow_run_id", sa.Text(), nullable=True),
            sa.Column("created", sa.Float(), nullable=False),
        )
        op.create_index("ix_runs_uid_key", "runs", ["uid", "idempotency_key"], unique=True)
        op.create_index("ix_runs_snapshot", "runs", ["snapshot"])
    if "job_runs" not in have:
        op.create_table(
            "job_runs",
            sa.Column("job_id", sa.Integer(), primary_key=True, autoincrement=False),
            sa.Column("restart", sa.Integer(), primary_key=True, autoincrement=False),
            sa.Column("start_time", sa.Float(), nullable=True),
            sa.Column("end_time", sa.Float(), nullable=False),
            sa.Column("nodes", sa.Text(), nullable=False),
            sa.Column("state", sa.String(16), nullable=False),
            sa.Column("exit_code", sa.Integer(), nullable=True),
            sa.Column("cause", sa.Text(), nullable=False),
        )
    if "snapshot_owners" not in have:
        op.create_table(
            "snapshot_owners",
            sa.Column("sha", sa.String(64), primary_key=True),
            sa.Column("uid", sa.BigInteger(), primary_key=True, autoincrement=False),
            sa.Column("size", sa.BigInteger(), nullable=False),
            sa.Column("created", sa.Float(), nullable=False),
        )
        op.create_index("ix_snapshot_owners_created", "snapshot_owners", ["created"])
    if "secrets" not in have:
        op.create_table(
            "secrets",
            sa.Column("uid", sa.BigInteger(), primary_key=True, autoincrement=False),
            sa.Column("name", sa.Text(), primary_key=True),
            sa.Column("value", sa.LargeBinary(), nullable=False),
            sa.Column("updated", sa.Float(), nullable=False),
        )


def downgrade() -> None:
    for table in ("secrets", "snapshot_owners", "job_runs", "runs"):
        op.drop_table(table)
