"""Reading a submission (a folder or a .zip) into memory, safely.

Nothing is extracted to disk here: the sandbox writes the files into its own private folder.
A submission is the files the assignment names, plus any other .py modules they may import;
everything else (a .venv, data files, .DS_Store, __MACOSX, notebook checkpoints) is skipped
unread, with one warning. Caps (course/caps.py) bound what is listed and read, and are checked
before anything is read in full: a named file over the cap is not read (it costs the questions
that use it, with the reason), extra modules past the caps are skipped, and no zip member is ever
inflated past the cap. A file or folder name is data: one the sandbox could not write (not UTF-8,
too long) is skipped with a warning, as are links. Only a submission that cannot be read at all
is refused as a whole: a zip that is corrupt, a bomb, or has an entry that would escape its
folder or that it holds twice; a folder or zip with too many entries or nested too deep. A
submission whose only file is a zip (zipped twice) is what that zip holds, read with the same
refusals; a zip in a zip in a zip is refused (_unwrapped).

A submission may instead be a notebook (an .ipynb, or a folder or zip holding one, and none of the
named files): the code of its answer cells (course/answer_cells.py) stands for the files, and a
file without a cell costs only the questions that use it, with the reason.

A submission may also be one student's files inside an LMS's bulk download (course/lms.py): a
Found with `members`, read from the download's folder or zip under the names the student gave
them; where those are one zip, the zip inside the download is read, in memory, as a submission.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Collection, Iterator

from checks.course import inert
from checks.course.answer_cells import NotANotebook, missing_cell_note, read_answers
from checks.course.caps import (MAX_BULK_ENTRIES, MAX_DEPTH, MAX_ENTRIES, MAX_FILE_BYTES, MAX_FILES, MAX_NAME_BYTES,
                                MAX_NESTED_ZIP_BYTES, MAX_NOTEBOOK_BYTES, MAX_NOTEBOOKS_BYTES, MAX_PATH_BYTES, MAX_RATIO,
                                MAX_RATIO_BYTES, MAX_TOTAL_BYTES, MAX_UNPACKED_BYTES, MAX_ZIP_DIRECTORY_BYTES, MIB)

NOTEBOOK_SUFFIX = ".ipynb"
# folders never looked into: caches, version control, virtual environments, macOS zip debris
SKIPPED_DIRS = {"__pycache__", ".git", ".ipynb_checkpoints", "__MACOSX", ".pytest_cache", ".venv", "venv",
                "site-packages", "node_modules", ".mypy_cache", ".idea", ".vscode"}
JUNK_FILES = {".DS_Store", "Thumbs.db", "desktop.ini"}
# what opening a zip, reading a file or inflating a zip member may raise on a corrupt or hostile
# input (a name flagged UTF-8 that is not raises UnicodeDecodeError, a ValueError): the student's
# doing, so the file costs its questions, or the zip is refused; never a grader failure
READ_ERRORS = (OSError, zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError,
               struct.error)
SHOWN_SKIPPED = 5  # names listed in the warning about skipped files


class SubmissionError(Exception):
    """The submission cannot be read at all; str() says why, in words a TA can pass on."""


@dataclass
class Submission:
    name: str
    files: dict[str, bytes]
    warnings: list[str] = field(default_factory=list)
    # named files that are there but were not read (too big, unreadable): name -> why
    unread: dict[str, str] = field(default_factory=dict)


@dataclass
class Listed:
    """A file of the submission, listed but not read yet."""

    path: str  # relative, posix
    size: int  # as the file system or the zip's header says
    read: Callable[[int], bytes]  # at most that many bytes


@dataclass
class FolderListing:
    """What a folder submission holds, as the reader sees it (list_folder)."""

    files: list[Listed]
    warnings: list[str]
    skipped: list[str]  # folders not looked into (caches, environments), with a trailing /


def submission_name(path: Path) -> str:
    """The folder name or zip (notebook) stem, mended (inert.mend): a name that is not UTF-8 is
    the same text in the gradebook, the output folder and every file written."""
    return inert.mend(path.stem if path.suffix in (".zip", NOTEBOOK_SUFFIX) else path.name)


Members = tuple[tuple[str, str], ...]  # (an entry of a bulk download, the name the student gave the file)


@dataclass(frozen=True)
class Found:
    """One student's submission as the command line leads to it: what is read, and its name.

    `path` is a folder, zip or notebook; with `members`, the folder or zip of an LMS's bulk
    download, of which only those entries are the student's (read under the names the student
    gave them). `name` defaults to the path's own (submission_name); any name is mended."""

    path: Path
    name: str = ""
    student_id: str = ""  # the LMS's id of the student, where the name came from an LMS's download
    members: Members = ()
    notes: tuple[str, ...] = ()  # for the student's feedback: how the files were read

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", inert.mend(self.name) if self.name else submission_name(self.path))

    @property
    def nested_zip(self) -> bool:
        """The student's files in a bulk download are one zip: that zip is the submission."""
        return len(self.members) == 1 and self.members[0][1].lower().endswith(".zip")

    def describe(self) -> str:
        """Where it was read from, in words (the gradebook's `source`): its path, as str() of a path."""
        if not self.members:
            return str(self.path)
        return f"{self.path}: {', '.join(entry for entry, _ in self.members)}"

    __str__ = describe


