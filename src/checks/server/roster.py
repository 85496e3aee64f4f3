"""The roster: students imported from a CSV (student_id, name, email), staff added one by one.

Each new account gets a token; only its argon2 hash is stored, and the tokens are written once,
to a CSV for the staff to hand out (0600, never over an existing file). Importing the roster
again adds the new students and leaves the others' tokens alone.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path

from checks.course import inert
from checks.course.assignment import CourseError
from checks.policy.roster import Roster
from checks.policy.roster import read_roster as course_roster
from checks.server.auth import new_token
from checks.server.storage import ROLES, Storage, User


@dataclass(frozen=True)
class Issued:
    """A token handed out: to whom, and the token itself (shown once)."""

    user: User
    token: str


def read_roster(path: Path) -> list[User]:
    """The students of a roster CSV as server accounts, read as the course policy reads it
    (checks.policy.roster: the same columns, ids and refusals); CourseError for a role the
    server does not know."""
    return accounts(course_roster(path))


def accounts(roster: Roster) -> list[User]:
    """The students of a course roster as server accounts (CourseError for a role the server does not know)."""
    path = roster.path
    people = []
    for student in roster.students.values():
        if student.role not in ROLES:
            raise CourseError(f"{path}: the role of {student.student_id} must be one of {', '.join(ROLES)}, "
                              f"not {inert.visible(student.role)!r}")
        people.append(User(student.student_id, student.name, student.email, student.role))
    return people


def import_roster(storage: Storage, people: list[User], *, reissue: bool = False) -> tuple[list[Issued], int]:
    """Add everyone not there yet (everyone, with `reissue`: new tokens replace the old ones).
    (tokens issued, how many were already there and kept their token)."""
    issued, kept = [], 0
    for person in people:
        if not reissue and storage.user(person.id) is not None:
            kept += 1
            continue
        issued.append(add_user(storage, person))
    return issued, kept


def add_user(storage: Storage, person: User) -> Issued:
    """Store `person` with a new token; the token is returned, only its hash is kept."""
    token, token_id, token_hash = new_token()
    user = User(person.id, person.name, person.email, person.role, token_hash)
    storage.put_user(user, token_id)
    return Issued(user, token)


def tokens_csv(issued: list[Issued]) -> str:
    """The tokens to hand out, as CSV (student_id, name, email, role, token)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student_id", "name", "email", "role", "token"])
    for one in issued:
        writer.writerow([inert.csv_cell(cell) for cell in
                         (one.user.id, one.user.name, one.user.email, one.user.role)] + [one.token])
    return buffer.getvalue()


def write_tokens(path: Path, issued: list[Issued]) -> None:
    """The tokens to hand out, readable by the owner only; never over an existing file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise CourseError(f"{path} exists: the tokens are written once; name another file with --tokens") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(tokens_csv(issued))
        out.flush()
        os.fsync(out.fileno())
