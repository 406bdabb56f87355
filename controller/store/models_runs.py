"""The tables of workload runs (``slurmlite run``, migration 0016).

* ``runs``  one row per run: the job that carries it (the run id *is* the job
  id), the workload as checked (JSON), its idempotency key, code snapshot,
  secrets (variable -> secret name, never a value), its retry budget and
  what it used of it, and the MLflow run it reports to;
* ``job_runs``  every ended run of a requeued job, one row per restart
  (when, where, how it ended, why it went back): ``slurmlite get run`` lists
  them as attempts, the job row itself holds the current one.  Kept for every
  job, not only runs: a requeue is rare, and its history is worth the row;
* ``snapshot_owners``  which user uploaded which code snapshot (a user may
  fetch only snapshots they uploaded; the file itself is stored once,
  content-addressed, under ``StateSaveLocation/snapshots``);
* ``secrets``  each user's secrets, encrypted with a key derived from the
  cluster key (``controller.runs.secrets``), bound to user and name.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Float, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from controller.store.models import Base


class RunRow(Base):
    __tablename__ = "runs"
    __table_args__ = (Index("ix_runs_uid_key", "uid", "idempotency_key", unique=True),)

    job_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    uid: Mapped[int] = mapped_column(BigInteger)
    name: Mapped[str] = mapped_column(Text)
    spec: Mapped[str] = mapped_column(Text)  # JSON: the workload file as checked
    idempotency_key: Mapped[str | None] = mapped_column(Text, nullable=True)
    snapshot: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    secrets: Mapped[str] = mapped_column(Text, default="{}")  # JSON {VAR: secret name}
    max_retries: Mapped[int] = mapped_column(Integer, default=3)
    retries: Mapped[int] = mapped_column(Integer, default=0)
    mlflow_run_id: Mapped[str | None] = mapped_column(Text, nullable=True)
    created: Mapped[float] = mapped_column(Float)


class JobRunRow(Base):
    __tablename__ = "job_runs"

    job_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    restart: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    start_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    end_time: Mapped[float] = mapped_column(Float)
    nodes: Mapped[str] = mapped_column(Text, default="")
    state: Mapped[str] = mapped_column(String(16))
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cause: Mapped[str] = mapped_column(Text)


class SnapshotOwnerRow(Base):
    __tablename__ = "snapshot_owners"

    sha: Mapped[str] = mapped_column(String(64), primary_key=True)
    uid: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    size: Mapped[int] = mapped_column(BigInteger)
    created: Mapped[float] = mapped_column(Float, index=True)


class SecretRow(Base):
    __tablename__ = "secrets"

    uid: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(Text, primary_key=True)
    value: Mapped[bytes] = mapped_column(LargeBinary)  # nonce + AES-GCM ciphertext
    updated: Mapped[float] = mapped_column(Float)
