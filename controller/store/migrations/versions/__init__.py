"""Alembic revisions, oldest first; each names its ``down_revision``."""
