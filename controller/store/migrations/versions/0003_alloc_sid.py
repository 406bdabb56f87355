"""Remember the submitting shell's session id (``scontrol show job``'s AllocNode:Sid).

Revision ID: 0003
Revises: 0002

The host was already stored (``submit_host``); the session id is new.  Jobs
stored before this revision show 0, as Slurm does for a job whose submitter
sent none.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    columns = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("jobs")}
    if "alloc_sid" in columns:  # a store adopted from tables made by newer models
        return
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("alloc_sid", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("alloc_sid")
