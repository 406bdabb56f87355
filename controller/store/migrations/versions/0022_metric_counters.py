"""The controller's counters that survive restarts (``/metrics``, docs/metrics.md).

Revision ID: 0022
Revises: 0021

* ``metric_counters``: (name, labels) -> value, bumped in the transaction of
  the change it counts (``controller.metrics.counters``).

Skipped when already there, so a store adopted from tables made by newer
models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if "metric_counters" in set(sa.inspect(op.get_bind()).get_table_names()):
        return
    op.create_table(
        "metric_counters",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("labels", sa.String(200), primary_key=True),
        sa.Column("value", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("metric_counters")
