"""Accounting and scheduling policy: associations, users, QOS, priority and plan columns.

Revision ID: 0006
Revises: 0005

* tables ``assocs`` (the account tree, shares, usage), ``users`` (default
  accounts) and ``qos`` (priorities and limits), kept by ``sacctmgr``;
* ``jobs.admin_priority``: a priority set by ``scontrol update Priority=``;
* ``jobs.prio_factors``: the last multifactor breakdown (JSON);
* ``jobs.sched_start`` / ``jobs.sched_nodes``: the backfill plan's expected
  start and nodes for a pending job;
* ``jobs.charged_until``: how far a running job's usage has been charged.

Jobs stored before have none of these (NULL).  Every change is skipped when
already there, so a store adopted from tables made by newer models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_JOB_COLUMNS = (
    ("admin_priority", sa.BigInteger()),
    ("prio_factors", sa.Text()),
    ("sched_start", sa.Float()),
    ("sched_nodes", sa.Text()),
    ("charged_until", sa.Float()),
)


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    tables = set(inspector.get_table_names())
    jobs = {c["name"] for c in inspector.get_columns("jobs")}
    with op.batch_alter_table("jobs") as batch:
        for name, kind in _JOB_COLUMNS:
            if name not in jobs:
                batch.add_column(sa.Column(name, kind, nullable=True))
    if "assocs" not in tables:
        op.create_table(
            "assocs",
            sa.Column("account", sa.Text(), primary_key=True),
            sa.Column("user", sa.Text(), primary_key=True),
            sa.Column("parent", sa.Text(), nullable=True),
            sa.Column("shares", sa.Integer(), nullable=True),
            sa.Column("priority", sa.Integer(), nullable=False),
            sa.Column("qos", sa.Text(), nullable=False),
            sa.Column("default_qos", sa.Text(), nullable=True),
            sa.Column("description", sa.Text(), nullable=False),
            sa.Column("organization", sa.Text(), nullable=False),
            sa.Column("raw_usage", sa.Float(), nullable=False),
        )
    if "users" not in tables:
        op.create_table(
            "users",
            sa.Column("name", sa.Text(), primary_key=True),
            sa.Column("default_account", sa.Text(), nullable=False),
            sa.Column("admin_level", sa.String(16), nullable=False),
        )
    if "qos" not in tables:
        op.create_table(
            "qos",
            sa.Column("name", sa.Text(), primary_key=True),
            sa.Column("description", sa.Text(), nullable=False),
            sa.Column("priority", sa.Integer(), nullable=False),
            sa.Column("usage_factor", sa.Float(), nullable=False),
            sa.Column("max_wall", sa.Integer(), nullable=True),
            sa.Column("max_jobs_pu", sa.Integer(), nullable=True),
            sa.Column("max_submit_pu", sa.Integer(), nullable=True),
            sa.Column("max_tres_pu", sa.Text(), nullable=False),
            sa.Column("max_tres_pj", sa.Text(), nullable=False),
            sa.Column("flags", sa.Text(), nullable=False),
        )


def downgrade() -> None:
    op.drop_table("qos")
    op.drop_table("users")
    op.drop_table("assocs")
    with op.batch_alter_table("jobs") as batch:
        for name, _ in reversed(_JOB_COLUMNS):
            batch.drop_column(name)