def read_found(found: Found, named: Collection[str] | None = None) -> Submission:
    """read_submission, for a Found: a student's members of a bulk download, or a path under a name
    of its own; its notes become warnings in the feedback."""
    if not found.members:
        submission = read_submission(found.path, named)
    elif found.path.is_dir():
        entries, warnings = _folder_members(found.path, found.members)
        submission = _select(found.name, *_drop_enclosing_folder(entries, []), named, warnings)
    else:
        submission = _zip_members(found, named)
    submission.name = found.name
    submission.warnings[:0] = list(found.notes)
    return submission


def is_skipped_dir(name: str) -> bool:
    """A folder whose contents are never part of a submission."""
    return name in SKIPPED_DIRS


def read_submission(path: Path, named: Collection[str] | None = None) -> Submission:
    """A folder or zip as {relative posix path: bytes}; one enclosing folder is dropped.

    `named`: the files the assignment names (read first, each on its own account); other files
    are read only when they are .py modules. None: every file counts (an author's folder).
    """
    name = submission_name(path)
    if path.is_dir():
        listing = list_folder(path)
        with _unwrapped(path.name, *_drop_enclosing_folder(listing.files, listing.skipped),
                        listing.warnings) as (entries, skipped, warnings):
            return _select(name, entries, skipped, named, warnings)
    if path.suffix == ".zip" and path.is_file():
        with open_zip(path) as archive:
            entries, warnings, skipped = _list_zip(path.name, archive)
            with _unwrapped(path.name, *_drop_enclosing_folder(entries, skipped), warnings) as (entries, skipped,
                                                                                               warnings):
                return _select(name, entries, skipped, named, warnings)
    if path.suffix == NOTEBOOK_SUFFIX and path.is_file():
        entry = Listed(path.name, path.stat().st_size, lambda cap: _read_capped(path, cap))
        return _select(name, [entry], [], named, [])
    if not path.exists():
        raise SubmissionError(f"{path} does not exist")
    raise SubmissionError(f"{path} is neither a folder, a .zip file nor a notebook (.ipynb)")


