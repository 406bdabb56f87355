"""The batch script's arguments (``sbatch job.sh a b``).

Revision ID: 0015
Revises: 0014

* ``jobs.script_args``: the words after the script's name, a JSON list; NULL
  when there are none (most jobs).  The agent runs the script with them, on
  every run of the job (a requeue keeps them).

Skipped when already there, so a store adopted from tables made by newer
models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    jobs = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("jobs")}
    if "script_args" not in jobs:
        with op.batch_alter_table("jobs") as batch:
            batch.add_column(sa.Column("script_args", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("script_args")
