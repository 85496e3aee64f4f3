"""`checks pack`: the zip a student uploads, holding exactly what the grader reads.

Only the files the assignment takes, and quiz.toml, go in (no notebooks, caches or data): what the
student checked is what gets graded. A missing, misnamed or oversized file, or a quiz.toml that
cannot be read, stops it before anything is written (grading/handin.py: the same check the course
server makes of an upload). Files still untouched (every function the
stub left to write still raises its NotImplementedError) are packed, with a warning. The zip is the same for the same files (fixed dates),
so a re-packed, unchanged submission is not graded again.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from checks.course.assignment import Assignment, read_marker
from checks.course.stubs import untouched
from checks.course.submissions import JUNK_FILES, MAX_FILE_BYTES, SubmissionError, list_folder
from checks.grading.handin import check_handin, submission_file_names
from checks.suites.quiz import QUIZ_FILE

ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can hold: the same files give the same bytes


@dataclass
class Packing:
    """What `pack` found: the files that go in, and what stops it (empty when the zip was written)."""

    files: dict[str, int] = field(default_factory=dict)  # name -> size in bytes
    problems: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)  # quiz keys with no answer yet (packed anyway)
    untouched: list[str] = field(default_factory=list)  # files with nothing implemented yet (packed anyway)


def pack(assignment: Assignment, folder: Path, out: Path) -> Packing:
    """Write `out` from `folder` unless a file is missing or the quiz is malformed (then nothing is
    written): the check is grading.handin's, the one the course server makes of an upload."""
    packing = Packing()
    names = submission_file_names(assignment)
    try:
        listing = list_folder(folder)  # as `checks grade` lists a folder: the same skips, links and caps
    except SubmissionError as error:
        packing.problems.append(str(error))
        return packing
    listed = {entry.path: entry for entry in listing.files}
    lone = [path for path in listed if path.split("/")[-1] not in JUNK_FILES]
    if len(lone) == 1 and lone[0].lower().endswith(".zip") and lone[0] not in names:
        # the grader would read what the zip holds (course/submissions.py), but a pack is made of files
        packing.problems.append(f"{folder} holds only {lone[0]}: unzip it there (unzip {lone[0]}) so that your "
                                f"files are in the folder, then pack or submit it again; or upload {lone[0]} "
                                "itself on the course's page")
        return packing
    packing.problems += [warning for warning in listing.warnings  # strides.py: a symlink, ignored
                         if any(warning.startswith(f"{name}:") for name in names)]
    quiz = listed[QUIZ_FILE].read(MAX_FILE_BYTES) if QUIZ_FILE in listed else None
    found = check_handin(assignment, {path: entry.size for path, entry in listed.items()}, quiz)
    packing.problems += found.problems
    packing.unanswered = found.unanswered
    if packing.problems:
        return packing
    contents = {name: listed[name].read(MAX_FILE_BYTES) for name in names}
    packing.files = {name: len(data) for name, data in contents.items()}
    packing.untouched = untouched_files(assignment, folder, contents)
    _write_zip(out, contents)
    return packing


def untouched_files(assignment: Assignment, folder: Path, contents: dict[str, bytes]) -> list[str]:
    """The code files in which nothing is implemented yet, by the marker's record of what each
    leaves to write (the folder's own, else the release's; course/stubs.py)."""
    marker = next((m for m in (read_marker(folder), read_marker(assignment.release_dir))
                   if m.get("assignment") == assignment.name), {})
    record = marker.get("stubs") if isinstance(marker.get("stubs"), dict) else {}
    found = []
    for name in assignment.files:
        if name.endswith(".py") and name in contents:
            stubs = record.get(name)
            stubs = [s for s in stubs if isinstance(s, str)] if isinstance(stubs, list) else None
            if untouched(contents[name].decode("utf-8", errors="replace"), stubs):
                found.append(name)
    return found


def _write_zip(out: Path, contents: dict[str, bytes]) -> None:
    """The zip, written to a temp file and renamed: an old zip is replaced whole or not at all."""
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as raw, zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in contents.items():
                info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, data)
        os.chmod(temp, 0o644)
        os.replace(temp, out)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
