"""A signal some seconds before the time limit (``sbatch --signal=[B:]SIG[@secs]``).

Revision ID: 0005
Revises: 0004

* ``jobs.warn_signal``: the signal number, NULL when none was asked for;
* ``jobs.warn_time``: how many seconds before the limit it is due;
* ``jobs.warn_batch``: ``B:`` was given (only the batch shell gets it);
* ``jobs.warned_run``: the run (``restarts``) that was sent it, NULL before.

Jobs stored before asked for no signal.  Every change is skipped when
already there, so a store adopted from tables made by newer models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    jobs = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("jobs")}
    with op.batch_alter_table("jobs") as batch:
        if "warn_signal" not in jobs:
            batch.add_column(sa.Column("warn_signal", sa.Integer(), nullable=True))
        if "warn_time" not in jobs:
            batch.add_column(
                sa.Column("warn_time", sa.Integer(), nullable=False, server_default="0")
            )
        if "warn_batch" not in jobs:
            batch.add_column(
                sa.Column("warn_batch", sa.Boolean(), nullable=False, server_default=sa.false())
            )
        if "warned_run" not in jobs:
            batch.add_column(sa.Column("warned_run", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("warned_run")
        batch.drop_column("warn_batch")
        batch.drop_column("warn_time")
        batch.drop_column("warn_signal")
