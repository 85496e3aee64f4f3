"""Receiving a submission: bounded, checked as `checks grade` checks a zip, then stored durably.

An upload is files (a browser form) or one zip (`checks submit`, or a student's own zip). Its
size, file count and unpacked size are bounded before anything is inflated; the zip is then read
as the grader will read it (course/submissions.py: caps, bombs, names that escape), so that one the
grader would refuse is refused at once, with the reason, and checked as `checks submit` checks a
folder (grading/handin.py: every file the assignment takes, a well-formed quiz.toml). Only then is it written, fsynced and
renamed into the data folder, and the folder fsynced: stored before the queue row is committed.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from checks.course.assignment import Assignment
from checks.course.submissions import Submission, SubmissionError, read_submission
from checks.grading.handin import check_handin, submission_file_names
from checks.grading.session import named_files
from checks.suites.quiz import QUIZ_FILE

UPLOADS_DIR = "uploads"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class UploadRefused(Exception):
    """The upload is not stored; str() says why, in words for the student. `status` is the HTTP status."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Stored:
    """An upload written and fsynced under the data folder."""

    path: str  # relative to the data folder
    sha256: str
    size: int
    files: list[str]
    warnings: list[str] = field(default_factory=list)


def as_zip(parts: list[tuple[str, bytes]], *, max_files: int, unpacked_bytes: int) -> bytes:
    """One zip from what was uploaded: the zip itself when it is one, else the files in a new zip
    (each under its own base name: a browser's file names are data, never paths)."""
    if not parts:
        raise UploadRefused("no file was uploaded: choose your files, or your zip")
    if len(parts) == 1 and parts[0][0].lower().endswith(".zip"):
        return parts[0][1]
    if len(parts) > max_files:
        raise UploadRefused(f"{len(parts)} files uploaded; at most {max_files} are taken", 413)
    if sum(len(data) for _, data in parts) > unpacked_bytes:
        raise UploadRefused(f"the files add up to more than {unpacked_bytes // 2**20} MiB", 413)
    buffer = io.BytesIO()
    names = set()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts:
            base = PurePosixPath(name.replace("\\", "/")).name
            if not base or base in (".", "..") or base in names:
                raise UploadRefused(f"the file name {base!r} is empty or given twice")
            names.add(base)
            info = zipfile.ZipInfo(base, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def check_zip(data: bytes, *, max_files: int, unpacked_bytes: int) -> list[str]:
    """The zip's member names, once its directory is within bounds (nothing inflated yet)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as error:
        raise UploadRefused(f"the upload is not a readable zip ({error})") from None
    files = [info for info in infos if not info.filename.endswith("/")]  # is_dir() fails on an empty name
    if len(infos) > max_files:
        raise UploadRefused(f"the zip holds {len(infos)} entries; at most {max_files} are taken", 413)
    total = sum(info.file_size for info in files)
    if total > unpacked_bytes:
        raise UploadRefused(f"the zip unpacks to {total / 2**20:.1f} MiB; at most {unpacked_bytes // 2**20} MiB "
                            "are taken", 413)
    if not files:
        raise UploadRefused("the zip holds no files: zip your assignment's files (or choose them one by one)")
    return [info.filename for info in files]


def store(data: bytes, assignment: Assignment, data_dir: Path, submission_id: str, *, max_files: int,
          unpacked_bytes: int) -> Stored:
    """Check `data` (a zip) as the grader will read it, then write it durably as
    uploads/<assignment>/<id>.zip. UploadRefused when it is refused (nothing kept)."""
    names = check_zip(data, max_files=max_files, unpacked_bytes=unpacked_bytes)
    folder = data_dir / UPLOADS_DIR / assignment.name
    folder.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=folder, prefix=".upload-", suffix=".zip")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        try:
            submission = read_submission(Path(temp), named_files(assignment))
        except SubmissionError as error:  # without the temporary file's name, which is no one's business
            reason = str(error).removeprefix(f"{Path(temp).name}: ")
            raise UploadRefused(f"the grader could not read this submission: {reason}") from None
        read = sum(len(content) for content in submission.files.values())
        if len(submission.files) > max_files or read > unpacked_bytes:  # a zip inside the zip: the same bounds
            raise UploadRefused(f"the zip inside the upload holds {len(submission.files)} files of "
                                f"{read / 2**20:.1f} MiB; at most {max_files} files and {unpacked_bytes // 2**20} MiB "
                                "are taken", 413)
        refuse_incomplete(assignment, submission, names)
        final = folder / f"{submission_id}.zip"
        os.replace(temp, final)
        _fsync_folder(folder)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return Stored(str(final.relative_to(data_dir)), hashlib.sha256(data).hexdigest(), len(data), names,
                  list(submission.warnings))


def refuse_incomplete(assignment: Assignment, submission: Submission, names: list[str]) -> None:
    """UploadRefused unless the submission holds what `checks submit` requires of a folder
    (grading.handin, one check for both): an upload missing a file, or with one misnamed, would be
    graded with those questions at 0 and, where the last upload counts, replace a complete one.
    `names`: the zip's member names, for the hints ("found Strides.py: rename it to strides.py")."""
    required = set(submission_file_names(assignment))
    sizes = {name: len(data) for name, data in submission.files.items()}
    sizes.update({name: 0 for name in names if name not in sizes and name not in required})  # look-alikes only
    found = check_handin(assignment, sizes, submission.files.get(QUIZ_FILE), submission.unread)
    problems = [warning for warning in submission.warnings if any(warning.startswith(f"{name}:") for name in required)]
    problems += [problem for problem in found.problems if problem not in problems]
    if problems:
        raise UploadRefused("nothing was stored; fix these and upload again: " + "; ".join(problems), 422)


def _fsync_folder(folder: Path) -> None:
    """The rename is durable once the folder's entry is on disk."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
