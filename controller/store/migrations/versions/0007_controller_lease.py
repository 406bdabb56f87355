"""The store's lease: which controller holds it, and the fencing epoch.

Revision ID: 0007
Revises: 0006

* table ``controller_lease``: one row (``id`` 1) naming the controller that
  holds the store's lock (host, pid, port, socket, start time), whether it
  let go cleanly (``released``), the store's id and the epoch, raised by
  one at every start (``controller.store.lease``).

A store migrated from before has no row: its next controller writes epoch 1.
Skipped when the table is there already, so a store adopted from tables
made by newer models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "controller_lease" in set(sa.inspect(op.get_bind()).get_table_names()):
        return
    op.create_table(
        "controller_lease",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("store", sa.String(64), nullable=False),
        sa.Column("host", sa.Text(), nullable=False),
        sa.Column("pid", sa.BigInteger(), nullable=False),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column("socket", sa.Text(), nullable=False),
        sa.Column("started", sa.Float(), nullable=False),
        sa.Column("released", sa.Float(), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("controller_lease")
