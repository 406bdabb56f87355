"""The job store's tables (SQLAlchemy 2.0 typed ORM).

Four tables hold everything the controller must not forget:

* ``jobs``   one row per job: the request, its state and its accounting;
  allocations and environments are JSON text columns (read whole, never
  queried inside);
* ``steps``  one row per job step (``batch`` for the batch script), for sacct;
* ``nodes``  what each node registered and the admin/health state that must
  survive a controller restart (DOWN, DRAIN and their reasons);
* ``meta``   small counters, e.g. the next job id, and when usage was last
  decayed (``usage_decayed_at``) and reset (``usage_reset_at``);
* ``submit_keys``  each recent submission's idempotency key and its answer, so a
  command retrying a lost reply gets its job back instead of a second one
  (``controller.jobs.submit_keys``);
* ``assocs``, ``users``, ``qos``  the accounting database of ``sacctmgr``
  (Slurm keeps these in slurmdbd): the account tree with its shares and
  decayed usage, each user's default account, and the QOS with their
  priorities and limits (``controller.accounting.accounts``, ``slurmlite.scheduler.limits``).
* ``controller_lease``  which controller holds the store, and its fencing
  epoch (``controller.store.lease``).

A submission is acknowledged only after its row is committed, so a killed
controller loses nothing it answered for.

The same tables serve SQLite and PostgreSQL, so the column types are chosen
for the stricter of the two:

* ``Text`` for anything a user or an agent supplies (names, accounts, paths,
  constraints, host names): PostgreSQL refuses a value longer than a
  ``VARCHAR(n)`` where SQLite silently stores it; ``String(n)`` is kept only
  for short values the controller writes itself (states, flags, keys);
* ``BigInteger`` for uids/gids (up to 2**32 - 2) and priorities
  (priority/basic starts at 4294901759, past a 32-bit ``INTEGER``);
* ``Float`` is double precision on both, enough for epoch seconds;
* ``Boolean`` is ``BOOLEAN`` on PostgreSQL and 0/1 on SQLite; queries compare
  with ``.is_(True)`` so the SQL is valid on both.

These classes are the schema's *description*; the schema itself is made by
the Alembic revisions in ``migrations/versions`` (``migrate.py``).  Changing
a column here means adding a revision: ``tests/api/test_store.py`` fails
while the migrated schema and these classes differ.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Float, Index, Integer, String, Text, false
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class JobRow(Base):
    __tablename__ = "jobs"
    # sacct's default listing: a user's jobs not ended before a time (migration 0010)
    __table_args__ = (Index("ix_jobs_user_end_time", "user", "end_time"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(Text)
    uid: Mapped[int] = mapped_column(BigInteger, index=True)
    gid: Mapped[int] = mapped_column(BigInteger)
    user: Mapped[str] = mapped_column(Text)
    group: Mapped[str] = mapped_column(Text)
    account: Mapped[str] = mapped_column(Text)
    qos: Mapped[str] = mapped_column(Text)
    partition: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), index=True)
    flags: Mapped[str] = mapped_column(String(128), default="", index=True)
    reason: Mapped[str] = mapped_column(Text, default="None")
    state_desc: Mapped[str | None] = mapped_column(Text, nullable=True)
    priority: Mapped[int] = mapped_column(BigInteger, default=1)
    nice: Mapped[int] = mapped_column(Integer, default=0)
    hold: Mapped[str | None] = mapped_column(String(32), nullable=True)
    submit_time: Mapped[float] = mapped_column(Float)
    eligible_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    start_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    end_time: Mapped[float | None] = mapped_column(Float, nullable=True, index=True)
    time_limit: Mapped[int | None] = mapped_column(Integer, nullable=True)
    nodes_min: Mapped[int] = mapped_column(Integer, default=1)
    nodes_max: Mapped[int | None] = mapped_column(Integer, nullable=True)
    ntasks: Mapped[int | None] = mapped_column(Integer, nullable=True)
    ntasks_per_node: Mapped[int | None] = mapped_column(Integer, nullable=True)
    cpus_per_task: Mapped[int] = mapped_column(Integer, default=1)
    num_cpus: Mapped[int] = mapped_column(Integer, default=1)
    mem_per_node: Mapped[int | None] = mapped_column(Integer, nullable=True)
    mem_per_cpu: Mapped[int | None] = mapped_column(Integer, nullable=True)
    mem_per_gpu: Mapped[int | None] = mapped_column(Integer, nullable=True)
    gpus_per_node: Mapped[int] = mapped_column(Integer, default=0)
    gpus_total: Mapped[int | None] = mapped_column(Integer, nullable=True)
    gpu_type: Mapped[str | None] = mapped_column(Text, nullable=True)
    tres_per_node: Mapped[str | None] = mapped_column(Text, nullable=True)
    tres_per_job: Mapped[str | None] = mapped_column(Text, nullable=True)
    nodes: Mapped[str] = mapped_column(Text, default="")  # comma list, config order
    alloc: Mapped[str] = mapped_column(Text, default="[]")  # JSON list of NodeAlloc
    layout: Mapped[str] = mapped_column(Text, default="")  # tasks per node, comma list
    batch_host: Mapped[str | None] = mapped_column(Text, nullable=True)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    derived_exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    # why each restart happened, oldest first: "node_fail:n1,requeue:alice" (slurmlite.restarts)
    restart_causes: Mapped[str] = mapped_column(Text, default="", server_default="")
    # why the last run ended, in words: SystemComment (slurmlite.failures, migration 0023)
    system_comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    # 1 while this run owes the controller's EpilogSlurmctld (controller.sched.ctld_scripts)
    ctld_epilog: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    work_dir: Mapped[str] = mapped_column(Text)
    submit_dir: Mapped[str] = mapped_column(Text)
    submit_host: Mapped[str] = mapped_column(Text)
    alloc_sid: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    command: Mapped[str | None] = mapped_column(Text, nullable=True)
    std_out: Mapped[str | None] = mapped_column(Text, nullable=True)
    std_err: Mapped[str | None] = mapped_column(Text, nullable=True)
    std_in: Mapped[str | None] = mapped_column(Text, nullable=True)
    open_mode: Mapped[str] = mapped_column(Text, default="truncate")
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    req_nodes: Mapped[str] = mapped_column(Text, default="")
    exc_nodes: Mapped[str] = mapped_column(Text, default="")
    exclusive: Mapped[bool] = mapped_column(Boolean, default=False)
    constraint: Mapped[str | None] = mapped_column(Text, nullable=True)
    cancelled_by: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    requeue: Mapped[bool] = mapped_column(Boolean, default=True)
    script: Mapped[str] = mapped_column(Text)
    # the arguments after the script's name (JSON list); NULL: none
    script_args: Mapped[str | None] = mapped_column(Text, nullable=True)
    environment: Mapped[str] = mapped_column(Text, default="{}")  # JSON
    echo_env: Mapped[str] = mapped_column(Text, default="{}")  # JSON
    export: Mapped[str] = mapped_column(Text, default="ALL")
    last_sched_eval: Mapped[float | None] = mapped_column(Float, nullable=True)
    # srun/salloc without a batch script (``controller.steps.allocations``): nothing is launched,
    # the command holds the job; ``keepalive`` is when it last said so
    allocation: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    keepalive: Mapped[float | None] = mapped_column(Float, nullable=True)
    # --signal=[B:]SIG@secs (``controller.sched.warnsignal``): what to send and when; ``warned_run``
    # is the run (``restarts``) that got it, so a requeued run is warned again
    warn_signal: Mapped[int | None] = mapped_column(Integer, nullable=True)
    warn_time: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    warn_batch: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    warned_run: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # multifactor priority (``controller.accounting.priorities``): a priority an administrator set
    # with ``scontrol update job Priority=N`` (replaces the formula), and the last
    # computed breakdown as JSON ``{"norm": {...}, "weighted": {...}}`` (sprio, explain)
    admin_priority: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    prio_factors: Mapped[str | None] = mapped_column(Text, nullable=True)
    # the backfill plan for a pending job: expected start and planned nodes (comma list)
    sched_start: Mapped[float | None] = mapped_column(Float, nullable=True)
    sched_nodes: Mapped[str | None] = mapped_column(Text, nullable=True)
    # fair-share: a running job's usage is charged up to this time (then at its end)
    charged_until: Mapped[float | None] = mapped_column(Float, nullable=True)
    # job arrays (``slurmlite.arrays``, migration 0011): the array's id on every row of it,
    # the task's index, and on the master the indices not yet split off and the %N throttle;
    # ``array_info`` is ``count,min,max,step`` of the whole array (SLURM_ARRAY_TASK_*)
    array_job_id: Mapped[int | None] = mapped_column(Integer, nullable=True, index=True)
    array_task_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    array_pending: Mapped[str | None] = mapped_column(Text, nullable=True)
    array_max_tasks: Mapped[int | None] = mapped_column(Integer, nullable=True)
    array_info: Mapped[str | None] = mapped_column(Text, nullable=True)
    # --dependency (``slurmlite.dependency``, migration 0014): what is still waited for
    # (NULL: nothing), whether it can never hold, and --kill-on-invalid-dep (NULL: the config)
    dependency: Mapped[str | None] = mapped_column(Text, nullable=True, index=True)
    dep_failed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    kill_invalid_dep: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    # --mail-type (canonical, NULL: none) and --mail-user (migration 0020; controller.notify)
    mail_type: Mapped[str | None] = mapped_column(Text, nullable=True)
    mail_user: Mapped[str | None] = mapped_column(Text, nullable=True)


class StepRow(Base):
    __tablename__ = "steps"

    job_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    step_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    state: Mapped[str] = mapped_column(String(16), index=True)
    exit_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    start_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    end_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    nodes: Mapped[str] = mapped_column(Text, default="")
    cpus: Mapped[int] = mapped_column(Integer, default=1)
    mem: Mapped[int] = mapped_column(Integer, default=0)
    ntasks: Mapped[int] = mapped_column(Integer, default=1)
    # srun steps (``controller.steps.create``): the run they belong to, what they hold on each
    # node (JSON ``{node: {"cpus": n, "gpus": [..]}}``; ``{}`` for --overlap) and what
    # each node reported so far (JSON ``{node: [raw status, launch failed]}``)
    restarts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    usage: Mapped[str] = mapped_column(Text, default="{}", server_default="{}")
    reports: Mapped[str] = mapped_column(Text, default="{}", server_default="{}")


class NodeRow(Base):
    __tablename__ = "nodes"

    name: Mapped[str] = mapped_column(Text, primary_key=True)
    addr: Mapped[str] = mapped_column(Text)
    hostname: Mapped[str] = mapped_column(Text)
    port: Mapped[int] = mapped_column(Integer)
    cpus: Mapped[int] = mapped_column(Integer)
    real_memory: Mapped[int] = mapped_column(Integer)
    gpus: Mapped[int] = mapped_column(Integer, default=0)
    gpu_type: Mapped[str | None] = mapped_column(Text, nullable=True)
    features: Mapped[str] = mapped_column(Text, default="")
    weight: Mapped[int] = mapped_column(Integer, default=1)
    dynamic: Mapped[bool] = mapped_column(Boolean, default=False)
    registered: Mapped[bool] = mapped_column(Boolean, default=False)
    down: Mapped[bool] = mapped_column(Boolean, default=False)
    down_for_timeout: Mapped[bool] = mapped_column(Boolean, default=False)
    drain: Mapped[bool] = mapped_column(Boolean, default=False)
    invalid: Mapped[bool] = mapped_column(Boolean, default=False)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    reason_uid: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    reason_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    boot_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    slurmd_start_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    last_busy_time: Mapped[float | None] = mapped_column(Float, nullable=True)
    version: Mapped[str | None] = mapped_column(Text, nullable=True)
    arch: Mapped[str | None] = mapped_column(Text, nullable=True)
    os: Mapped[str | None] = mapped_column(Text, nullable=True)


class MetaRow(Base):
    __tablename__ = "meta"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)


class SubmitKeyRow(Base):
    """A submission's idempotency key and the answer a repeat of it gets.

    ``(uid, key)``: a key matches only for the user who sent it.  ``error_code``
    is set when the first attempt stored its job but refused the caller (a job
    stored FAILED, e.g. unsatisfiable constraints): a repeat gets the same
    refusal.  ``created`` ages keys out (``slurmlite.idempotency.KEY_TTL``).
    """

    __tablename__ = "submit_keys"

    key: Mapped[str] = mapped_column(Text, primary_key=True)  # first: lookups go by key
    uid: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    job_id: Mapped[int] = mapped_column(Integer)
    created: Mapped[float] = mapped_column(Float, index=True)
    error_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error_detail: Mapped[str | None] = mapped_column(Text, nullable=True)


class AssocRow(Base):
    """One association: an account (``user == ""``) or a user under an account.

    Account rows name their ``parent`` account (None only for ``root``).
    ``shares`` None is ``FairShare=parent``.  ``raw_usage`` is the decayed
    usage in billing-seconds charged to this very row (user rows); an
    account's usage is the sum over its subtree, worked out when needed.
    """

    __tablename__ = "assocs"

    account: Mapped[str] = mapped_column(Text, primary_key=True)
    user: Mapped[str] = mapped_column(Text, primary_key=True, default="")
    parent: Mapped[str | None] = mapped_column(Text, nullable=True)
    shares: Mapped[int | None] = mapped_column(Integer, nullable=True, default=1)
    priority: Mapped[int] = mapped_column(Integer, default=0)
    qos: Mapped[str] = mapped_column(Text, default="normal")  # comma list of allowed QOS
    default_qos: Mapped[str | None] = mapped_column(Text, nullable=True)
    description: Mapped[str] = mapped_column(Text, default="")
    organization: Mapped[str] = mapped_column(Text, default="")
    raw_usage: Mapped[float] = mapped_column(Float, default=0.0)


class UserRow(Base):
    """A user known to the accounting database and the account its jobs default to."""

    __tablename__ = "users"

    name: Mapped[str] = mapped_column(Text, primary_key=True)
    default_account: Mapped[str] = mapped_column(Text)
    admin_level: Mapped[str] = mapped_column(String(16), default="None")


class QosRow(Base):
    """A quality of service: a priority, a usage factor and limits (None/"" = no limit).

    TRES limits are Slurm strings such as ``cpu=8,gres/gpu=4``; ``max_wall``
    is minutes.
    """

    __tablename__ = "qos"

    name: Mapped[str] = mapped_column(Text, primary_key=True)
    description: Mapped[str] = mapped_column(Text, default="")
    priority: Mapped[int] = mapped_column(Integer, default=0)
    usage_factor: Mapped[float] = mapped_column(Float, default=1.0)
    max_wall: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_jobs_pu: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_submit_pu: Mapped[int | None] = mapped_column(Integer, nullable=True)
    max_tres_pu: Mapped[str] = mapped_column(Text, default="")
    max_tres_pj: Mapped[str] = mapped_column(Text, default="")
    flags: Mapped[str] = mapped_column(Text, default="")
    # its layer of the idle-GPU policy as set (slurmlite.idlegpus; migration 0021); "": none
    idle_gpu_policy: Mapped[str] = mapped_column(Text, default="", server_default="")


class LeaseRow(Base):
    """Who holds the store's lease, and the fencing epoch (``controller.store.lease``).

    One row (``id`` 1), written only by the controller holding the lock.
    ``released`` is when that holder stopped cleanly (None while it runs,
    or if it died); ``store`` is a random id made with the first lease, so
    an agent can tell this store's epochs from another's.
    """

    __tablename__ = "controller_lease"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    epoch: Mapped[int] = mapped_column(BigInteger)
    store: Mapped[str] = mapped_column(String(64))
    host: Mapped[str] = mapped_column(Text)
    pid: Mapped[int] = mapped_column(BigInteger)
    port: Mapped[int] = mapped_column(Integer)
    socket: Mapped[str] = mapped_column(Text)
    started: Mapped[float] = mapped_column(Float)
    released: Mapped[float | None] = mapped_column(Float, nullable=True)


# the workload runs', measured usage's and notifications' tables (their own modules;
# imported here so that the metadata has them)
from controller.store import (  # noqa: E402, F401
    models_metrics,
    models_notify,
    models_runs,
    models_usage,
)