def list_folder(root: Path) -> FolderListing:
    """Every regular file under `root`, sorted, none read yet. Raises SubmissionError past
    MAX_ENTRIES entries or MAX_DEPTH levels, found while listing (a folder is listed only so far).
    Links are not followed, SKIPPED_DIRS not entered, and a file the sandbox could not write (a
    name that is not UTF-8, a path over MAX_PATH_BYTES) is skipped: each with a warning."""
    listing = FolderListing([], [], [])
    ignored: list[str] = []
    root = root.resolve()
    stack: list[tuple[str, str, int]] = [(str(root), "", 0)]  # folder, its relative path with a /, its depth
    seen = 0
    while stack:
        folder, prefix, depth = stack.pop()
        children: list[os.DirEntry[str]] = []
        try:
            with os.scandir(folder) as scan:
                for child in scan:
                    seen += 1
                    if seen > MAX_ENTRIES:
                        raise SubmissionError(f"{root.name} holds more than {MAX_ENTRIES:,} files and folders (a "
                                              "dataset, an environment?); the grader lists no more than that, so "
                                              "the submission was refused: submit only your work")
                    children.append(child)
        except OSError as error:
            ignored.append(f"{prefix or './'}: could not be listed ({error.strerror})")
            continue
        below: list[tuple[str, str, int]] = []
        for child in sorted(children, key=lambda entry: entry.name):
            relative = prefix + child.name
            try:
                if child.is_symlink():
                    ignored.append(f"{relative}: a symlink")
                elif child.is_dir(follow_symlinks=False):
                    if is_skipped_dir(child.name):
                        listing.skipped.append(relative + "/")
                    elif depth + 1 > MAX_DEPTH:
                        raise SubmissionError(_too_deep(root.name, relative))
                    else:
                        below.append((child.path, relative + "/", depth + 1))
                elif not child.is_file(follow_symlinks=False):
                    ignored.append(f"{relative}: not a regular file (a fifo or device?)")
                elif (why := _unwritable(relative)) is not None:
                    ignored.append(f"{ascii(relative) if not _is_utf8(relative) else relative}: {why}")
                else:
                    full = Path(child.path)
                    listing.files.append(Listed(relative, child.stat(follow_symlinks=False).st_size,
                                                lambda cap, full=full: _read_capped(full, cap)))
            except OSError as error:
                ignored.append(f"{relative}: could not be read ({error.strerror})")
        stack += reversed(below)  # depth first, in name order, as os.walk would
    listing.warnings += _ignored(ignored)
    return listing


def _too_deep(where: str, path: str) -> str:
    return (f"{where} nests folders more than {MAX_DEPTH} deep ({path[:80]}...); the grader looks no deeper, so "
            "the submission was refused")


def _unwritable(path: str) -> str | None:
    """Why the sandbox could not write a file of this relative path, or None."""
    if not _is_utf8(path):
        return "a file name that is not UTF-8"
    encoded = path.encode("utf-8")
    if len(encoded) > MAX_PATH_BYTES or any(len(part) > MAX_NAME_BYTES for part in encoded.split(b"/")):
        return "a name too long for a file system"
    return None


def _ignored(notes: list[str]) -> list[str]:
    """One warning each for the first few files ignored (`name: why`), one line for the rest."""
    lines = [f"{note}, ignored" for note in notes[:SHOWN_SKIPPED]]
    if len(notes) > SHOWN_SKIPPED:
        lines.append(f"and {len(notes) - SHOWN_SKIPPED} more files ignored likewise")
    return lines


def _read_capped(path: Path, cap: int) -> bytes:
    with path.open("rb") as handle:
        return handle.read(cap)


