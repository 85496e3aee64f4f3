"""When each submission was made, on the batch path (`checks grade --submitted-at`).

An LMS's bulk download does not say: Canvas marks a file `late` (a word, not a time: it says
nothing of how late, and nothing of extensions or grace days), Moodle says nothing, and a file's
modification time is whatever the last copy, unzip or `git checkout` made it. So a time is used
only when staff give one:

- `--submitted-at FILE.csv`: a column `submitted_at` (with its offset, or a wall-clock time in
  the course's time_zone) and a column `submission` (the name `checks grade` gives it) or
  `student_id` (the LMS's id, or the roster's); what Canvas's and Moodle's grading pages and
  reports list, copied out. Such a file is the record a dispute can be settled with.
- `--submitted-at mtime`: each submission's latest file modification time (a zip's, a notebook's,
  the newest file of a folder; in an LMS's zip, each entry's time, read in the course's time
  zone). Only where the files come straight from where students saved them.

Without either, a submission's time stays unknown (or as an earlier run recorded it) and no late
penalty is charged: a guess never costs a student points. Reading the times is the only impure
step; every decision after it is dates.py's, a pure function of them.
"""

from __future__ import annotations

import csv
import io
import os
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from pathlib import Path

from checks.course.assignment import CourseError
from checks.course.submissions import Found, SubmissionError, list_folder
from checks.policy.config import read_when
from checks.policy.roster import Roster

MTIME = "mtime"


@dataclass(frozen=True)
class SubmissionTimes:
    """Where submission times come from: a staff's CSV (`given`), or the files' own times."""

    given: dict[str, datetime] = field(default_factory=dict)  # by submission name or student id
    from_files: bool = False
    zone: tzinfo = timezone.utc  # for an LMS zip's entry times, which carry none

    def time_of(self, found: Found, name: str, roster: Roster | None = None) -> datetime | None:
        """The submission's time, or None when nothing says it."""
        if self.from_files:
            return file_time(found, self.zone)
        student = roster.match(name, found.student_id) if roster else None
        for key in (name, found.student_id, student.student_id if student else ""):
            if key and key in self.given:
                return self.given[key]
        return None


def read_times(path: Path, zone: tzinfo | None) -> SubmissionTimes:
    """A CSV of submission times; CourseError names the file and line of a bad row."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise CourseError(f"cannot read --submitted-at {path}: {error}") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip() for name in reader.fieldnames or []]
    if "submitted_at" not in header or not {"submission", "student_id"} & set(header):
        raise CourseError(f"{path}: the header must name submitted_at, and submission or student_id")
    given: dict[str, datetime] = {}
    for line, row in enumerate(reader, start=2):
        cells = {key.strip(): (value or "").strip() for key, value in row.items() if key is not None}
        keys = [cells[key] for key in ("submission", "student_id") if cells.get(key)]
        if not keys:
            raise CourseError(f"{path}, line {line}: no submission or student_id")
        when = read_when(cells.get("submitted_at", ""), zone, f"{path}, line {line}", "submitted_at")
        for key in keys:
            given[key] = when
    return SubmissionTimes(given)


def file_time(found: Found, zone: tzinfo) -> datetime | None:
    """The newest modification time of the submission's files (links are not followed)."""
    path = found.path
    try:
        if found.members and zipfile.is_zipfile(path):
            wanted = {entry for entry, _ in found.members}
            with zipfile.ZipFile(path) as archive:
                stamps = [datetime(*info.date_time, tzinfo=zone) for info in archive.infolist()
                          if info.filename in wanted]
            return max(stamps, default=None)
        if found.members:
            return _newest([path / entry for entry, _ in found.members])
        if path.is_dir():
            return _newest([path / entry.path for entry in list_folder(path).files])
        return _newest([path])
    except (OSError, zipfile.BadZipFile, SubmissionError, ValueError):
        return None


def _newest(paths: list[Path]) -> datetime | None:
    times = [os.lstat(p).st_mtime for p in paths]
    return datetime.fromtimestamp(max(times), timezone.utc).replace(microsecond=0) if times else None
