"""DIR/gradebook.sqlite: the durable record of a grade run, and its single source of truth.

A submission is graded when, and only when, its row is committed: one transaction per submission
(WAL journal, synchronous=FULL), so a run killed at any moment leaves every finished submission
whole and nothing half-written. Everything else in the output folder (results.json, feedback.md,
gradebook.csv, report.html) is rendered from the database and rewritten from it whenever it is
missing or out of date: a run killed between the commit and the files is repaired by the next.
A results.json with no row behind it does not count as graded.

A run holds DIR/gradebook.lock (lock_folder) while it writes the folder: two runs never interleave.
It opens only a gradebook it wrote: a link, a database of other tables or columns, or one of a
newer schema is refused with a GradebookError naming the file, before anything is written.
Connections are opened for each read or write and closed at once: the grader forks its sandbox
while it grades, and no descriptor of the database may be open in the process then.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import json
import os
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from checks.config.errors import UsageError
from checks.course import inert
from checks.suites.scoring import Adjustment, QuestionResult, SubmissionResult

DB_FILE = "gradebook.sqlite"
LOCK_FILE = "gradebook.lock"  # held by the run that writes the folder
SCHEMA_VERSION = 3  # 2: questions.diagnoses and .not_started, submissions.suite_fingerprint, superseded;
# 3: submissions.submitted_at, adjustments (the raw score, the late penalty and manual adjustments kept apart)
GRADED, GRADER_ERROR = "graded", "grader_error"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id             INTEGER PRIMARY KEY,
    assignment     TEXT NOT NULL,
    grader_version TEXT NOT NULL,
    started_at     TEXT NOT NULL,             -- UTC, ISO 8601
    finished_at    TEXT,                      -- NULL while running, or when the run was killed
    status         TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'finished', 'interrupted')),
    jobs           INTEGER,
    regrade        INTEGER NOT NULL DEFAULT 0,
    submissions    INTEGER NOT NULL DEFAULT 0, -- named on the command line
    to_grade       INTEGER NOT NULL DEFAULT 0, -- of which not already graded
    graded         INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS submissions (
    name           TEXT PRIMARY KEY,
    assignment     TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('graded', 'grader_error')),
    score          REAL NOT NULL,
    max_score      REAL NOT NULL,
    error          TEXT NOT NULL DEFAULT '',   -- why the grader itself could not grade it
    warnings       TEXT NOT NULL DEFAULT '[]', -- JSON list of strings
    devices        TEXT NOT NULL DEFAULT '',   -- comma separated: cpu,cuda
    sandbox        TEXT NOT NULL DEFAULT '',
    sandbox_uid    INTEGER,                    -- the uid its sandbox ran as, where it had its own
    seconds        REAL NOT NULL DEFAULT 0,
    extra          TEXT NOT NULL DEFAULT '{}', -- JSON: any other field of the result
    source         TEXT NOT NULL DEFAULT '',   -- the folder or zip it was read from
    fingerprint    TEXT NOT NULL DEFAULT '',   -- of its content: a changed submission is graded again
    suite_fingerprint TEXT,                    -- of the hidden suite it was graded with; NULL before schema 2
    grader_version TEXT NOT NULL,
    graded_at      TEXT NOT NULL,              -- UTC, ISO 8601
    run_id         INTEGER REFERENCES runs(id),
    submitted_at   TEXT                        -- UTC, ISO 8601, as the run was told (--submitted-at); NULL unknown
);
CREATE TABLE IF NOT EXISTS questions (
    submission     TEXT NOT NULL REFERENCES submissions(name) ON DELETE CASCADE,
    position       INTEGER NOT NULL,
    qid            TEXT NOT NULL,
    score          REAL NOT NULL,
    max_score      REAL NOT NULL,
    passed         INTEGER NOT NULL,
    passed_cases   INTEGER NOT NULL,
    total_cases    INTEGER NOT NULL,
    feedback       TEXT NOT NULL,
    diagnoses      TEXT,                       -- JSON list: the likely mistakes named; NULL before schema 2
    not_started    INTEGER,                    -- still the stub; NULL before schema 2
    PRIMARY KEY (submission, position)
);
CREATE INDEX IF NOT EXISTS questions_by_qid ON questions (qid);
-- what changed a submission's raw score (its `score`), each with its reason: the late penalty the
-- course policy decided, staff's manual adjustments; final score = max(0, score + sum(points))
CREATE TABLE IF NOT EXISTS adjustments (
    submission     TEXT NOT NULL REFERENCES submissions(name) ON DELETE CASCADE,
    position       INTEGER NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('late', 'manual')),
    points         REAL NOT NULL,              -- added to the raw score: a penalty is negative
    reason         TEXT NOT NULL,
    decided_by     TEXT NOT NULL,              -- "policy", or the staff member
    decided_at     TEXT NOT NULL,              -- UTC, ISO 8601
    PRIMARY KEY (submission, position)
);
-- a submission's grade as it was before a later run graded it again: what a regrade changed
CREATE TABLE IF NOT EXISTS superseded (
    name           TEXT NOT NULL,
    replaced_by    INTEGER NOT NULL,           -- the run that graded it again
    status         TEXT NOT NULL,
    score          REAL NOT NULL,
    fingerprint    TEXT NOT NULL,
    suite_fingerprint TEXT,
    grader_version TEXT NOT NULL,
    graded_at      TEXT NOT NULL,
    run_id         INTEGER,
    questions      TEXT NOT NULL,              -- JSON list of [qid, score, max_score]
    PRIMARY KEY (name, replaced_by)
);
"""


