"""Idempotency keys: table ``submit_keys`` (a lost reply never makes a second job).

Revision ID: 0008
Revises: 0007

One row per recent keyed submission: ``(uid, key)`` -> the job it made and,
when that job was stored but its caller refused, the refusal (``error_code``,
``error_detail``).  ``created`` is indexed so that ageing keys out is one
range delete (``controller.jobs.submit_keys``).  Skipped when the table is
already there (a store adopted from tables made by newer models).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "submit_keys" in sa.inspect(op.get_bind()).get_table_names():
        return
    op.create_table(
        "submit_keys",
        sa.Column("key", sa.Text(), primary_key=True),  # first: lookups go by key
        sa.Column("uid", sa.BigInteger(), primary_key=True),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("error_code", sa.Integer(), nullable=True),
        sa.Column("error_detail", sa.Text(), nullable=True),
    )
    op.create_index("ix_submit_keys_created", "submit_keys", ["created"])


def downgrade() -> None:
    op.drop_index("ix_submit_keys_created", table_name="submit_keys")
    op.drop_table("submit_keys")
