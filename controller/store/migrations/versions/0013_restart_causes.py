"""Why each restart happened, and which ended jobs still owe their EpilogSlurmctld.

Revision ID: 0013
Revises: 0011

* ``jobs.restart_causes``: one cause per restart, oldest first,
  ``"node_fail:n1,requeue:alice,prolog:n2"`` (``slurmlite.restarts``); jobs
  stored before have none recorded ("").
* ``jobs.ctld_epilog``: 1 while the controller's ``EpilogSlurmctld`` is owed
  for this run (set when the job starts with one configured, cleared once it
  ran), NULL otherwise; indexed, so the loop finds the few owed ones
  without reading the history (``controller.sched.ctld_scripts``).

Every change is skipped when already there, so a store adopted from tables
made by newer models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    jobs = {c["name"] for c in inspector.get_columns("jobs")}
    with op.batch_alter_table("jobs") as batch:
        if "restart_causes" not in jobs:
            batch.add_column(
                sa.Column("restart_causes", sa.Text(), nullable=False, server_default="")
            )
        if "ctld_epilog" not in jobs:
            batch.add_column(sa.Column("ctld_epilog", sa.Integer(), nullable=True))
    indexes = {i["name"] for i in sa.inspect(op.get_bind()).get_indexes("jobs")}
    if "ix_jobs_ctld_epilog" not in indexes:
        op.create_index("ix_jobs_ctld_epilog", "jobs", ["ctld_epilog"])


def downgrade() -> None:
    op.drop_index("ix_jobs_ctld_epilog", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("ctld_epilog")
        batch.drop_column("restart_causes")
