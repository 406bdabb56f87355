"""Alembic environment and revisions of the job store (see ``controller.store.migrate``)."""
