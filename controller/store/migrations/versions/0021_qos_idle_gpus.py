"""A QOS's idle-GPU policy (``sacctmgr modify qos NAME set IdleGpuPolicy=...``).

Revision ID: 0021
Revises: 0020

* ``qos.idle_gpu_policy``: the QOS's layer of ``SlurmliteIdleGpuPolicy``
  (``slurmlite.idlegpus``) as it was set, e.g. ``window=1:00:00,action=cancel``
  or ``off``; ``""`` when the QOS has none (its jobs follow slurm.conf).

Skipped when already there, so a store adopted from tables made by newer
models migrates.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    qos = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("qos")}
    if "idle_gpu_policy" not in qos:
        with op.batch_alter_table("qos") as batch:
            batch.add_column(
                sa.Column("idle_gpu_policy", sa.Text(), nullable=False, server_default="")
            )


def downgrade() -> None:
    with op.batch_alter_table("qos") as batch:
        batch.drop_column("idle_gpu_policy")
