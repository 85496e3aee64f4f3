"""A course server's configuration: `course.toml` in the course folder, read once and checked.

Every key has a default, so that a folder with only a roster can be served; a wrong key or value
is refused with its name and what it should be, before the server starts.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from checks.course.assignment import CourseError, list_assignments
from checks.policy import dates
from checks.policy.config import Course, Policy, load_course

CONFIG_FILE = "course.toml"
DATA_DIR = "data"  # the database and stored uploads, under the course folder by default
MOVED = {  # the server's own keys of old, now the course policy's (issue 34): one source for every front end
    "due": "[policy] due in autograder/{name}/assignment.toml (or course.toml's [policy], for every assignment)",
    "hidden": "[policy] show_hidden = \"after_due\" (\"after_due\") or \"at_once\" (\"visible\"), in "
              "autograder/{name}/assignment.toml or course.toml's [policy]",
}


@dataclass(frozen=True)
class AssignmentPolicy:
    """What the server does for one assignment: `released`, course.toml's switch (false: closed to
    students whatever the dates), and the course policy's rules (checks.policy: release and due
    dates, hidden results before the due date, late penalties), which `checks grade` reads too."""

    name: str
    released: bool = True
    rules: Policy | None = None  # None: the defaults (no dates, hidden results shown)

    @property
    def policy(self) -> Policy:
        return self.rules or Policy(self.name)

    @property
    def due(self) -> datetime | None:
        return None if self.policy.due is None else self.policy.due.astimezone(timezone.utc)

    @property
    def release(self) -> datetime | None:
        return None if self.policy.release is None else self.policy.release.astimezone(timezone.utc)

    @property
    def hidden(self) -> str:
        """"visible" or "after_due", as the API has always said it."""
        return "after_due" if self.policy.hidden_wait else "visible"

    def is_open(self, now: datetime) -> bool:
        """Whether students may fetch and submit it now: switched on, and past its release date."""
        return self.released and dates.released(self.policy, now)

    def hidden_shown(self, now: datetime, released_by_staff: bool, due: datetime | None = None) -> bool:
        """Whether students see the hidden checks' scores and feedback now (`due`: the student's
        own due date, an extension's)."""
        return released_by_staff or dates.hidden_shown(self.policy, now, due=due)


@dataclass(frozen=True)
class ServerConfig:
    """The server's settings for one course folder (`course.toml`)."""

    folder: Path  # where course.toml is
    course_root: Path  # where assignments/ and autograder/ are
    title: str = "checks course"
    storage_url: str = ""
    data_dir: Path = Path()
    jobs: int = 1
    assignments: dict[str, AssignmentPolicy] = field(default_factory=dict)
    upload_bytes: int = 5 * 2**20  # a request's body
    unpacked_bytes: int = 20 * 2**20  # all files of a submission, unpacked
    max_files: int = 50
    idle_seconds: float = 30.0  # a request body that stops coming this long is refused (408)
    rate_count: int = 10  # submissions per student per assignment per window
    rate_window: float = 600.0
    login_free_failures: int = 3  # failed logins before the backoff starts
    login_backoff: float = 2.0  # seconds after the first counted failure, doubling, at most 15 min
    secure_cookies: bool = False  # set behind TLS (a reverse proxy): cookies only over HTTPS
    lease_seconds: float = 60.0  # a grader's claim, renewed while it grades: how long a dead grader holds one
    course: Course | None = None  # the course policy (checks.policy): dates, late penalties, grace days, records
    lti: bool = False  # course.toml has an [lti] table: the server answers LTI 1.3 logins and launches


