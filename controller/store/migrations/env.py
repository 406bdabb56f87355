"""Alembic's environment for the job store.

Alembic executes this file for every command.  slurmlite runs the commands
from code (``controller.store.migrate``) and passes the open connection in
``config.attributes["connection"]``; without one (``sql=True`` runs, or a
script that set ``sqlalchemy.url``) the URL in the configuration is used.

``target_metadata`` is the models' metadata, which is what lets the tests ask
Alembic's autogenerate comparison whether the migrated schema and
``models.py`` still agree.  ``render_as_batch`` on SQLite makes future
``ALTER`` operations work there (SQLite rebuilds the table instead).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from controller.store.models import Base

config = context.config


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    if context.is_offline_mode():
        context.configure(url=url, target_metadata=Base.metadata, literal_binds=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    from controller.store.db import make_engine

    engine = make_engine(url or "")
    try:
        with engine.begin() as conn:
            _configure(conn)
    finally:
        engine.dispose()


run()
