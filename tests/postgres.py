"""A real PostgreSQL for the tests: Debian's server binaries, a cluster made by initdb in a fresh
folder of the system's temp dir, listening on 127.0.0.1 (a free port) and a unix socket in that
folder, stopped (pg_ctl stop -m immediate) and removed at the end.

initdb refuses to run as root, so under root (CI's containers) the cluster belongs to the
`postgres` user and its commands run through runuser. Without the binaries, or without psycopg,
the tests that need it skip, naming what is missing (benchmarks/serve_burst.py says so too).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from serving import free_port

BINARIES = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
                  if p.parent.parent.name.isdigit() else 0)


@dataclass(frozen=True)
class Postgres:
    """A running cluster: `url(name)` is a database of it that `create(name)` made."""

    port: int
    folder: Path

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://checks@127.0.0.1:{self.port}/{database}"

    def create(self, database: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
        return self.url(database)


def postgres_bin() -> Path | None:
    return BINARIES[-1].parent if BINARIES else None


class PostgresMissing(Exception):
    """PostgreSQL cannot be run here; str() says what to install."""


def missing_postgres() -> str | None:
    """Why a PostgreSQL cannot be started here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "PostgreSQL needs psycopg 3: pip install -c constraints.txt -e '.[postgres]'"
    if postgres_bin() is None:
        return "PostgreSQL's server binaries are not installed (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no `postgres` user to run initdb as"
    return None


def _as_owner(command: list[str]) -> list[str]:
    """initdb and pg_ctl refuse root: run them as `postgres` then."""
    if os.geteuid() != 0:
        return command
    runuser = shutil.which("runuser")
    return [runuser, "-u", "postgres", "--", *command] if runuser else ["su", "postgres", "-s", "/bin/sh", "-c",
                                                                        " ".join(command)]


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    """A fresh cluster on 127.0.0.1 (trust for the `checks` superuser, from this machine only)."""
    reason = missing_postgres()
    if reason:
        raise PostgresMissing(reason)
    binaries = postgres_bin()
    assert binaries is not None
    folder = Path(tempfile.mkdtemp(prefix="checks-pg-"))
    data = folder / "data"
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    port = free_port()
    log = folder / "server.log"
    started = False
    try:
        subprocess.run(_as_owner([str(binaries / "initdb"), "-D", str(data), "-U", "checks", "--auth=trust",
                                  "-E", "UTF8", "--no-sync", "--locale=C"]),
                       check=True, capture_output=True, timeout=120)
        options = f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c max_connections=200"
        done = subprocess.run(_as_owner([str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
                                         "-o", options, "start"]), capture_output=True, text=True, timeout=90)
        started = True
        if done.returncode != 0:
            raise AssertionError(f"PostgreSQL did not start: {done.stdout}{done.stderr}"
                                 f"{log.read_text() if log.exists() else ''}")
        yield Postgres(port, folder)
    finally:
        if started:
            subprocess.run(_as_owner([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
                           capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)
