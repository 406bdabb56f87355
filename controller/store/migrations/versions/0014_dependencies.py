"""Job dependencies (``--dependency``, ``slurmlite.dependency``).

Revision ID: 0014
Revises: 0013

* ``jobs.dependency``: what a pending job still waits for, in the stored form
  of ``slurmlite.dependency`` (``afterok:41,after:7+5``); elements that held are
  dropped, NULL once none is left.  Indexed: each scheduler pass reads only the
  pending jobs that have one (``controller.sched.deps``);
* ``jobs.dep_failed``: 1 once the dependency can never be satisfied (a target
  ended the wrong way); it is not evaluated again;
* ``jobs.kill_invalid_dep``: ``--kill-on-invalid-dep`` (NULL: what
  ``DependencyParameters=kill_invalid_depend`` says).

Every change is skipped when already there, so a store adopted from tables
made by newer models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    jobs = {c["name"] for c in inspector.get_columns("jobs")}
    with op.batch_alter_table("jobs") as batch:
        if "dependency" not in jobs:
            batch.add_column(sa.Column("dependency", sa.Text(), nullable=True))
        if "dep_failed" not in jobs:
            batch.add_column(
                sa.Column("dep_failed", sa.Boolean(), nullable=False, server_default=sa.false())
            )
        if "kill_invalid_dep" not in jobs:
            batch.add_column(sa.Column("kill_invalid_dep", sa.Boolean(), nullable=True))
    op.create_index("ix_jobs_dependency", "jobs", ["dependency"], if_not_exists=True)


def downgrade() -> None:
    op.drop_index("ix_jobs_dependency", table_name="jobs")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("kill_invalid_dep")
        batch.drop_column("dep_failed")
        batch.drop_column("dependency")