class GradebookError(UsageError):
    """The gradebook cannot be used as it is; str() says why and what to do."""


class GradebookUnwritable(GradebookError):
    """The gradebook could not be written: a full disk, a quota, a file size limit, an I/O error."""


# SQLite's primary result codes for those: SQLITE_READONLY, SQLITE_IOERR, SQLITE_CANTOPEN, SQLITE_FULL
_UNWRITABLE = {8, 10, 13, 14}


class FolderInUse(GradebookError):
    """Another run holds the output folder's lock."""


@contextlib.contextmanager
def lock_folder(out_dir: Path) -> Iterator[None]:
    """Hold DIR/gradebook.lock (flock) while a run writes DIR: a second run into the same folder
    stops at once, before it writes anything. The kernel drops the lock when the holder dies."""
    out_dir.mkdir(parents=True, exist_ok=True)
    try:  # O_NOFOLLOW: a link planted as the lock would have its target truncated
        fd = os.open(out_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise GradebookError(f"{out_dir / LOCK_FILE} is a symbolic link, not a lock checks made: "
                             "remove it, or grade into another --out folder") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            raise FolderInUse(f"{out_dir} is in use by another `checks grade` run"
                              + (f" (process {holder})" if holder.isdigit() else "")
                              + ": wait for it to finish, or grade into another --out folder") from None
        with contextlib.suppress(OSError):  # only there to name the holder; a full disk may refuse it
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)


def refuse_unless_regular(*paths: Path) -> None:
    """GradebookError for the first of `paths` that is a link or not a regular file: the grader
    writes only files it made, never through a link planted in its output folder."""
    for path in paths:
        if path.is_symlink():
            raise GradebookError(f"{path} is a symbolic link: checks writes only files it made; "
                                 "remove it, or grade into another --out folder")
        if path.exists() and not path.is_file():
            raise GradebookError(f"{path} is not a regular file: remove it, or grade into another --out folder")


def _expected_columns() -> dict[str, list[str]]:
    """Each table of SCHEMA and its columns, as SQLite reports them."""
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        db.executescript(SCHEMA)
        return _columns(db)