def load_config(folder: Path, database: str | None = None) -> ServerConfig:
    """The configuration of the course in `folder`; CourseError says what is wrong. `database` (a
    URL: --database, or $CHECKS_DATABASE_URL) replaces course.toml's `storage`, so that a
    PostgreSQL password need not be written in the course folder."""
    folder = folder.resolve()
    if not folder.is_dir():
        raise CourseError(f"{folder} is not a folder: name a course folder (with {CONFIG_FILE}, or assignments/)")
    path = folder / CONFIG_FILE
    table: dict[str, Any] = {}
    if path.is_file():
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise CourseError(f"{path} cannot be read: {error}") from None
    known = {"title", "course", "storage", "data", "jobs", "limits", "rate", "login", "secure_cookies", "assignment",
             "roster", "policy", "grace", "lti", "queue"}  # the last four: the course policy's and LTI's (checks.policy, checks.lti)
    unknown = sorted(set(table) - known)
    if unknown:
        raise CourseError(f"{path}: unknown key {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    root = (folder / _text(table, "course", ".", path)).resolve()
    if not (root / "assignments").is_dir() and not (root / "autograder").is_dir():
        raise CourseError(f"{path}: course = {str(root)!r} holds neither assignments/ nor autograder/")
    data_dir = (folder / _text(table, "data", DATA_DIR, path)).resolve()
    storage = database or _text(table, "storage", "", path) or f"sqlite:///{data_dir / 'checks.sqlite'}"
    limits, rate, login, queue = (_table(table, key, path) for key in ("limits", "rate", "login", "queue"))
    extra = sorted(set(queue) - {"lease_seconds"})
    if extra:
        raise CourseError(f"{path}: [queue]: unknown key {', '.join(extra)} (known: lease_seconds)")
    course = load_course(folder, root)
    policies = _policies(table, root, path, course)
    return ServerConfig(
        folder=folder, course_root=root, title=_text(table, "title", "checks course", path), storage_url=storage,
        data_dir=data_dir, jobs=_number(table, "jobs", 1, path, whole=True), assignments=policies,
        upload_bytes=int(_number(limits, "upload_mib", 5, path) * 2**20),
        unpacked_bytes=int(_number(limits, "unpacked_mib", 20, path) * 2**20),
        max_files=_number(limits, "files", 50, path, whole=True),
        idle_seconds=float(_number(limits, "idle_seconds", 30, path)),
        rate_count=_number(rate, "submissions", 10, path, whole=True),
        rate_window=float(_number(rate, "window_seconds", 600, path)),
        login_free_failures=_number(login, "free_failures", 3, path, whole=True),
        login_backoff=float(_number(login, "backoff_seconds", 2, path)),
        secure_cookies=bool(table.get("secure_cookies", False)),
        lease_seconds=float(_number(queue, "lease_seconds", 60, path)), course=course, lti="lti" in table)


def _policies(table: dict, root: Path, path: Path, course: Course) -> dict[str, AssignmentPolicy]:
    """Each assignment served: those course.toml names, else every assignment of the course; its
    dates and visibility from the course policy. The old `due` and `hidden` keys are refused,
    naming where they live now, so that no course runs with two due dates that disagree."""
    given = _table(table, "assignment", path)
    # a served course needs the hidden suites, not solutions/ (an exported course has none)
    available = {p.name for p in (root / "autograder").iterdir() if p.is_dir()} if (root / "autograder").is_dir() \
        else set(list_assignments(root))
    names = list(given) or sorted(available)
    policies = {}
    for name in names:
        if name not in available:
            raise CourseError(f"{path}: [assignment.{name}]: the course has no hidden suite autograder/{name}/")
        entry = given.get(name, {})
        if not isinstance(entry, dict):
            raise CourseError(f"{path}: assignment.{name} must be a table ([assignment.{name}])")
        for key in sorted(set(entry) & set(MOVED)):
            raise CourseError(f"{path}: [assignment.{name}] {key} is now the course policy's: write it as "
                              f"{MOVED[key].format(name=name)} (docs/policy.md)")
        extra = sorted(set(entry) - {"released"})
        if extra:
            raise CourseError(f"{path}: [assignment.{name}]: unknown key {', '.join(extra)} (known: released; the "
                              "dates and visibility are in [policy], docs/policy.md)")
        policies[name] = AssignmentPolicy(name, released=bool(entry.get("released", True)), rules=course.policy(name))
    return policies


def _table(table: dict, key: str, path: Path) -> dict:
    value = table.get(key, {})
    if not isinstance(value, dict):
        raise CourseError(f"{path}: {key} must be a table ([{key}])")
    return value


def _text(table: dict, key: str, default: str, path: Path) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise CourseError(f"{path}: {key} must be a string")
    return value


def _number(table: dict, key: str, default: float, path: Path, *, whole: bool = False) -> Any:
    value = table.get(key, default)
    if type(value) not in ((int,) if whole else (int, float)) or value <= 0:
        raise CourseError(f"{path}: {key} must be a {'whole ' if whole else ''}number greater than 0")
    return value