@contextlib.contextmanager
def open_zip(path: Path, *, data: bytes | None = None, where: str = "",
             bulk: Collection[str] | None = None) -> Iterator[zipfile.ZipFile]:
    """The zip at `path` (or in `data`, named `where`), open, once its directory has passed the caps
    (read first on its own: a huge one is never parsed) and its members' sizes show no bomb.
    SubmissionError otherwise, or when it cannot be read at all, whatever the zip module raises.
    `bulk`: the zip is an LMS's bulk download, of which only these entries are read (one student's):
    the whole may list up to MAX_BULK_ENTRIES, and only those entries are checked for a bomb."""
    where = where or path.name
    entries_cap = MAX_BULK_ENTRIES if bulk is not None else MAX_ENTRIES
    try:
        with (io.BytesIO(data) if data is not None else path.open("rb")) as handle:
            end = zipfile._EndRecData(handle)  # type: ignore[attr-defined]  # the directory's own record
        if end is None:
            raise zipfile.BadZipFile("File is not a zip file")
        if end[zipfile._ECD_SIZE] > MAX_ZIP_DIRECTORY_BYTES or end[zipfile._ECD_ENTRIES_TOTAL] > entries_cap:  # type: ignore[attr-defined]
            raise SubmissionError(_too_many(where, entries_cap))
        archive = zipfile.ZipFile(io.BytesIO(data) if data is not None else path)
    except READ_ERRORS as error:
        raise SubmissionError(f"{where} is not a readable zip file ({error})") from None
    with archive:
        members = archive.infolist()
        if len(members) > entries_cap:
            raise SubmissionError(_too_many(where, entries_cap))
        if bulk is not None:
            wanted = set(bulk)
            members = [info for info in members if info.filename in wanted]
        unpacked = sum(info.file_size for info in members)
        packed = sum(info.compress_size for info in members)
        if unpacked > MAX_UNPACKED_BYTES or (unpacked > MAX_RATIO_BYTES and unpacked > MAX_RATIO * max(packed, 1)):
            raise SubmissionError(f"{where} would unpack to {unpacked / MIB:,.0f} MiB from {packed / MIB:,.1f} MiB "
                                  f"(a zip bomb?); the grader takes at most {MAX_UNPACKED_BYTES // MIB:,} MiB, "
                                  f"and {MAX_RATIO_BYTES // MIB} MiB at over {MAX_RATIO}:1, so the zip was refused")
        yield archive


def _too_many(where: str, cap: int = MAX_ENTRIES) -> str:
    return (f"{where} holds more than {cap:,} entries (a dataset, an environment?); the grader lists no more "
            "than that, so the zip was refused: submit only your work")


def zip_entries(path: Path) -> list[str] | None:
    """The names of a zip's files, from its directory alone (capped as for a bulk download; nothing
    inflated), or None when it is no readable zip: asked of every zip named on the command line,
    to tell an LMS's bulk download from a student's zip."""
    try:
        with open_zip(path, bulk=()) as archive:
            return [info.filename for info in archive.infolist() if not info.filename.endswith("/")]
    except SubmissionError:
        return None


def _folder_members(root: Path, members: Members) -> tuple[list[Listed], list[str]]:
    """One student's files of a bulk download folder, listed (links and other odd files skipped
    with a warning, as list_folder does), under the names the student gave them."""
    entries: list[Listed] = []
    ignored: list[str] = []
    for entry, name in members:
        full = root / entry
        try:
            info = os.lstat(full)
        except OSError as error:
            ignored.append(f"{name}: could not be read ({error.strerror})")
            continue
        if stat.S_ISLNK(info.st_mode):
            ignored.append(f"{name}: a symlink")
        elif not stat.S_ISREG(info.st_mode):
            ignored.append(f"{name}: not a regular file (a fifo or device?)")
        elif (safe := _safe_member(name)) is None:
            ignored.append(f"{ascii(name) if not _is_utf8(name) else name}: a name outside the submission folder")
        elif (why := _unwritable(safe)) is not None:
            ignored.append(f"{ascii(name) if not _is_utf8(name) else name}: {why}")
        else:
            entries.append(Listed(safe, info.st_size, lambda cap, full=full: _read_capped(full, cap)))
    return entries, _ignored(ignored)