def _columns(db: sqlite3.Connection) -> dict[str, list[str]]:
    tables = [name for (name,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    return {table: [row[1] for row in db.execute(f"PRAGMA table_info({_quoted(table)})")] for table in tables}


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _refuse_foreign_tables(path: Path, db: sqlite3.Connection, version: int) -> None:
    """A database checks did not write (tables of its own, or ours with other columns) is refused
    before the schema is written into it."""
    found = _columns(db)
    if not found:
        return  # a new (or empty) file
    expected = _expected_columns()
    if version == 0:
        raise GradebookError(f"{path} is not a gradebook written by checks (it holds the tables "
                             f"{', '.join(sorted(found)[:5])}): move it aside, or grade into another --out folder")
    unknown = [f"{kind} {name}" for kind, name in db.execute(
        "SELECT type, name FROM sqlite_master WHERE type NOT IN ('table', 'index') ORDER BY name")]  # triggers, views
    unknown += [f"table {table}" for table in found if table not in expected]
    unknown += [f"{table}.{column}" for table, columns in found.items() if table in expected
                for column in columns if column not in expected[table]]
    if unknown:
        raise GradebookError(f"{path} has what checks never writes ({', '.join(unknown[:5])}"
                             f"{' and more' if len(unknown) > 5 else ''}): it was changed by hand or by another "
                             "tool; move it aside, or grade into another --out folder")


# columns added since schema 1, each with its definition: an older gradebook gets them, NULL where
# the older run did not know the value (the readers say "unknown" then)
_ADDED_COLUMNS = {("submissions", "suite_fingerprint"): "TEXT", ("questions", "diagnoses"): "TEXT",
                  ("questions", "not_started"): "INTEGER", ("submissions", "submitted_at"): "TEXT"}


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """Bring a gradebook of an older schema up to this one, inside the caller's transaction."""
    found = _columns(db)
    for (table, column), definition in _ADDED_COLUMNS.items():
        if column not in found.get(table, []):
            db.execute(f"ALTER TABLE {_quoted(table)} ADD COLUMN {_quoted(column)} {definition}")


def _question_ids(db: sqlite3.Connection) -> set[str]:
    """Every question id the gradebook holds a score for: the columns gradebook.csv may have."""
    return {qid for (qid,) in db.execute("SELECT DISTINCT qid FROM questions")}


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclasses.dataclass(frozen=True)
class Graded:
    """One submission as the gradebook holds it: the result and how, when and from what it came."""

    result: SubmissionResult
    grader_version: str
    graded_at: str
    source: str = ""
    fingerprint: str = ""
    run_id: int | None = None
    suite_fingerprint: str | None = None  # of the hidden suite it was graded with; None: not recorded

    @property
    def name(self) -> str:
        return self.result.name

    @property
    def ok(self) -> bool:
        """False when the grader itself failed on it: it is graded again by the next run."""
        return not self.result.error


@dataclasses.dataclass(frozen=True)
class Entry:
    """What deciding whether to grade a submission again needs to know about it."""

    fingerprint: str
    ok: bool


class Gradebook:
    """DIR/gradebook.sqlite for one assignment."""

    def __init__(self, path: Path, assignment: str, *,
                 before_writing: Callable[[set[str]], None] | None = None) -> None:
        """Open (or create) the gradebook, refusing one checks did not write; `before_writing` is
        called with the question ids it holds once it is known to be ours, before anything is
        written (the batch checks gradebook.csv there)."""
        self.path = path
        self.assignment = assignment
        path.parent.mkdir(parents=True, exist_ok=True)
        refuse_unless_regular(path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal")))
        if before_writing is not None and not path.exists():
            before_writing(set())  # checked before the new file is made
        with self._connect() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise GradebookError(f"{path} was written by a newer version of checks (schema {version}); "
                                     "upgrade checks or grade into another --out folder")
            _refuse_foreign_tables(path, db, version)
            if before_writing is not None and version:
                before_writing(_question_ids(db))
            # one transaction (the schema is idempotent), written before WAL is switched on: a new
            # gradebook then needs no journal bigger than itself (a disk near full, RLIMIT_FSIZE)
            db.executescript(f"BEGIN IMMEDIATE;\n{SCHEMA}")
            _add_missing_columns(db)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("INSERT OR IGNORE INTO meta VALUES ('assignment', ?), ('created_at', ?)",
                       (assignment, utc_now()))
            (held,) = db.execute("SELECT value FROM meta WHERE key = 'assignment'").fetchone()
            db.execute("COMMIT")
            db.execute("PRAGMA journal_mode=WAL")
        if held != assignment:
            raise GradebookError(f"{path.parent} holds the grades of {held}, not {assignment}: "
                                 "grade each assignment into its own --out folder")

    @classmethod
    def existing(cls, path: Path) -> "Gradebook":
        """The gradebook an earlier `checks grade` wrote at `path`, for whichever assignment it holds;
        GradebookError when there is none there, or it is not one checks wrote."""
        refuse_unless_regular(path)
        if not path.is_file():
            raise GradebookError(f"{path.parent} holds no {DB_FILE}: `checks grade ASSIGNMENT ... --out "
                                 f"{path.parent}` writes it")
        try:
            with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
                row = db.execute("SELECT value FROM meta WHERE key = 'assignment'").fetchone()
        except sqlite3.Error:
            row = None
        if row is None or type(row[0]) is not str:
            raise GradebookError(f"{path} is not a gradebook written by checks")
        return cls(path, row[0])

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=30)
        except sqlite3.Error as error:
            raise GradebookError(f"cannot open {self.path}: {error}") from None
        try:
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            yield db
        except sqlite3.DatabaseError as error:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.rollback()
            if (getattr(error, "sqlite_errorcode", 0) & 0xFF) in _UNWRITABLE:
                raise GradebookUnwritable(f"{self.path}: {error}") from None
            if isinstance(error, sqlite3.OperationalError):  # locked for too long, ...
                raise GradebookError(f"{self.path}: {error}") from None
            raise GradebookError(f"{self.path} cannot be used ({error}); move it aside and grade again "
                                 "(the results.json files are not read back: they are rendered from it)") from None
        finally:
            db.close()

    # ------------------------------------------------------------------ runs

    def start_run(self, grader_version: str, *, jobs: int | None, regrade: bool, submissions: int,
                  to_grade: int) -> int:
        with self._connect() as db:
            cursor = db.execute("INSERT INTO runs (assignment, grader_version, started_at, jobs, regrade, submissions,"
                                " to_grade) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                (self.assignment, grader_version, utc_now(), jobs, int(regrade), submissions,
                                 to_grade))
            return int(cursor.lastrowid)

    def finish_run(self, run_id: int, *, graded: int, interrupted: bool = False) -> None:
        with self._connect() as db:
            db.execute("UPDATE runs SET finished_at = ?, status = ?, graded = ? WHERE id = ?",
                       (utc_now(), "interrupted" if interrupted else "finished", graded, run_id))

    # ------------------------------------------------------------------ submissions

    def record(self, graded: Graded) -> None:
        """Replace the submission's row and its questions in one transaction."""
        r = graded.result
        extra = {key: value for key, value in r.to_dict().items() if key not in _RESULT_COLUMNS}
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            if graded.run_id is not None:
                _supersede(db, inert.mend(r.name), graded.run_id)
            # the course policy's record of it outlives a regrade: the time it was submitted, and
            # the adjustments (set_policy brings them up to date before the run publishes)
            kept = db.execute("SELECT submitted_at FROM submissions WHERE name = ?", _mended((r.name,))).fetchone()
            held_adjustments = db.execute("SELECT position, kind, points, reason, decided_by, decided_at FROM adjustments"
                                          " WHERE submission = ?", _mended((r.name,))).fetchall()
            db.execute("DELETE FROM questions WHERE submission = ?", _mended((r.name,)))
            db.execute("DELETE FROM adjustments WHERE submission = ?", _mended((r.name,)))
            db.execute("INSERT OR REPLACE INTO submissions (name, assignment, status, score, max_score, error, warnings,"
                       " devices, sandbox, sandbox_uid, seconds, extra, source, fingerprint, suite_fingerprint,"
                       " grader_version, graded_at, run_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       _mended((r.name, r.assignment, GRADED if graded.ok else GRADER_ERROR, r.score, r.max_score,
                                r.error, json.dumps(r.warnings), ",".join(r.devices), r.sandbox, r.sandbox_uid,
                                r.seconds, json.dumps(extra), graded.source, graded.fingerprint,
                                graded.suite_fingerprint, graded.grader_version, graded.graded_at, graded.run_id)))
            db.executemany("INSERT INTO questions (submission, position, qid, score, max_score, passed, passed_cases,"
                           " total_cases, feedback, diagnoses, not_started) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           [_mended((r.name, position, q.qid, q.score, q.max_score, int(q.passed), q.passed_cases,
                                     q.total_cases, q.feedback,
                                     None if q.diagnoses is None else json.dumps([inert.mend(d) for d in q.diagnoses]),
                                     int(q.not_started))) for position, q in enumerate(r.questions)])
            submitted_at = r.submitted_at or (kept[0] if kept else None)
            db.execute("UPDATE submissions SET submitted_at = ? WHERE name = ?", _mended((submitted_at, r.name)))
            adjustments = [(position, a.kind, a.points, a.reason, a.by, a.at)
                           for position, a in enumerate(r.adjustments)] if r.adjustments else held_adjustments
            db.executemany("INSERT INTO adjustments (submission, position, kind, points, reason, decided_by, decided_at)"
                           " VALUES (?, ?, ?, ?, ?, ?, ?)", [_mended((r.name, *row)) for row in adjustments])
            db.execute("COMMIT")
            # into the database file now: a checkpoint that fails (a full disk, RLIMIT_FSIZE) raises here
            # instead of failing unseen when the connection closes, and the run stops at this submission
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def index(self) -> dict[str, Entry]:
        """Every submission held: its fingerprint and whether the grader managed to grade it."""
        with self._connect() as db:
            rows = db.execute("SELECT name, fingerprint, status FROM submissions").fetchall()
        return {name: Entry(fingerprint, status == GRADED) for name, fingerprint, status in rows}

    def load(self) -> list[Graded]:
        """Every submission held, by name."""
        with self._connect() as db:
            rows = db.execute("SELECT name, assignment, error, warnings, devices, sandbox, sandbox_uid, seconds, extra,"
                              " source, fingerprint, grader_version, graded_at, run_id, suite_fingerprint, submitted_at"
                              " FROM submissions ORDER BY name").fetchall()
            adjustments: dict[str, list[Adjustment]] = {}
            for name, kind, points, reason, by, at in db.execute(
                    "SELECT submission, kind, points, reason, decided_by, decided_at FROM adjustments"
                    " ORDER BY submission, position"):
                adjustments.setdefault(name, []).append(Adjustment(kind, points, reason, by, at))
            questions: dict[str, list[QuestionResult]] = {}
            for name, qid, score, max_score, feedback, passed_cases, total_cases, diagnoses, not_started in db.execute(
                    "SELECT submission, qid, score, max_score, feedback, passed_cases, total_cases, diagnoses,"
                    " not_started FROM questions ORDER BY submission, position"):
                questions.setdefault(name, []).append(
                    QuestionResult(qid, score, max_score, feedback, passed_cases, total_cases,
                                   not_started=bool(not_started),
                                   diagnoses=None if diagnoses is None else json.loads(diagnoses)))
        known = {f.name for f in dataclasses.fields(SubmissionResult)}
        graded = []
        for (name, assignment, error, warnings, devices, sandbox, sandbox_uid, seconds, extra, source, fingerprint,
             version, graded_at, run_id, suite_fingerprint, submitted_at) in rows:
            others = {key: value for key, value in json.loads(extra).items()
                      if key in known and key not in _RESULT_COLUMNS}
            result = SubmissionResult(name=name, assignment=assignment, questions=questions.get(name, []),
                                      devices=devices.split(",") if devices else [], sandbox=sandbox,
                                      sandbox_uid=sandbox_uid, seconds=seconds, warnings=json.loads(warnings),
                                      error=error, submitted_at=submitted_at or "",
                                      adjustments=adjustments.get(name, []), **others)
            graded.append(Graded(result, version, graded_at, source, fingerprint, run_id, suite_fingerprint))
        return graded

    def set_policy(self, submitted_at: dict[str, str | None], adjustments: dict[str, list[Adjustment]]) -> None:
        """The course policy's record, in one transaction: the submission times given (name: UTC
        ISO 8601; the names not given keep theirs), and every adjustment of the submissions named
        in `adjustments` (replacing theirs; an empty list removes them)."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("UPDATE submissions SET submitted_at = ? WHERE name = ?",
                           [_mended((when, name)) for name, when in submitted_at.items()])
            for name, items in adjustments.items():
                db.execute("DELETE FROM adjustments WHERE submission = ?", _mended((name,)))
                db.executemany("INSERT INTO adjustments (submission, position, kind, points, reason, decided_by,"
                               " decided_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                               [_mended((name, position, a.kind, a.points, a.reason, a.by, a.at))
                                for position, a in enumerate(items)])
            db.execute("COMMIT")

    def superseded(self) -> tuple[Run | None, list[Superseded]]:
        """The latest run that graded again what an earlier run had graded, and the grades it
        replaced (none when no run has yet). What reports/regrade.py compares with the gradebook."""
        with self._connect() as db:
            latest = db.execute("SELECT MAX(replaced_by) FROM superseded").fetchone()[0]
            if latest is None:
                return None, []
            run = db.execute("SELECT id, started_at, regrade FROM runs WHERE id = ?", (latest,)).fetchone()
            rows = db.execute("SELECT name, status, score, fingerprint, suite_fingerprint, grader_version, graded_at,"
                              " questions FROM superseded WHERE replaced_by = ? ORDER BY name", (latest,)).fetchall()
        held = Run(latest, run[1] if run else "", bool(run[2]) if run else False)
        return held, [Superseded(name, status == GRADED, score, fingerprint, suite_fingerprint, version, graded_at,
                                 [(qid, q_score, q_max) for qid, q_score, q_max in json.loads(questions)])
                      for name, status, score, fingerprint, suite_fingerprint, version, graded_at, questions in rows]


@dataclasses.dataclass(frozen=True)
class Run:
    """A grade run, as the regrade report names it."""

    id: int
    started_at: str
    regrade: bool  # asked to grade everything again (--regrade)


@dataclasses.dataclass(frozen=True)
class Superseded:
    """A submission's grade as it stood before a later run graded it again."""

    name: str
    ok: bool  # False: the grader had failed on it
    score: float
    fingerprint: str
    suite_fingerprint: str | None
    grader_version: str
    graded_at: str
    questions: list[tuple[str, float, float]]  # qid, score, max_score


