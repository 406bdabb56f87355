"""The table of measured usage (migration 0017).

* ``job_usage``  the latest :class:`slurmlite.usage.UsageSummary` of each
  (job, run, node): the agent's summaries are cumulative, so a newer one
  replaces the row.  Scalar figures are columns (the reports sum them over
  many jobs); the per-GPU figures are JSON text, read whole.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Float, Integer, Text
from sqlalchemy.orm import Mapped, mapped_column

from controller.store.models import Base


class JobUsageRow(Base):
    __tablename__ = "job_usage"

    job_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    restart: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    node: Mapped[str] = mapped_column(Text, primary_key=True)
    samples: Mapped[int] = mapped_column(Integer, default=0)
    first_sample: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_sample: Mapped[float | None] = mapped_column(Float, nullable=True)
    cpu_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    max_rss_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    rss_sum_bytes: Mapped[float] = mapped_column(Float, default=0.0)
    gpu_util_avg: Mapped[float | None] = mapped_column(Float, nullable=True)  # mean over GPUs
    gpus: Mapped[str] = mapped_column(Text, default="[]")  # JSON list of GpuUsage