def _zip_members(found: Found, named: Collection[str] | None) -> Submission:
    """One student's files of a bulk download zip: read from it as from a zip of their own (the
    same refusals, for this student only); one zip of theirs is read, in memory, as their submission."""
    where = f"{found.path.name} ({found.name}'s files)"
    with open_zip(found.path, where=where, bulk=[entry for entry, _ in found.members]) as archive:
        infos: dict[str, zipfile.ZipInfo] = {}
        names = dict(found.members)
        for info in archive.infolist():
            if info.filename not in names or info.filename.endswith("/"):
                continue
            if info.filename in infos:
                raise SubmissionError(f"{where}: the download holds {names[info.filename]} twice; which one to "
                                      "grade would be a guess, so the submission was refused")
            infos[info.filename] = info
        if found.nested_zip:
            (entry, name), = found.members
            info = infos.get(entry)
            if info is None:
                raise SubmissionError(f"{where}: {name} is not in the download")
            data = _inflate_capped(archive, info, MAX_NESTED_ZIP_BYTES + 1)
            if len(data) > MAX_NESTED_ZIP_BYTES:
                raise SubmissionError(f"{name} is over {MAX_NESTED_ZIP_BYTES // MIB} MiB, the most the grader reads "
                                      "of a zip inside a download, so it was refused: unzip the download and grade "
                                      "its folder")
            with open_zip(found.path, data=data, where=name) as inner:
                entries, warnings, skipped = _list_zip(name, inner)
                with _unwrapped(name, *_drop_enclosing_folder(entries, skipped), warnings) as (entries, skipped,
                                                                                             warnings):
                    return _select(found.name, entries, skipped, named, warnings)
        entries: list[Listed] = []
        ignored: list[str] = []
        for entry, name in found.members:
            info = infos.get(entry)
            if info is None:
                ignored.append(f"{name}: not in the download")
            elif stat.S_ISLNK(info.external_attr >> 16):
                ignored.append(f"{name}: a symlink")
            elif (safe := _safe_member(name)) is None:
                ignored.append(f"{name[:100]}: a name outside the submission folder")
            elif (why := _unwritable(safe)) is not None:
                ignored.append(f"{name[:100]}: {why}")
            else:
                entries.append(Listed(safe, info.file_size,
                                      lambda cap, info=info: _inflate_capped(archive, info, cap)))
        return _select(found.name, *_drop_enclosing_folder(entries, []), named, _ignored(ignored))


def _list_zip(where: str, archive: zipfile.ZipFile) -> tuple[list[Listed], list[str], list[str]]:
    """The zip's files, none inflated. Refused (SubmissionError) for an entry that would land outside
    the folder, nests deeper than MAX_DEPTH, or stands for a path another entry holds too
    ("a.py" and "./a.py"; "x.py" as a file and as a folder): which to grade would be a guess."""
    entries: list[Listed] = []
    ignored: list[str] = []
    skipped: set[str] = set()
    taken: dict[str, str] = {}  # safe path -> the entry's name as the zip spells it
    folders: dict[str, str] = {}  # every folder a file is in -> the name of one such file
    for info in archive.infolist():
        name = info.filename
        safe = _safe_member(name)
        folder = name.endswith("/")  # info.is_dir(), which fails on an empty name
        if safe is None and not folder:
            if not _names_nothing(name):
                raise SubmissionError(f"{where}: the entry {name!r} would land outside the submission folder; "
                                      "the zip was refused")
            raise SubmissionError(f"{where}: the entry {name!r} names no file (an empty name, or only '.'); "
                                  "the zip was refused")
        if folder or safe is None:
            continue
        parts = safe.split("/")
        if len(parts) - 1 > MAX_DEPTH:
            raise SubmissionError(_too_deep(where, safe))
        junk = next((k for k, part in enumerate(parts[:-1]) if is_skipped_dir(part)), None)
        if junk is not None:
            skipped.add("/".join(parts[:junk + 1]) + "/")
            continue
        if safe in taken:
            raise SubmissionError(f"{where} holds {safe} twice (as {taken[safe]!r} and {name!r}); which one to grade "
                                  "would be a guess, so the zip was refused: zip the folder again")
        taken[safe] = name
        for k in range(1, len(parts)):
            folders.setdefault("/".join(parts[:k]), name)
        if stat.S_ISLNK(info.external_attr >> 16):
            ignored.append(f"{name}: a symlink")
        elif (why := _unwritable(safe)) is not None:
            ignored.append(f"{name[:100]}: {why}")
        else:
            entries.append(Listed(safe, info.file_size, lambda cap, info=info: _inflate_capped(archive, info, cap)))
    clash = sorted(set(taken) & set(folders))
    if clash:
        raise SubmissionError(f"{where} holds {clash[0]} both as a file and as a folder (of {folders[clash[0]]!r}); "
                              "the zip was refused: zip the folder again")
    return entries, _ignored(ignored), sorted(skipped)


