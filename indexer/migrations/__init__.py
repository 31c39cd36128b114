"""Alembic revisions of the metadata database (driven from :mod:`indexer.db`)."""
