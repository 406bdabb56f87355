"""The first schema: jobs, steps, nodes and meta, as ``models.py`` had them.

Revision ID: 0001
Revises: (none)

Written by hand, column for column from ``controller/store/models.py``;
``tests/api/test_store.py`` checks with Alembic's autogenerate comparison
that the result equals the models on SQLite and PostgreSQL.  The ``meta``
row ``next_job_id`` is created here too, so job-id allocation always finds a
row to lock (``SELECT ... FOR UPDATE`` on PostgreSQL) and two controllers
never race to insert it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    def req(name: str, type_: sa.types.TypeEngine) -> sa.Column:  # type: ignore[type-arg]
        return sa.Column(name, type_, nullable=False)

    def opt(name: str, type_: sa.types.TypeEngine) -> sa.Column:  # type: ignore[type-arg]
        return sa.Column(name, type_, nullable=True)

    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        req("name", sa.Text()),
        req("uid", sa.BigInteger()),
        req("gid", sa.BigInteger()),
        req("user", sa.Text()),
        req("group", sa.Text()),
        req("account", sa.Text()),
        req("qos", sa.Text()),
        req("partition", sa.Text()),
        req("state", sa.String(16)),
        req("flags", sa.String(128)),
        req("reason", sa.Text()),
        opt("state_desc", sa.Text()),
        req("priority", sa.BigInteger()),
        req("nice", sa.Integer()),
        opt("hold", sa.String(32)),
        req("submit_time", sa.Float()),
        opt("eligible_time", sa.Float()),
        opt("start_time", sa.Float()),
        opt("end_time", sa.Float()),
        opt("time_limit", sa.Integer()),
        req("nodes_min", sa.Integer()),
        opt("nodes_max", sa.Integer()),
        opt("ntasks", sa.Integer()),
        opt("ntasks_per_node", sa.Integer()),
        req("cpus_per_task", sa.Integer()),
        req("num_cpus", sa.Integer()),
        opt("mem_per_node", sa.Integer()),
        opt("mem_per_cpu", sa.Integer()),
        opt("mem_per_gpu", sa.Integer()),
        req("gpus_per_node", sa.Integer()),
        opt("gpus_total", sa.Integer()),
        opt("gpu_type", sa.Text()),
        opt("tres_per_node", sa.Text()),
        opt("tres_per_job", sa.Text()),
        req("nodes", sa.Text()),
        req("alloc", sa.Text()),
        req("layout", sa.Text()),
        opt("batch_host", sa.Text()),
        opt("exit_code", sa.Integer()),
        opt("derived_exit_code", sa.Integer()),
        req("restarts", sa.Integer()),
        req("work_dir", sa.Text()),
        req("submit_dir", sa.Text()),
        req("submit_host", sa.Text()),
        opt("command", sa.Text()),
        opt("std_out", sa.Text()),
        opt("std_err", sa.Text()),
        opt("std_in", sa.Text()),
        req("open_mode", sa.Text()),
        opt("comment", sa.Text()),
        req("req_nodes", sa.Text()),
        req("exc_nodes", sa.Text()),
        req("exclusive", sa.Boolean()),
        opt("constraint", sa.Text()),
        opt("cancelled_by", sa.BigInteger()),
        req("requeue", sa.Boolean()),
        req("script", sa.Text()),
        req("environment", sa.Text()),
        req("echo_env", sa.Text()),
        req("export", sa.Text()),
        opt("last_sched_eval", sa.Float()),
    )
    op.create_index("ix_jobs_uid", "jobs", ["uid"])
    op.create_index("ix_jobs_state", "jobs", ["state"])

    op.create_table(
        "steps",
        sa.Column("job_id", sa.Integer(), primary_key=True),
        sa.Column("step_id", sa.String(32), primary_key=True),
        req("name", sa.Text()),
        req("state", sa.String(16)),
        opt("exit_code", sa.Integer()),
        opt("start_time", sa.Float()),
        opt("end_time", sa.Float()),
        req("nodes", sa.Text()),
        req("cpus", sa.Integer()),
        req("mem", sa.Integer()),
        req("ntasks", sa.Integer()),
    )

    op.create_table(
        "nodes",
        sa.Column("name", sa.Text(), primary_key=True),
        req("addr", sa.Text()),
        req("hostname", sa.Text()),
        req("port", sa.Integer()),
        req("cpus", sa.Integer()),
        req("real_memory", sa.Integer()),
        req("gpus", sa.Integer()),
        opt("gpu_type", sa.Text()),
        req("features", sa.Text()),
        req("weight", sa.Integer()),
        req("dynamic", sa.Boolean()),
        req("registered", sa.Boolean()),
        req("down", sa.Boolean()),
        req("down_for_timeout", sa.Boolean()),
        req("drain", sa.Boolean()),
        req("invalid", sa.Boolean()),
        opt("reason", sa.Text()),
        opt("reason_uid", sa.BigInteger()),
        opt("reason_time", sa.Float()),
        opt("boot_time", sa.Float()),
        opt("slurmd_start_time", sa.Float()),
        opt("last_busy_time", sa.Float()),
        opt("version", sa.Text()),
        opt("arch", sa.Text()),
        opt("os", sa.Text()),
    )

    meta = op.create_table(
        "meta",
        sa.Column("key", sa.String(64), primary_key=True),
        req("value", sa.Text()),
    )
    op.bulk_insert(meta, [{"key": "next_job_id", "value": "1"}])


def downgrade() -> None:
    op.drop_table("meta")
    op.drop_table("nodes")
    op.drop_table("steps")
    op.drop_index("ix_jobs_state", table_name="jobs")
    op.drop_index("ix_jobs_uid", table_name="jobs")
    op.drop_table("jobs")
