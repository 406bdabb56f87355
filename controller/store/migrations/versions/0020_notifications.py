"""Notifications: the job's mail request and the durable outbox of its events.

Revision ID: 0020
Revises: 0017

* ``jobs.mail_type``: ``--mail-type`` in its canonical form (``BEGIN,END``;
  NULL: no notification); ``jobs.mail_user``: where they go (an address, a
  user name, or an http(s) URL for a JSON webhook).
* ``notify_outbox``: one row per event and destination, written in the
  transaction that changed the job (``controller.notify.outbox``) and
  delivered later by the controller's worker (``controller.notify.worker``).

Skipped where already there, so a store adopted from tables made by newer
models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    jobs = {c["name"] for c in inspector.get_columns("jobs")}
    if "mail_type" not in jobs:
        with op.batch_alter_table("jobs") as batch:
            batch.add_column(sa.Column("mail_type", sa.Text(), nullable=True))
            batch.add_column(sa.Column("mail_user", sa.Text(), nullable=True))
    if "notify_outbox" in set(inspector.get_table_names()):
        return
    op.create_table(
        "notify_outbox",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("recipient", sa.Text(), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("next_try", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("delivered", sa.Float(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
    )
    op.create_index("ix_notify_outbox_job_id", "notify_outbox", ["job_id"])
    op.create_index("ix_notify_outbox_due", "notify_outbox", ["delivered", "next_try"])


def downgrade() -> None:
    op.drop_table("notify_outbox")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("mail_user")
        batch.drop_column("mail_type")
