"""The server's database, behind one small interface (`Storage`): users, submissions and their
queue, login failures, rate-limit buckets, staff releases.

SQLAlchemy core over SQLite (the embedded default) or PostgreSQL (by URL: several server
processes, on one machine or more, then serve one course); server/database.py makes the engine
and server/migrations.py brings the schema to head when a Storage opens. Every state change is
one transaction: a submission row is committed before the upload is acknowledged; a claim moves
one queued row (or one whose lease ran out) to `grading` under a lease and a fresh claim token
in one statement (PostgreSQL: FOR UPDATE SKIP LOCKED, so that concurrent graders never take the
same row; SQLite: its single writer); the holder renews the lease while it grades; a result is
written only under the claim that is current, and logged in `gradings`, so that neither a killed
server nor a grader that outlived its lease loses an acknowledged submission or records one twice.
The tables here are the schema at head: schema/versions/ must agree (a test compares them).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (Column, Float, Index, Integer, MetaData, String, Table, Text, UniqueConstraint, and_, case,
                        func, select, update)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from checks.server import migrations
from checks.server.database import connect

QUEUED, GRADING, DONE, FAILED = "queued", "grading", "done", "failed"  # a submission's status
STUDENT, TA, INSTRUCTOR = "student", "ta", "instructor"
ROLES = (STUDENT, TA, INSTRUCTOR)

metadata = MetaData()
users = Table(
    "users", metadata,
    Column("id", String(200), primary_key=True),  # the roster's student id, or a staff login
    Column("name", Text, nullable=False, default=""),
    Column("email", Text, nullable=False, default=""),
    Column("role", String(20), nullable=False),
    Column("token_id", String(64), unique=True, nullable=False),  # the public half of the token
    Column("token_hash", Text, nullable=False),  # argon2 of the secret half
    Column("created", Float, nullable=False),
    # every session cookie of the user carries it; a new one (sign-out, new token or role) ends them all
    Column("session_gen", String(32), nullable=False, server_default=""),
)
submissions = Table(
    "submissions", metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),  # the queue's order
    Column("id", String(64), unique=True, nullable=False),  # unguessable, what URLs carry
    Column("user_id", String(200), nullable=False, index=True),
    Column("assignment", String(200), nullable=False),
    Column("created", Float, nullable=False),
    Column("status", String(20), nullable=False, index=True),
    Column("path", Text, nullable=False),  # the stored upload, relative to the data folder
    Column("sha256", String(64), nullable=False),
    Column("size", Integer, nullable=False),
    Column("files", Text, nullable=False, default="[]"),  # JSON: the names in the upload
    Column("claimed_by", String(100)),
    Column("lease_until", Float),
    Column("attempts", Integer, nullable=False, default=0),
    Column("started", Float),
    Column("finished", Float),
    Column("result", Text),  # JSON: SubmissionResult.to_dict()
    Column("error", Text),  # the grader's failure, for staff
    Column("claim", String(32)),  # the current claim's token: only its holder records a result
    Column("public_result", Text),  # JSON: the public checks' SubmissionResult.to_dict(), shown at once
    Column("public_error", Text),  # the public run's grader failure, for staff
)
gradings = Table(  # one row per recorded result: "graded exactly once" is one row per submission
    "gradings", metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("submission_id", String(64), nullable=False),
    Column("claim", String(32), nullable=False),
    Column("worker", String(100), nullable=False),
    Column("status", String(20), nullable=False),
    Column("finished", Float, nullable=False),
    UniqueConstraint("claim", name="uq_gradings_claim"),
    Index("ix_gradings_submission_id", "submission_id"),
)
login_failures = Table(
    "login_failures", metadata,
    Column("key", String(300), primary_key=True),  # "account:<id>" or "address:<ip>"
    Column("failures", Integer, nullable=False),
    Column("last", Float, nullable=False),
)
buckets = Table(
    "rate_buckets", metadata,
    Column("key", String(300), primary_key=True),
    Column("tokens", Float, nullable=False),
    Column("updated", Float, nullable=False),
)
releases = Table(
    "releases", metadata,
    Column("assignment", String(200), primary_key=True),
    Column("released_at", Float, nullable=False),
    Column("released_by", String(200), nullable=False),
)


@dataclass(frozen=True)
class User:
    id: str
    name: str
    email: str
    role: str
    token_hash: str = ""
    session_gen: str = ""  # what the user's session cookies must carry (storage.end_sessions)

    @property
    def staff(self) -> bool:
        return self.role in (TA, INSTRUCTOR)


@dataclass(frozen=True)
class SubmissionRow:
    seq: int
    id: str
    user_id: str
    assignment: str
    created: float
    status: str
    path: str
    sha256: str
    size: int
    files: list[str]
    attempts: int
    started: float | None
    finished: float | None
    result: dict | None
    error: str | None
    claim: str | None = None  # the token of the claim being graded (None unless `grading`)
    public_result: dict | None = None  # the public checks' result (students see it before the due date)
    public_error: str | None = None  # the public run's grader failure, for staff only


def _held(submission_id: str, worker: str, claim: str | None) -> list[Any]:
    """The submission is being graded by `worker` (under `claim`, when given, still the current one)."""
    held = [submissions.c.id == submission_id, submissions.c.status == GRADING, submissions.c.claimed_by == worker]
    return held if claim is None else [*held, submissions.c.claim == claim]


def _public_done(assignments: list[str]) -> Any:
    """A submission of one of these assignments whose public checks have run (a result or a failure)."""
    return and_(submissions.c.assignment.in_(assignments),
                (submissions.c.public_result.is_not(None)) | (submissions.c.public_error.is_not(None)))


class Storage:
    """The database of one course server. Thread-safe: every method opens its own connection; safe
    across processes too (PostgreSQL, or SQLite's single writer). DatabaseError (server/database.py)
    names a wrong URL or a database that cannot be reached."""

    def __init__(self, url: str, *, upgrade: bool = True) -> None:
        self.url = url
        self.engine = connect(url)
        self.postgresql = self.engine.dialect.name == "postgresql"
        if upgrade:  # the schema at head before anything reads it (checks serve, roster, staff, db upgrade)
            migrations.upgrade(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A write transaction, holding SQLite's write lock from its start (no upgrade deadlocks)."""
        with self.engine.connect().execution_options(checks_write=True) as conn, conn.begin():
            yield conn

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def _insert(self, table: Table) -> Any:
        """INSERT with ON CONFLICT (both dialects have it; the generic insert does not)."""
        return (postgresql.insert if self.postgresql else sqlite.insert)(table)

    # ------------------------------------------------------------------ users

    def put_user(self, user: User, token_id: str) -> None:
        """Add a user or replace one with the same id (a new token replaces the old); either way
        every session cookie the user had is refused from now on (a new session generation)."""
        row = {"id": user.id, "name": user.name, "email": user.email, "role": user.role, "token_id": token_id,
               "token_hash": user.token_hash, "created": time.time(), "session_gen": _generation()}
        with self._write() as conn:
            conn.execute(users.delete().where(users.c.id == user.id))
            conn.execute(users.insert().values(**row))

    def end_sessions(self, user_id: str) -> str:
        """Refuse every session cookie the user holds (signing out ends the session on the server,
        wherever the cookie was copied to); the new generation, which a new session carries."""
        generation = _generation()
        with self._write() as conn:
            conn.execute(update(users).where(users.c.id == user_id).values(session_gen=generation))
        return generation

    def user(self, user_id: str) -> User | None:
        with self._read() as conn:
            row = conn.execute(select(users).where(users.c.id == user_id)).mappings().first()
        return _user(row)

    def user_by_token_id(self, token_id: str) -> User | None:
        with self._read() as conn:
            row = conn.execute(select(users).where(users.c.token_id == token_id)).mappings().first()
        return _user(row)

    def users(self, role: str | None = None) -> list[User]:
        query = select(users).order_by(users.c.id)
        if role is not None:
            query = query.where(users.c.role == role)
        with self._read() as conn:
            return [_user(row) for row in conn.execute(query).mappings()]  # type: ignore[misc]

    # ------------------------------------------------------------------ submissions and their queue

    def add_submission(self, user_id: str, assignment: str, path: str, sha256: str, size: int,
                       files: list[str], submission_id: str | None = None, created: float | None = None) -> SubmissionRow:
        """Queue a stored upload; committed (synchronous=FULL) when this returns. `created`: the
        receipt time the course policy decided lateness at (default: now)."""
        submission_id = submission_id or new_id()
        with self._write() as conn:
            conn.execute(submissions.insert().values(
                id=submission_id, user_id=user_id, assignment=assignment,
                created=time.time() if created is None else created, status=QUEUED,
                path=path, sha256=sha256, size=size, files=json.dumps(files), attempts=0))
        found = self.submission(submission_id)
        assert found is not None
        return found

    def submission(self, submission_id: str) -> SubmissionRow | None:
        with self._read() as conn:
            row = conn.execute(select(submissions).where(submissions.c.id == submission_id)).mappings().first()
        return _submission(row)

    def submissions(self, *, user_id: str | None = None, assignment: str | None = None,
                    since: float | None = None, limit: int | None = None) -> list[SubmissionRow]:
        """Newest first."""
        query = select(submissions).order_by(submissions.c.seq.desc())
        if user_id is not None:
            query = query.where(submissions.c.user_id == user_id)
        if assignment is not None:
            query = query.where(submissions.c.assignment == assignment)
        if since is not None:
            query = query.where(submissions.c.created >= since)
        if limit is not None:
            query = query.limit(limit)
        with self._read() as conn:
            return [_submission(row) for row in conn.execute(query).mappings()]  # type: ignore[misc]

    def claim(self, worker: str, assignments: Iterable[str], lease_seconds: float,
              public: Iterable[str] = ()) -> SubmissionRow | None:
        """Take the oldest queued submission of these assignments (or one whose lease ran out) under a
        new claim token, in one statement: two graders never hold the same one. On PostgreSQL the
        row is chosen FOR UPDATE SKIP LOCKED (a concurrent claim takes the next one), and the status
        is checked again on the locked row. `public`: the assignments whose public checks this
        grader runs; their submissions whose public checks have run (waiting only for the hidden
        suite, whose results a student may not see yet) come after every other, so that under a
        burst each student first gets what they wait for."""
        now = time.time()
        wanted = list(assignments)
        claimable = (submissions.c.status == QUEUED) | and_(submissions.c.status == GRADING,
                                                            submissions.c.lease_until < now)
        hidden_only = case((_public_done(list(public)), 1), else_=0)
        oldest = (select(submissions.c.seq).where(submissions.c.assignment.in_(wanted), claimable)
                  .order_by(hidden_only, submissions.c.seq).limit(1).with_for_update(skip_locked=True)
                  .scalar_subquery())
        with self._write() as conn:
            row = conn.execute(update(submissions).where(submissions.c.seq == oldest, claimable)
                               .values(status=GRADING, claimed_by=worker, claim=secrets.token_hex(16),
                                       lease_until=now + lease_seconds, attempts=submissions.c.attempts + 1,
                                       started=now)
                               .returning(*submissions.c)).mappings().first()
        return _submission(row)

    def renew(self, submission_id: str, claim: str, lease_seconds: float) -> bool:
        """Extend the lease of a claim still being graded; False when the claim is no longer current
        (its lease ran out and another grader took it, or staff's regrade replaced it)."""
        with self._write() as conn:
            return bool(conn.execute(update(submissions)
                                     .where(submissions.c.id == submission_id, submissions.c.claim == claim,
                                            submissions.c.status == GRADING)
                                     .values(lease_until=time.time() + lease_seconds)).rowcount)

    def complete(self, submission_id: str, worker: str, *, result: dict | None, error: str | None,
                 claim: str | None = None) -> bool:
        """Record the grader's result (DONE) or its failure (FAILED, for staff), only while `worker`
        holds the claim (and `claim`, when given, is still the current one): False when it no longer
        does, and then nothing is written. Each recorded result is logged in `gradings`."""
        now = time.time()
        status = FAILED if error else DONE
        held = _held(submission_id, worker, claim)
        with self._write() as conn:
            current = conn.execute(select(submissions.c.claim).where(*held).with_for_update()).first()
            if current is None:
                return False
            conn.execute(update(submissions).where(*held)
                         .values(status=status, finished=now, result=None if result is None else json.dumps(result),
                                 error=error, lease_until=None, claim=None))
            conn.execute(gradings.insert().values(submission_id=submission_id, claim=current[0] or new_id(),
                                                  worker=worker, status=status, finished=now))
        return True

    def record_public(self, submission_id: str, worker: str, claim: str | None, *, result: dict | None,
                      error: str | None) -> bool:
        """Record the public checks' result (or the public run's failure) while `worker` still holds
        the claim: written before the hidden suite runs, so that a student reads it at once. False,
        and nothing written, when the claim is no longer current."""
        held = _held(submission_id, worker, claim)
        with self._write() as conn:
            return bool(conn.execute(update(submissions).where(*held).values(
                public_result=None if result is None else json.dumps(result), public_error=error)).rowcount)

    def defer(self, submission_id: str, worker: str, claim: str | None) -> bool:
        """Give a claimed submission whose public checks were recorded back to the queue, for its
        hidden suite later (Storage.claim takes it after the submissions still waiting for their
        public checks); not counted as a try. False, and nothing changed, when the claim is no
        longer current."""
        held = _held(submission_id, worker, claim)
        with self._write() as conn:
            return bool(conn.execute(update(submissions).where(*held).values(
                status=QUEUED, claimed_by=None, lease_until=None, claim=None,
                attempts=submissions.c.attempts - 1)).rowcount)

    def public_waiting(self, assignments: Iterable[str]) -> bool:
        """Whether a queued submission of these assignments waits for its public checks."""
        wanted = list(assignments)
        with self._read() as conn:
            return conn.execute(select(submissions.c.seq).where(
                submissions.c.status == QUEUED, submissions.c.assignment.in_(wanted),
                ~_public_done(wanted)).limit(1)).first() is not None

    def gradings(self, submission_id: str | None = None) -> list[tuple[str, str, str]]:
        """The results recorded, oldest first: (submission id, grader, status)."""
        query = select(gradings.c.submission_id, gradings.c.worker, gradings.c.status).order_by(gradings.c.seq)
        if submission_id is not None:
            query = query.where(gradings.c.submission_id == submission_id)
        with self._read() as conn:
            return [tuple(row) for row in conn.execute(query)]  # type: ignore[misc]

    def release_claim(self, submission_id: str, worker: str, claim: str | None = None) -> None:
        """Give a claimed submission back to the queue (its grader went away before grading it)."""
        held = _held(submission_id, worker, claim)
        with self._write() as conn:
            conn.execute(update(submissions).where(*held).values(status=QUEUED, claimed_by=None, lease_until=None,
                                                                 claim=None))

    def requeue_orphans(self) -> int:
        """Every submission left `grading` by a server that died: queued again. Only for a server
        that holds the course alone (SQLite's lock file); several servers rely on leases instead."""
        with self._write() as conn:
            return conn.execute(update(submissions).where(submissions.c.status == GRADING)
                                .values(status=QUEUED, claimed_by=None, lease_until=None, claim=None)).rowcount

    def requeue(self, submission_ids: Iterable[str]) -> int:
        """Grade these again (staff's regrade); one being graded now is left to finish."""
        ids = list(submission_ids)
        with self._write() as conn:
            return conn.execute(update(submissions).where(submissions.c.id.in_(ids), submissions.c.status != GRADING)
                                .values(status=QUEUED, claimed_by=None, lease_until=None, claim=None, result=None,
                                        error=None, finished=None, public_result=None, public_error=None)).rowcount

    def queue_position(self, row: SubmissionRow) -> int:
        """1 for the next to be graded; 0 when it is not waiting."""
        if row.status != QUEUED:
            return 0
        with self._read() as conn:
            ahead = conn.execute(select(func.count()).select_from(submissions)
                                 .where(submissions.c.status == QUEUED, submissions.c.seq < row.seq)).scalar_one()
        return int(ahead) + 1

    def queue_state(self) -> tuple[int, int, float | None]:
        """(queued, being graded, when the oldest queued arrived)."""
        with self._read() as conn:
            counts = dict(conn.execute(select(submissions.c.status, func.count()).group_by(submissions.c.status)
                                       .where(submissions.c.status.in_([QUEUED, GRADING]))).all())
            oldest = conn.execute(select(func.min(submissions.c.created))
                                  .where(submissions.c.status == QUEUED)).scalar_one()
        return int(counts.get(QUEUED, 0)), int(counts.get(GRADING, 0)), oldest

    def assignment_totals(self) -> list[tuple[str, str, int, float, int]]:
        """Per assignment and status: (assignment, status, submissions, seconds spent grading those
        that finished, how many of them finished), for /metrics: the database's, so that every server
        process of the course reports the same."""
        graded = submissions.c.finished.is_not(None) & submissions.c.started.is_not(None)
        seconds = func.sum(case((graded, submissions.c.finished - submissions.c.started), else_=0.0))
        finished = func.sum(case((graded, 1), else_=0))
        query = (select(submissions.c.assignment, submissions.c.status, func.count(), seconds, finished)
                 .group_by(submissions.c.assignment, submissions.c.status))
        with self._read() as conn:
            return [(a, st, int(n), float(sec or 0.0), int(done or 0)) for a, st, n, sec, done in conn.execute(query)]

    # ------------------------------------------------------------------ login backoff and rate limits

    def login_failures(self, key: str) -> tuple[int, float]:
        """(failures counted, when the last was) for an account or an address."""
        with self._read() as conn:
            row = conn.execute(select(login_failures.c.failures, login_failures.c.last)
                               .where(login_failures.c.key == key)).first()
        return (int(row[0]), float(row[1])) if row else (0, 0.0)

    def count_login_failure(self, key: str) -> None:
        """One more failure, counted in one statement (an upsert): two server processes counting
        failures of the same account at once both count."""
        now = time.time()
        with self._write() as conn:
            statement = self._insert(login_failures).values(key=key, failures=1, last=now)
            conn.execute(statement.on_conflict_do_update(
                index_elements=[login_failures.c.key],
                set_={"failures": login_failures.c.failures + 1, "last": now}))

    def clear_login_failures(self, key: str) -> None:
        with self._write() as conn:
            conn.execute(login_failures.delete().where(login_failures.c.key == key))

    def take_token(self, key: str, capacity: int, window: float) -> float:
        """Token bucket: `capacity` tokens, refilled evenly over `window` seconds. Takes one and
        returns 0, or returns how many seconds until one is there (nothing taken). The bucket lives
        in the database and its row is locked while it is read and written (SQLite's writer lock;
        PostgreSQL's FOR UPDATE), so that every server process of the course draws on one bucket."""
        rate = capacity / window
        with self._write() as conn:
            now = time.time()
            conn.execute(self._insert(buckets).values(key=key, tokens=capacity, updated=now)
                         .on_conflict_do_nothing(index_elements=[buckets.c.key]))
            row = conn.execute(select(buckets.c.tokens, buckets.c.updated).where(buckets.c.key == key)
                               .with_for_update()).one()
            tokens = min(capacity, row[0] + max(0.0, now - row[1]) * rate)
            if tokens < 1:
                return (1 - tokens) / rate
            conn.execute(update(buckets).where(buckets.c.key == key).values(tokens=tokens - 1, updated=now))
            return 0.0

    def give_back_token(self, key: str, capacity: int) -> None:
        """Undo a take_token (the request it paid for was refused before anything was stored)."""
        with self._write() as conn:
            conn.execute(update(buckets).where(buckets.c.key == key)
                         .values(tokens=case((buckets.c.tokens + 1 > capacity, capacity),
                                             else_=buckets.c.tokens + 1)))

    # ------------------------------------------------------------------ staff's release of hidden results

    def release_hidden(self, assignment: str, by: str) -> None:
        now = time.time()
        with self._write() as conn:
            conn.execute(self._insert(releases).values(assignment=assignment, released_at=now, released_by=by)
                         .on_conflict_do_update(index_elements=[releases.c.assignment],
                                                set_={"released_at": now, "released_by": by}))

    def hidden_released(self, assignment: str) -> bool:
        with self._read() as conn:
            return conn.execute(select(releases.c.assignment).where(releases.c.assignment == assignment)).first() \
                is not None


def new_id() -> str:
    """A submission's id: 128 random bits, so that ids cannot be guessed (authorisation still decides)."""
    return secrets.token_urlsafe(16)


def _user(row: Any) -> User | None:
    if row is None:
        return None
    return User(row["id"], row["name"], row["email"], row["role"], row["token_hash"], row["session_gen"])


def _generation() -> str:
    return secrets.token_urlsafe(16)


def _submission(row: Any) -> SubmissionRow | None:
    if row is None:
        return None
    return SubmissionRow(row["seq"], row["id"], row["user_id"], row["assignment"], row["created"], row["status"],
                         row["path"], row["sha256"], row["size"], json.loads(row["files"] or "[]"), row["attempts"],
                         row["started"], row["finished"], json.loads(row["result"]) if row["result"] else None,
                         row["error"], row.get("claim"),
                         json.loads(row["public_result"]) if row.get("public_result") else None,
                         row.get("public_error"))
