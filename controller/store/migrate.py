"""Schema migrations: Alembic revisions applied from code when the store opens.

The schema of the job store is the chain of revisions in
``migrations/versions`` (``0001_initial`` creates the four tables of
``models.py``; a later change to ``models.py`` comes with the next revision).
``Database(url)`` calls :func:`upgrade`, which brings any store to the newest
revision ("head") in one transaction (DDL is transactional in PostgreSQL and
in SQLite; a crash half-way leaves the store as it was):

* a new, empty database gets every revision in order;
* a database already at head is left alone (Alembic finds nothing to run);
* a database made by slurmlite before migrations existed (tables present,
  no ``alembic_version`` table) is first *stamped* at ``0001`` — its tables
  are exactly that revision — and then upgraded like any other.

No ``alembic.ini`` is read: the configuration is built here, and the open
connection is handed to ``migrations/env.py`` through
``Config.attributes["connection"]``, so migrating uses the same engine (and
the same SQLite pragmas) as the controller.  The transaction first takes a
lock — an advisory lock on PostgreSQL, SQLite's write lock (``BEGIN
IMMEDIATE``) — so two controllers starting on one database migrate one after
the other instead of both creating the tables.

Example: a fresh ``sqlite:///tmp/x.db`` opened twice::

    Database(url)   # runs 0001_initial: jobs, steps, nodes, meta, alembic_version
    Database(url)   # current == head: nothing runs

To see the SQL a revision runs (e.g. for a DBA) without touching a database::

    cfg = alembic_config()
    cfg.set_main_option("sqlalchemy.url", "postgresql+psycopg://")
    command.upgrade(cfg, "head", sql=True)
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, inspect, text

MIGRATIONS = Path(__file__).with_name("migrations")
FIRST_REVISION = "0001"
# The tables 0001 creates: a store holding all of them and no version table
# predates migrations and is stamped at 0001.
FIRST_TABLES = ("jobs", "steps", "nodes", "meta")
# pg_advisory_xact_lock key: any constant shared by every slurmlite controller
# ("slml" in ASCII).
ADVISORY_LOCK = 0x736C6D6C


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's configuration for the store, without an ini file."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "no migration revisions found"
    return head


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at (None: never migrated)."""
    return MigrationContext.configure(connection).get_current_revision()


def store_revision(engine: Engine) -> tuple[str | None, str]:
    """The revision the store behind ``engine`` is at, and its kind (``sqlite``,
    ``postgresql``): what ``slurmlite version`` shows, read-only."""
    with engine.connect() as conn:
        return current_revision(conn), conn.dialect.name


def upgrade(engine: Engine) -> None:
    """Bring the store behind ``engine`` to head; a no-op when it is there."""
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK})
        elif conn.dialect.name == "sqlite":
            # Python's sqlite3 opens a transaction only before INSERT/UPDATE/DELETE, so
            # CREATE/ALTER would each commit alone; an explicit BEGIN makes the whole
            # upgrade atomic, and IMMEDIATE takes the write lock before anything is read.
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        cfg = alembic_config(conn)
        if current_revision(conn) is None and _predates_migrations(conn):
            command.stamp(cfg, FIRST_REVISION)
        command.upgrade(cfg, "head")


def _predates_migrations(conn: Connection) -> bool:
    tables = set(inspect(conn).get_table_names())
    return all(t in tables for t in FIRST_TABLES)
