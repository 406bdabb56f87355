"""The notification outbox (migration 0020).

* ``notify_outbox``  one row per job event and destination: ``subject`` is
  worded when the event happens (Slurm's line, ``slurmlite.mailtype``); the
  body is made at delivery, when the job's usage has arrived.  A row is due
  while ``delivered`` is NULL and ``next_try`` has passed; each failed try
  counts in ``attempts`` and pushes ``next_try`` back
  (``controller.notify.worker``).  ``run`` is the job's restart count, so a
  time-limit warning is recorded once per run.
"""

from __future__ import annotations

from sqlalchemy import Float, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controller.store.models import Base


class OutboxRow(Base):
    __tablename__ = "notify_outbox"
    __table_args__ = (Index("ix_notify_outbox_due", "delivered", "next_try"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[int] = mapped_column(Integer, index=True)
    run: Mapped[int] = mapped_column(Integer)
    event: Mapped[str] = mapped_column(String(32))
    recipient: Mapped[str] = mapped_column(Text)
    subject: Mapped[str] = mapped_column(Text)
    created: Mapped[float] = mapped_column(Float)
    next_try: Mapped[float] = mapped_column(Float)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    delivered: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
