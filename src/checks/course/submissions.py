"""Reading a submission (a folder or a .zip) into memory, safely.

Nothing is extracted to disk here: the sandbox writes the files into its own private folder.
Entries that would escape their folder, symlinks, and archives too big or too many-filed are
refused with a message that names them.
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MAX_FILES = 200
MAX_TOTAL_BYTES = 20 * 2**20
MAX_FILE_BYTES = 5 * 2**20
SKIPPED_DIRS = {"__pycache__", ".git", ".ipynb_checkpoints", "__MACOSX", ".pytest_cache"}


class SubmissionError(Exception):
    """The submission cannot be read at all; str() says why, in words a TA can pass on."""


@dataclass
class Submission:
    name: str
    files: dict[str, bytes]
    warnings: list[str] = field(default_factory=list)


def submission_name(path: Path) -> str:
    return path.stem if path.suffix == ".zip" else path.name


def read_submission(path: Path) -> Submission:
    """A folder or zip as {relative posix path: bytes}; one enclosing folder inside a zip is dropped."""
    if path.is_dir():
        submission = _read_folder(path)
    elif path.suffix == ".zip" and path.is_file():
        submission = _read_zip(path)
    elif not path.exists():
        raise SubmissionError(f"{path} does not exist")
    else:
        raise SubmissionError(f"{path} is neither a folder nor a .zip file")
    submission.files = _drop_enclosing_folder(submission.files)
    return submission


def _read_folder(root: Path) -> Submission:
    submission = Submission(submission_name(root), {})
    total = 0
    root = root.resolve()
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(names):
            full = Path(folder) / name
            relative = full.relative_to(root).as_posix()
            if not _is_utf8(relative):
                submission.warnings.append(f"{ascii(relative)}: a file name that is not UTF-8, ignored")
                continue
            if full.is_symlink():
                submission.warnings.append(f"{relative}: a symlink, ignored")
                continue
            if not full.is_file():
                submission.warnings.append(f"{relative}: not a regular file (a fifo or device?), ignored")
                continue
            size = full.stat().st_size
            total += size
            _check_budget(root.name, relative, size, total, len(submission.files) + 1)
            submission.files[relative] = full.read_bytes()
    return submission


def _read_zip(path: Path) -> Submission:
    submission = Submission(submission_name(path), {})
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as error:
        raise SubmissionError(f"{path.name} is not a readable zip file ({error})") from None
    with archive:
        total = 0
        for info in archive.infolist():
            name = info.filename
            if info.is_dir() or any(part in SKIPPED_DIRS for part in PurePosixPath(name).parts):
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                submission.warnings.append(f"{name}: a symlink, ignored")
                continue
            safe = _safe_member(name)
            if safe is None:
                raise SubmissionError(f"{path.name}: the entry {name!r} would land outside the submission folder; "
                                      "the zip was refused")
            total += info.file_size
            _check_budget(path.name, safe, info.file_size, total, len(submission.files) + 1)
            with archive.open(info) as member:
                data = member.read(MAX_FILE_BYTES + 1)  # the header's size may lie: cap what we read
            if len(data) > MAX_FILE_BYTES:
                raise SubmissionError(f"{path.name}: {safe} unpacks to more than {MAX_FILE_BYTES // 2**20} MiB")
            submission.files[safe] = data
    return submission


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.walk hands undecodable bytes back as surrogates
        return False
    return True


def _safe_member(name: str) -> str | None:
    """The entry's path if it stays inside the submission, else None."""
    name = name.replace("\\", "/")
    pure = PurePosixPath(name)
    if name.startswith("/") or pure.is_absolute() or ":" in pure.parts[0] or ".." in pure.parts:
        return None
    parts = [part for part in pure.parts if part not in ("", ".")]
    return "/".join(parts) if parts else None


def _check_budget(where: str, name: str, size: int, total: int, count: int) -> None:
    if size > MAX_FILE_BYTES:
        raise SubmissionError(f"{where}: {name} is {size // 2**20} MiB; the limit is {MAX_FILE_BYTES // 2**20} MiB per file")
    if total > MAX_TOTAL_BYTES:
        raise SubmissionError(f"{where}: more than {MAX_TOTAL_BYTES // 2**20} MiB in all; the submission was refused")
    if count > MAX_FILES:
        raise SubmissionError(f"{where}: more than {MAX_FILES} files; the submission was refused")


def _drop_enclosing_folder(files: dict[str, bytes]) -> dict[str, bytes]:
    """Students often zip the folder rather than its contents: look inside one lone folder."""
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) == 1 and all("/" in name for name in files):
        top = tops.pop()
        return {name[len(top) + 1:]: data for name, data in files.items()}
    return files


def missing_files(expected: tuple[str, ...], files: dict[str, bytes]) -> list[str]:
    """A line for each expected file the submission lacks; where another file looks like it (other
    case, an extra suffix, in a subfolder), the line names it and says what to do."""
    notes = []
    for name in expected:
        if name in files:
            continue
        look_alike = next((path for path in sorted(files) if _looks_like(path, name)), None)
        if look_alike is None:
            notes.append(f"{name} is missing from the submission")
        elif look_alike.rsplit("/", 1)[-1] == name:
            notes.append(f"{name} is missing; found {look_alike}: move it to the top of the folder")
        else:
            notes.append(f"{name} is missing; found {look_alike}: rename it to {name}")
    return notes


def _looks_like(path: str, name: str) -> bool:
    base, name = path.rsplit("/", 1)[-1].lower(), name.lower()
    return base == name or base.startswith(name + ".")
