"""The course server's schema, moved forward by Alembic (the scripts in schema/versions/):
`checks serve` applies them on start, and so does `checks db upgrade`.

Migrating runs in one transaction that holds the database's writer lock (SQLite's BEGIN
IMMEDIATE; a PostgreSQL advisory lock), so that several server processes starting together
upgrade once and the others find the schema already at head. A database made before Alembic
(by metadata.create_all: the first schema, no alembic_version table) is stamped as revision 0001
first, then upgraded like any other.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

from checks.server.database import POSTGRESQL, DatabaseError, shown

SCRIPTS = Path(__file__).parent / "schema"
FIRST = "0001"  # the schema that create_all made before migrations existed
ADVISORY_LOCK = 0x636865636B73  # "checks": serialises migrations of one PostgreSQL database


def _config(conn: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(SCRIPTS))
    if conn is not None:
        config.attributes["connection"] = conn
    return config


def head() -> str:
    """The newest revision this version of checks knows."""
    found = ScriptDirectory.from_config(_config()).get_current_head()
    assert found is not None
    return found


def current(engine: Engine) -> str | None:
    """The database's revision (None: empty; FIRST for a database made before migrations)."""
    with engine.connect() as conn:
        revision = MigrationContext.configure(conn).get_current_revision()
        if revision is None and inspect(conn).has_table("submissions"):
            return FIRST
        return revision


def upgrade(engine: Engine, revision: str = "head") -> tuple[str | None, str]:
    """Bring the schema to `revision` (default: head); (revision before, revision after)."""
    known = {script.revision for script in ScriptDirectory.from_config(_config()).walk_revisions()}
    with engine.connect().execution_options(checks_write=True) as conn, conn.begin():
        if conn.dialect.name == POSTGRESQL:
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK})
        before = MigrationContext.configure(conn).get_current_revision()
        if before is None and inspect(conn).has_table("submissions"):
            command.stamp(_config(conn), FIRST)  # made by the first release, before Alembic
            before = FIRST
        if before is not None and before not in known:
            raise DatabaseError(f"the database at {shown(engine.url)} is at schema revision {before}, newer than "
                                f"this checks knows (head {head()}): upgrade checks on this machine")
        command.upgrade(_config(conn), revision)
        after = MigrationContext.configure(conn).get_current_revision()
    return before, after or ""


def downgrade(engine: Engine, revision: str) -> None:
    """Step the schema back to `revision` (for tests and for undoing an upgrade by hand)."""
    with engine.connect().execution_options(checks_write=True) as conn, conn.begin():
        if conn.dialect.name == POSTGRESQL:
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK})
        command.downgrade(_config(conn), revision)
