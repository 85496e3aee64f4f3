"""What staff decide, kept as append-only records in the course folder: COURSE/records/NAME.jsonl.

One JSON object a line, never rewritten: a change (a new extension date, a revocation, an answer)
is a new line, so the file is its own audit trail (who, when, why, in every entry). An append is
made under an exclusive lock and fsynced before the command says it is done; the CLI and the
course server (several processes) may append to the same file. A line that cannot be read is
refused with the file and line named, never skipped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from checks.course.assignment import CourseError

RECORDS_DIR = "records"


@dataclass(frozen=True)
class Line:
    """One record as read back: its place in the file (for messages) and its fields."""

    path: Path
    number: int
    fields: dict[str, Any]

    def where(self) -> str:
        return f"{self.path}, line {self.number}"


def records_path(folder: Path, name: str) -> Path:
    return folder / RECORDS_DIR / f"{name}.jsonl"


def read_records(path: Path) -> list[Line]:
    """Every record of the file, in the order they were appended ([] when there is none yet)."""
    if path.is_symlink():
        raise CourseError(f"{path} is a symbolic link: checks reads and appends only records it made")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as error:
        raise CourseError(f"cannot read {path}: {error}") from None
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            fields = json.loads(raw)
        except json.JSONDecodeError as error:
            raise CourseError(f"{path}, line {number}: not a JSON object ({error.msg})") from None
        if not isinstance(fields, dict):
            raise CourseError(f"{path}, line {number}: not a JSON object")
        lines.append(Line(path, number, fields))
    return lines


@contextlib.contextmanager
def locked(path: Path) -> Iterator[int]:
    """The records file, open for appending under an exclusive lock (created 0600 when new: it
    names students). The descriptor is yielded; read the file again inside to decide on fresh data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def append(fd: int, fields: dict[str, Any]) -> None:
    """One record, on its own line, on disk before this returns."""
    data = (json.dumps(fields, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8", "backslashreplace")
    os.write(fd, data)
    os.fsync(fd)
