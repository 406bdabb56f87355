"""The job store: SQLAlchemy over SQLite (WAL) or PostgreSQL, and every query.

In reading order:

``models.py``      the tables (jobs, steps, nodes, meta, accounts, users, QOS).
``db.py``          opening the store: engine, SQLite pragmas, sessions
                   (``read()`` / ``write()``: one transaction each).
``migrate.py``     Alembic revisions (``migrations/``) applied when it opens.
``lease.py``       one controller per store: the lock, the lease row, the
                   fencing epoch every order to an agent carries.
``rows.py``        rows <-> the wire dataclasses of ``slurmlite.protocol``, and
                   the small list/flag helpers the columns need.
``live_cache.py``  the live jobs in memory, exactly as committed (squeue
                   without a table scan).
``job_query.py``   listings for squeue, ``scontrol show job`` and sacct; a
                   job's owner.

Nothing here imports another controller package.
"""
