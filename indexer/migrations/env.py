"""Alembic's entry point: runs on the connection :func:`indexer.db.alembic_config` carries."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `codeask db upgrade` (indexer.db.upgrade)")
context.configure(
    connection=connection,
    # Upgrades need no models; comparing does (indexer.db.schema_drift) and brings its own.
    target_metadata=context.config.attributes.get("metadata"),
    compare_type=True,
    render_as_batch=True,  # SQLite alters a table by copying it
)
with context.begin_transaction():
    context.run_migrations()
