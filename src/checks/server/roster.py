"""The roster: students imported from a CSV (student_id, name, email), staff added one by one.

Each new account gets a token; only its argon2 hash is stored, and the tokens are written once,
to a CSV for the staff to hand out (0600, never over an existing file). Importing the roster
again adds the new students and leaves the others' tokens alone.
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

from checks.course import inert
from checks.course.assignment import CourseError
from checks.server.auth import new_token
from checks.server.storage import ROLES, STUDENT, Storage, User

REQUIRED = ("student_id", "name", "email")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,99}")


@dataclass(frozen=True)
class Issued:
    """A token handed out: to whom, and the token itself (shown once)."""

    user: User
    token: str


def read_roster(path: Path) -> list[User]:
    """The students of a roster CSV; CourseError naming the line for a bad row."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise CourseError(f"cannot read the roster {path}: {error}") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip() for name in reader.fieldnames or []]
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise CourseError(f"{path}: the header must name {', '.join(REQUIRED)} (missing {', '.join(missing)})")
    students, seen = [], set()
    for line, row in enumerate(reader, start=2):
        row = {key.strip(): (value or "").strip() for key, value in row.items() if key is not None}
        student_id = row["student_id"]
        if not _ID.fullmatch(student_id):
            raise CourseError(f"{path}, line {line}: student_id {inert.visible(student_id)!r} must be 1 to 100 "
                              "letters, digits or . _ @ - (starting with a letter or digit)")
        if student_id in seen:
            raise CourseError(f"{path}, line {line}: student_id {student_id} is there twice")
        seen.add(student_id)
        role = row.get("role") or STUDENT
        if role not in ROLES:
            raise CourseError(f"{path}, line {line}: role must be one of {', '.join(ROLES)}")
        students.append(User(student_id, row["name"], row["email"], role))
    if not students:
        raise CourseError(f"{path} lists no students")
    return students


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


def write_tokens(path: Path, issued: list[Issued]) -> None:
    """The tokens to hand out, readable by the owner only; never over an existing file."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student_id", "name", "email", "role", "token"])
    for one in issued:
        writer.writerow([inert.csv_cell(cell) for cell in
                         (one.user.id, one.user.name, one.user.email, one.user.role)] + [one.token])
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise CourseError(f"{path} exists: the tokens are written once; name another file with --tokens") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(buffer.getvalue())
        out.flush()
        os.fsync(out.fileno())