def _lone_zip(entries: list[Listed]) -> Listed | None:
    """The one file of a submission, where it is a zip (a .DS_Store beside it does not count)."""
    files = [e for e in entries if e.path.split("/")[-1] not in JUNK_FILES]
    return files[0] if len(files) == 1 and files[0].path.lower().endswith(".zip") else None


@contextlib.contextmanager
def _unwrapped(where: str, entries: list[Listed], skipped: list[str],
               warnings: list[str]) -> Iterator[tuple[list[Listed], list[str], list[str]]]:
    """A submission whose only file is a zip (a zip zipped again, a folder holding its zip) is
    what that zip holds: read in memory (at most MAX_NESTED_ZIP_BYTES) and opened with every
    refusal of a zip of its own (the caps, bombs, entries outside the folder, names twice), one
    enclosing folder dropped, and said in a warning. One level only: a zip whose only file is yet
    another zip is refused, saying what to do. Anything else is yielded as it is."""
    lone = _lone_zip(entries)
    if lone is None:
        yield entries, skipped, warnings
        return
    inner_where = f"{where}: {lone.path}"
    advice = f"unzip {lone.path} and hand in the files it holds (or zip them on their own, not a zip of a zip)"
    if lone.size > MAX_NESTED_ZIP_BYTES:
        raise SubmissionError(f"{inner_where} is over {MAX_NESTED_ZIP_BYTES // MIB} MiB, the most the grader reads "
                              f"of a zip inside a submission, so it was refused: {advice}")
    try:
        data = lone.read(MAX_NESTED_ZIP_BYTES + 1)
    except READ_ERRORS as error:
        raise SubmissionError(f"{inner_where} could not be read ({error}): {advice}") from None
    if len(data) > MAX_NESTED_ZIP_BYTES:
        raise SubmissionError(f"{inner_where} is over {MAX_NESTED_ZIP_BYTES // MIB} MiB, the most the grader reads "
                              f"of a zip inside a submission, so it was refused: {advice}")
    with open_zip(Path(lone.path), data=data, where=inner_where) as inner:
        entries, inner_warnings, inner_skipped = _list_zip(inner_where, inner)
        entries, inner_skipped = _drop_enclosing_folder(entries, inner_skipped)
        deeper = _lone_zip(entries)
        if deeper is not None:
            raise SubmissionError(f"{inner_where} holds only another zip ({deeper.path}): the grader opens one zip "
                                  f"inside a submission, not a zip in a zip in a zip, so it was refused: {advice}")
        note = f"{where} holds only {lone.path}: the files inside {lone.path} were read as the submission"
        yield entries, skipped + inner_skipped, [*warnings, note, *inner_warnings]


def _inflate_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> bytes:
    with archive.open(info) as member:
        return member.read(cap)  # the header's size may lie: never inflate past the cap


