"""Why a job's last run ended, in words: ``jobs.system_comment``.

Revision ID: 0023
Revises: 0022

* ``jobs.system_comment``: one sentence naming the node, the path, the
  errno text, the limit and what was used (``slurmlite.failures``), shown as
  ``SystemComment`` by ``scontrol show job`` and ``sacct``; NULL when there
  is nothing to say (jobs stored before have none).

Skipped when already there, so a store adopted from tables made by newer
models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    jobs = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("jobs")}
    if "system_comment" not in jobs:
        with op.batch_alter_table("jobs") as batch:
            batch.add_column(sa.Column("system_comment", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("system_comment")
