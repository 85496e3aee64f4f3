"""Whether `checks serve` may grade on this machine: student code must never read the server's
state (data/: the session key, the database, every upload; the LTI private key; the database's
password), or it could sign a staff cookie or grant itself an extension.

Which isolation levels may serve, and why (docs/server-operators.md says the same):
- bwrap, as root or not: the jail's file system is the system, Python and the `checks` package
  only; the course folder is not in it, so long as data/ and the keys lie outside what it binds.
- fork as root with a uid per submission, where that uid can import Python without any right
  to read others' files: the server's state is made the server's own (data/ 0700, keys 0600),
  and every other user's access is taken from what only staff may read (the hidden suites, the
  solutions, the records, the LTI folder, the roster): a uid of its own reads what every user may.
- never fork where the workers keep the server's uid (not root, or Docker's root that may not
  hand out uids), nor fork as root where Python is readable only by root: there the workers are
  given the right to read every file (CAP_DAC_READ_SEARCH), the server's state included.
Grading elsewhere (Dask, `--scheduler`) is the operator's: its workers must not share data/.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from checks.course.assignment import CourseError
from checks.lti.keys import key_path
from checks.sandbox import jail
from checks.server.config import CONFIG_FILE, ServerConfig

REMEDY = ("serve where bubblewrap works (`bwrap` installed, namespaces allowed: --isolation bwrap), or as root "
          "with a Python installation every user may read (a uid per submission), or grade on a Dask cluster "
          "whose workers do not hold the course's data/ (--scheduler)")


def grading_problem(isolation: jail.Isolation) -> str | None:
    """Why grading at this level would let a submission read the server's state, or None."""
    if isolation.kind == jail.BWRAP:
        return None
    if isolation.reads_everything:
        return (f"at this level ({isolation.description}) a submission may read every file, the server's "
                "session key, tokens, LTI key and database included")
    if not isolation.per_submission_uid:
        return (f"at this level ({isolation.description}) a submission runs as the server's own user and may read "
                "its session key, tokens, LTI key and database")
    return None


def secure(config: ServerConfig, isolation: jail.Isolation | None) -> list[str]:
    """Refuse (CourseError, saying why and what to do) where `isolation` would show student code the
    server's state; else make that state the server's own and say what was changed. `isolation`
    None: the grading runs elsewhere (Dask), which nothing here can check."""
    if isolation is None:
        return []
    problem = grading_problem(isolation)
    if problem is not None:
        raise CourseError(f"`checks serve` refuses to grade here: {problem}. Instead, {REMEDY}.")
    if isolation.kind == jail.BWRAP:
        inside = _bound_in_jail([config.data_dir, key_path(config.folder)])
        if inside:
            raise CourseError(f"`checks serve` refuses to grade here: {inside} lies in a folder the bwrap jail shows "
                              "to every submission; move the course's data (course.toml's `data`) elsewhere")
        return []
    return _owner_only(config) + _kept_from_others(config)


def _kept_from_others(config: ServerConfig) -> list[str]:
    """What only staff may read, with every other user's access taken away (their group keeps
    theirs): a submission's uid reads what every user may, and a copy of a hidden suite or a
    solution would raise its score. Refused (CourseError) where it cannot be changed."""
    course = config.course
    private = [config.course_root / "autograder", config.course_root / "solutions", config.folder / "records",
               config.folder / "lti", config.folder / "roster.csv"]
    if course is not None and course.roster is not None and course.roster.path not in private:
        private.append(course.roster.path)
    changed = []
    for path in private:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)  # a link's target: what a reader reaches
        except FileNotFoundError:
            continue
        if not mode & 0o007:
            continue
        try:
            os.chmod(path, mode & ~0o007)
        except OSError as error:
            raise CourseError(f"`checks serve` refuses to grade here: every user may read {path}, which a "
                              f"submission's uid would read too, and it cannot be changed ({error.strerror}); "
                              f"chmod o-rwx it, or serve at the bwrap level") from None
        changed.append(f"{path} made {mode & ~0o007:o} (only staff read it: submissions run as other uids)")
    return changed


def _bound_in_jail(paths: list[Path]) -> str | None:
    """The first of `paths` that the bwrap jail binds in (the system and Python folders)."""
    return next((str(path) for path in paths if jail.shown_in_jail(path)), None)


def _owner_only(config: ServerConfig) -> list[str]:
    """data/ 0700 and the LTI private key 0600, owned by this process's user; a database password
    in course.toml readable by others, or on this command line (any user reads it in /proc),
    refused."""
    changed = []
    me = os.geteuid()
    config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    for path, mode in ((config.data_dir, 0o700), (key_path(config.folder), 0o600)):
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode) or info.st_uid != me:
            raise CourseError(f"`checks serve` refuses to grade here: {path} is not this user's own (uid "
                              f"{info.st_uid}, a link, or another's), so a submission's uid may reach it")
        if info.st_mode & 0o077:
            os.chmod(path, mode)
            changed.append(f"{path} made {mode:o} (the server's own: submissions run as other uids)")
    password = _password(config.storage_url)
    if password:
        toml = config.folder / CONFIG_FILE
        if toml.is_file() and toml.stat().st_mode & 0o004 and password in toml.read_text(encoding="utf-8"):
            raise CourseError(f"`checks serve` refuses to grade here: {toml} holds the database password and every "
                              f"user may read it; give it in $CHECKS_DATABASE_URL, or chmod 600 {toml}")
        if password in Path("/proc/self/cmdline").read_text(errors="replace"):
            raise CourseError("`checks serve` refuses to grade here: the database password is on the command line, "
                              "which every user (a submission's uid too) may read; give it in $CHECKS_DATABASE_URL")
    return changed


def _password(url: str) -> str | None:
    try:
        return make_url(url).password
    except ArgumentError:
        return None
