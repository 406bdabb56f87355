"""The table of the controller's own counters (migration 0022).

* ``metric_counters``  one row per (name, labels): a number that only grows
  (jobs submitted, started, ended by state; queue-wait histogram buckets;
  scheduling passes).  Written in the transaction of the change it counts
  (``controller.metrics.counters``), so a restart, even ``kill -9``, neither
  loses nor repeats a count.  ``labels`` is one ``key=value`` label, e.g.
  ``state=COMPLETED`` or ``le=60``; ``""`` for none.
"""

from __future__ import annotations

from sqlalchemy import Float, String
from sqlalchemy.orm import Mapped, mapped_column

from controller.store.models import Base


class MetricCounterRow(Base):
    __tablename__ = "metric_counters"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    labels: Mapped[str] = mapped_column(String(200), primary_key=True)
    value: Mapped[float] = mapped_column(Float, default=0.0)