def _select(name: str, entries: list[Listed], skipped: list[str], named: Collection[str] | None,
            warnings: list[str]) -> Submission:
    """Read the named files, then the extra modules while the caps allow; skip the rest unread."""
    submission = Submission(name, {}, warnings)
    wanted = set(named) if named is not None else None
    entries, no_cell = _answer_cells(entries, wanted, warnings)
    first = [e for e in entries if wanted is None or e.path in wanted]
    extra = [e for e in entries if wanted is not None and e.path not in wanted
             and (_is_module(e.path) or any(_looks_like(e.path, name) for name in wanted))]  # strides.PY: say so
    chosen = {id(e) for e in first + extra}
    skipped += [e.path for e in entries if id(e) not in chosen]
    total = 0
    over_caps: list[str] = []
    for entry in first + extra:
        problem = _budget_problem(entry.size, total, len(submission.files))
        data = b""
        if problem is None:
            try:
                data = entry.read(MAX_FILE_BYTES + 1)
            except READ_ERRORS as error:
                problem = f"could not be read ({error})"
            else:
                problem = _budget_problem(len(data), total, len(submission.files))
        if problem is None:
            submission.files[entry.path] = data
            total += len(data)
        elif wanted is not None and entry.path in wanted:
            submission.unread[entry.path] = f"{entry.path} {problem}, so it was not read"
            submission.warnings.append(f"{entry.path} {problem}, so it was not read: the questions that use it "
                                       "score 0.")
        else:
            over_caps.append(f"{entry.path} ({problem})")
    for file_name, note in no_cell.items():
        submission.unread[file_name] = note
        submission.warnings.append(f"{note}: the questions that use {file_name} score 0.")
    if over_caps:
        submission.warnings.append("not read, over the limits: " + _listing(over_caps))
    if skipped:
        submission.warnings.append("skipped, as the assignment does not use them: " + _listing(skipped))
    return submission


def _answer_cells(entries: list[Listed], wanted: set[str] | None,
                  warnings: list[str]) -> tuple[list[Listed], dict[str, str]]:
    """Where the submission is a notebook (none of the named files, one notebook with answer cells):
    the entries with its cells in place of the notebook, and the reason for each named file that
    has no cell. A notebook that cannot be read, when nothing else could be graded, refuses the
    submission."""
    if not wanted or any(entry.path in wanted for entry in entries):
        return entries, {}
    found: list[tuple[Listed, dict[str, str]]] = []
    unreadable: list[str] = []
    cellless: list[Listed] = []  # notebooks read, with no answer cell: said so, never "not used"
    spent = 0  # what the notebooks read so far add up to: MAX_NOTEBOOKS_BYTES in all
    for entry in (e for e in entries if e.path.endswith(NOTEBOOK_SUFFIX)):
        if entry.size <= MAX_NOTEBOOK_BYTES and spent + entry.size > MAX_NOTEBOOKS_BYTES:
            unreadable.append(f"{entry.path} was not read: the notebooks before it took the "
                              f"{MAX_NOTEBOOKS_BYTES // MIB} MiB the grader reads of notebooks")
            continue
        try:
            data = entry.read(MAX_NOTEBOOK_BYTES + 1) if entry.size <= MAX_NOTEBOOK_BYTES else b""
        except READ_ERRORS as error:
            unreadable.append(f"{entry.path} could not be read ({error})")
            continue
        spent += len(data)
        if not data or len(data) > MAX_NOTEBOOK_BYTES:
            unreadable.append(f"{entry.path} is over the limit of {MAX_NOTEBOOK_BYTES // 2**20} MiB for a notebook"
                              if data or entry.size else f"{entry.path} is empty, not a notebook")
            continue
        try:
            answers = read_answers(data)
        except NotANotebook as error:
            unreadable.append(f"{entry.path} is {error}")
            continue
        if answers.repeated:
            warnings.append(f"{entry.path} has more than one answer cell for {', '.join(answers.repeated)}; "
                            "the last one was graded")
        if answers.files:
            found.append((entry, answers.files))
        else:
            cellless.append(entry)
    if len(found) > 1:
        raise SubmissionError(f"{len(found)} notebooks hold answer cells ({', '.join(e.path for e, _ in found)}): "
                              "keep only the one to be graded")
    if not found:
        if unreadable:
            raise SubmissionError("; ".join(unreadable))
        if cellless:  # the notebook is the submission, without the cells that stand for its files
            notebook = cellless[0]
            return [e for e in entries if e is not notebook], {name: missing_cell_note(name, notebook.path)
                                                                for name in sorted(wanted)}
        return entries, {}
    notebook, files = found[0]
    cells: list[Listed] = []
    not_text: dict[str, str] = {}  # a cell whose source no file can hold: the student's to mend
    for cell_name, code in files.items():
        safe = _safe_member(cell_name)
        if safe is None:
            warnings.append(f"{notebook.path}: an answer cell names {cell_name!r}, outside the submission; ignored")
            continue
        try:
            data = code.encode("utf-8")
        except UnicodeEncodeError as error:
            line = code.count("\n", 0, error.start) + 1
            not_text[safe] = (f"{notebook.path}: the answer cell for {safe} holds characters that are not text "
                              f"(an unpaired surrogate, \\u{ord(code[error.start]):04x}, on line {line} of the cell), "
                              "so it could not be graded; retype that line, or paste the released cell back")
            continue
        cells.append(Listed(safe, len(data), lambda cap, data=data: data[:cap]))
    names = {cell.path for cell in cells}
    others = [e for e in entries if e is not notebook and e.path not in names]
    no_cell = {name: not_text.get(name) or missing_cell_note(name, notebook.path) for name in sorted(wanted)
               if name not in names and all(e.path != name for e in others)}
    warnings += [note for name, note in not_text.items() if name not in no_cell]
    return cells + others, no_cell