def _supersede(db: sqlite3.Connection, name: str, run_id: int) -> None:
    """Keep the submission's current grade, if an earlier run gave it one, before `run_id` replaces it."""
    row = db.execute("SELECT status, score, fingerprint, suite_fingerprint, grader_version, graded_at, run_id"
                     " FROM submissions WHERE name = ?", (name,)).fetchone()
    if row is None or row[6] == run_id:
        return
    questions = db.execute("SELECT qid, score, max_score FROM questions WHERE submission = ? ORDER BY position",
                           (name,)).fetchall()
    db.execute("INSERT OR REPLACE INTO superseded (name, replaced_by, status, score, fingerprint, suite_fingerprint,"
               " grader_version, graded_at, run_id, questions) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
               (name, run_id, *row, json.dumps([list(q) for q in questions])))


def _mended(row: tuple) -> tuple:
    """A row's text as SQLite takes it: a lone surrogate (an undecodable file name in `source`, a
    student's message) written as an escape (inert.mend) instead of failing the commit."""
    return tuple(inert.mend(value) if isinstance(value, str) else value for value in row)


# fields of SubmissionResult with a column of their own; any other goes to `extra`
_RESULT_COLUMNS = {"name", "assignment", "questions", "devices", "sandbox", "sandbox_uid", "seconds", "warnings",
                   "error", "submitted_at", "adjustments"}
