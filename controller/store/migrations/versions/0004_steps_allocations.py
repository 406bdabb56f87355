"""Job steps and allocations without a batch script (srun, salloc).

Revision ID: 0004
Revises: 0003

* ``jobs.allocation``: the job was asked for by srun/salloc; nothing is
  launched for it and it ends when its command says so;
  ``jobs.keepalive``: when that command last said it was alive (InactiveLimit).
* ``steps.restarts``: the run a step belongs to; ``steps.usage``: the CPUs and
  GPUs it holds on each node (JSON); ``steps.reports``: what each of its nodes
  reported so far (JSON).  ``steps.state`` gets an index: the loop looks up the
  running steps every pass.

Jobs stored before are batch jobs (``allocation`` false); their steps (only
``batch``) hold nothing and have no reports.  Every change is skipped when
already there, so a store adopted from tables made by newer models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _columns(table: str) -> set[str]:
    return {c["name"] for c in sa.inspect(op.get_bind()).get_columns(table)}


def upgrade() -> None:
    jobs = _columns("jobs")
    with op.batch_alter_table("jobs") as batch:
        if "allocation" not in jobs:
            batch.add_column(
                sa.Column("allocation", sa.Boolean(), nullable=False, server_default=sa.false())
            )
        if "keepalive" not in jobs:
            batch.add_column(sa.Column("keepalive", sa.Float(), nullable=True))
    steps = _columns("steps")
    with op.batch_alter_table("steps") as batch:
        if "restarts" not in steps:
            batch.add_column(
                sa.Column("restarts", sa.Integer(), nullable=False, server_default="0")
            )
        if "usage" not in steps:
            batch.add_column(sa.Column("usage", sa.Text(), nullable=False, server_default="{}"))
        if "reports" not in steps:
            batch.add_column(sa.Column("reports", sa.Text(), nullable=False, server_default="{}"))
    op.create_index("ix_steps_state", "steps", ["state"], if_not_exists=True)


def downgrade() -> None:
    op.drop_index("ix_steps_state", table_name="steps")
    with op.batch_alter_table("steps") as batch:
        batch.drop_column("reports")
        batch.drop_column("usage")
        batch.drop_column("restarts")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("keepalive")
        batch.drop_column("allocation")