def _budget_problem(size: int, total: int, count: int) -> str | None:
    """Why a file of `size` bytes may not be read after `count` files of `total` bytes, or None."""
    limit = f"{MAX_FILE_BYTES // 2**20} MiB per file"
    if size == MAX_FILE_BYTES + 1:  # a capped read knows only that it is over the cap
        return f"is over the limit of {limit}"
    if size > MAX_FILE_BYTES:
        return f"is {size / 2**20:.0f} MiB; the limit is {limit}"
    if total + size > MAX_TOTAL_BYTES:
        return f"would take the submission past {MAX_TOTAL_BYTES // 2**20} MiB in all"
    if count >= MAX_FILES:
        return f"would take the submission past {MAX_FILES} files"
    return None


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN_SKIPPED])
    return shown + (f" and {len(names) - SHOWN_SKIPPED} more" if len(names) > SHOWN_SKIPPED else "")


def _is_module(path: str) -> bool:
    return path.endswith(".py") and not any(part.startswith(".") for part in path.split("/"))


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.walk hands undecodable bytes back as surrogates
        return False
    return True


def _names_nothing(name: str) -> bool:
    """An entry's name without a single part but '.' ('', '.', './.'): no file to land anywhere."""
    return not [part for part in name.replace("\\", "/").split("/") if part not in ("", ".")] \
        and not name.startswith("/")


def _safe_member(name: str) -> str | None:
    """The entry's path if it stays inside the submission, else None."""
    name = name.replace("\\", "/")
    pure = PurePosixPath(name)
    if _names_nothing(name) or name.startswith("/") or pure.is_absolute() or ":" in pure.parts[0] \
            or ".." in pure.parts:
        return None
    parts = [part for part in pure.parts if part not in ("", ".")]
    return "/".join(parts) if parts else None


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


def _drop_enclosing_folder(entries: list[Listed], skipped: list[str]) -> tuple[list[Listed], list[str]]:
    """Students often zip the folder rather than its contents, and sometimes the folder that holds
    that folder (01_tensors/01_tensors/...): look inside each lone folder, however deep (a .DS_Store
    beside it does not count). `skipped` (folders not looked into) is named the same way."""
    while True:
        files = [e for e in entries if e.path.split("/")[-1] not in JUNK_FILES]
        tops = {e.path.split("/", 1)[0] for e in files}
        if len(tops) != 1 or not all("/" in e.path for e in files):
            return entries, skipped
        prefix = tops.pop() + "/"
        entries = [Listed(e.path.removeprefix(prefix), e.size, e.read) for e in entries]
        skipped = [name.removeprefix(prefix) for name in skipped]
