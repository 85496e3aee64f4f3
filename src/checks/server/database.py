"""Which database a course server uses and how it connects: a URL read and checked (SQLite or
PostgreSQL), the engine made for it, and errors that name the URL (its password hidden).

Kept apart from storage.py (what is stored) and migrations.py (how the schema changes), so that
a wrong URL or a database that cannot be reached is refused here, before anything is served,
with a sentence an operator can act on.

SQLite runs in WAL mode with synchronous=FULL and takes its write lock when a write transaction
begins (one writer at a time, no upgrade deadlocks). PostgreSQL goes through psycopg 3 (the
`postgres` extra); `postgresql://` and `postgres://` mean that driver.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from checks.course.assignment import CourseError

SQLITE, POSTGRESQL = "sqlite", "postgresql"
CONNECT_TIMEOUT = 10  # seconds to reach a PostgreSQL server before saying it cannot be reached
URL_FORMS = "sqlite:///PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE"


class DatabaseError(CourseError):
    """The database URL is wrong, or the database cannot be reached; str() names it and what to check."""


def parse_url(url: str) -> URL:
    """The URL, checked: SQLite or PostgreSQL (by psycopg 3); DatabaseError names a wrong one."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseError(f"the database URL {url!r} cannot be read: write {URL_FORMS}") from None
    backend = parsed.get_backend_name()
    if backend == "postgres":  # Heroku's and libpq's spelling
        parsed = parsed.set(drivername="postgresql")
        backend = POSTGRESQL
    if backend == SQLITE:
        if parsed.get_driver_name() not in ("pysqlite", ""):
            raise DatabaseError(f"the database URL {shown(parsed)} names the driver {parsed.get_driver_name()}: "
                                "write sqlite:///PATH")
        if not parsed.database or parsed.database == ":memory:":
            raise DatabaseError(f"the database URL {shown(parsed)} names no file: a course's database is "
                                "sqlite:///PATH (four slashes for an absolute path)")
        return parsed
    if backend == POSTGRESQL:
        if parsed.get_driver_name() not in ("psycopg", "psycopg2", ""):
            raise DatabaseError(f"the database URL {shown(parsed)} names the driver {parsed.get_driver_name()}: "
                                "write postgresql://USER@HOST/DATABASE (psycopg 3 connects)")
        if not parsed.database:
            raise DatabaseError(f"the database URL {shown(parsed)} names no database: write {URL_FORMS}")
        return parsed.set(drivername="postgresql+psycopg")
    raise DatabaseError(f"the database URL {shown(parsed)} is for {backend}: a course server keeps its data in "
                        f"SQLite or PostgreSQL ({URL_FORMS})")


def shown(url: URL | str) -> str:
    """The URL as logs and errors show it: the password replaced by ***."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        return repr(url)
    return parsed.render_as_string(hide_password=True)


def connect(url: str) -> Engine:
    """An engine for `url`, with one connection made to prove the database is there."""
    parsed = parse_url(url)
    if parsed.get_backend_name() == SQLITE:
        Path(parsed.database or "").parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        engine = create_engine(parsed, connect_args={"check_same_thread": False, "timeout": 30})
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
    else:
        try:
            engine = create_engine(parsed, pool_pre_ping=True, pool_size=10, max_overflow=20,
                                   connect_args={"connect_timeout": CONNECT_TIMEOUT,
                                                 "application_name": "checks serve"})
        except (NoSuchModuleError, ImportError) as error:
            raise DatabaseError(f"{shown(parsed)}: PostgreSQL needs psycopg 3 ({error}): "
                                "pip install -c constraints.txt -e '.[serve,postgres]'") from None
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except DBAPIError as error:
        engine.dispose()
        raise DatabaseError(f"cannot reach the database at {shown(parsed)}: {_reason(error)}") from None
    return engine


def is_sqlite(engine_or_url: Engine | str) -> bool:
    if isinstance(engine_or_url, Engine):
        return engine_or_url.dialect.name == SQLITE
    return parse_url(engine_or_url).get_backend_name() == SQLITE


def _reason(error: DBAPIError) -> str:
    """The driver's own first line (a refused connection, a wrong password, no such database)."""
    lines = [line.strip() for line in str(error.orig).splitlines() if line.strip()]
    return lines[0] if lines else type(error.orig).__name__


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    """WAL (readers never wait for the writer), FULL sync (a commit survives a power cut), and our
    own BEGIN (pysqlite's would start write transactions too late)."""
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    """BEGIN IMMEDIATE for writes: SQLite's single writer is chosen when the transaction starts."""
    conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("checks_write") else "BEGIN")
