"""Alembic's entry point, called by server/migrations.py with an open connection in a transaction
(config.attributes["connection"]): the migrations run inside it, so that they commit together."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes["connection"]
# SQLite alters a table by copying it (batch mode); PostgreSQL alters in place, in one transaction
context.configure(connection=connection, target_metadata=None, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
