"""Reading a submission (a folder or a .zip) into memory, safely.

Nothing is extracted to disk here: the sandbox writes the files into its own private folder.
A submission is the files the assignment names, plus any other .py modules they may import;
everything else (a .venv, data files, .DS_Store, __MACOSX, notebook checkpoints) is skipped
unread, with one warning. Caps bound what is read into memory: a named file over the cap is not
read (it costs the questions that use it, with the reason), extra modules past the caps are
skipped, and no zip member is ever inflated past the cap. Only a zip that cannot be read at all,
or one with an entry that would escape its folder, is refused as a whole.

A submission may instead be a notebook (an .ipynb, or a folder or zip holding one, and none of the
named files): the code of its answer cells (course/answer_cells.py) stands for the files, and a
file without a cell costs only the questions that use it, with the reason.
"""

from __future__ import annotations

import os
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Collection

from checks.course import inert
from checks.course.answer_cells import NotANotebook, missing_cell_note, read_answers

MAX_FILES = 200  # read into memory, named files included
MAX_TOTAL_BYTES = 20 * 2**20
MAX_FILE_BYTES = 5 * 2**20
MAX_NOTEBOOK_BYTES = MAX_TOTAL_BYTES  # a notebook carries its outputs (plots): it may be larger than a file
NOTEBOOK_SUFFIX = ".ipynb"
# folders never looked into: caches, version control, virtual environments, macOS zip debris
SKIPPED_DIRS = {"__pycache__", ".git", ".ipynb_checkpoints", "__MACOSX", ".pytest_cache", ".venv", "venv",
                "site-packages", "node_modules", ".mypy_cache", ".idea", ".vscode"}
JUNK_FILES = {".DS_Store", "Thumbs.db", "desktop.ini"}
# what reading a file or inflating a zip member may raise: the file costs its questions, never the grader
READ_ERRORS = (OSError, zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError)
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
class _Entry:
    """A file of the submission, listed but not read yet."""

    path: str  # relative, posix
    size: int  # as the file system or the zip's header says
    read: Callable[[int], bytes]  # at most that many bytes


def submission_name(path: Path) -> str:
    """The folder name or zip (notebook) stem, mended (inert.mend): a name that is not UTF-8 is
    the same text in the gradebook, the output folder and every file written."""
    return inert.mend(path.stem if path.suffix in (".zip", NOTEBOOK_SUFFIX) else path.name)


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
        entries, warnings, skipped = _list_folder(path)
        return _select(name, *_drop_enclosing_folder(entries, skipped), named, warnings)
    if path.suffix == ".zip" and path.is_file():
        try:
            archive = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as error:
            raise SubmissionError(f"{path.name} is not a readable zip file ({error})") from None
        with archive:
            entries, warnings, skipped = _list_zip(path.name, archive)
            return _select(name, *_drop_enclosing_folder(entries, skipped), named, warnings)
    if path.suffix == NOTEBOOK_SUFFIX and path.is_file():
        entry = _Entry(path.name, path.stat().st_size, lambda cap: _read_capped(path, cap))
        return _select(name, [entry], [], named, [])
    if not path.exists():
        raise SubmissionError(f"{path} does not exist")
    raise SubmissionError(f"{path} is neither a folder, a .zip file nor a notebook (.ipynb)")


def _list_folder(root: Path) -> tuple[list[_Entry], list[str], list[str]]:
    entries: list[_Entry] = []
    warnings: list[str] = []
    skipped: list[str] = []
    root = root.resolve()
    for folder, dirs, names in os.walk(root):
        kept = []
        for d in sorted(dirs):
            full = os.path.join(folder, d)
            if is_skipped_dir(d):
                skipped.append(Path(full).relative_to(root).as_posix() + "/")
            elif not os.path.islink(full):
                kept.append(d)
        dirs[:] = kept
        for name in sorted(names):
            full = Path(folder) / name
            relative = full.relative_to(root).as_posix()
            if not _is_utf8(relative):
                warnings.append(f"{ascii(relative)}: a file name that is not UTF-8, ignored")
            elif full.is_symlink():
                warnings.append(f"{relative}: a symlink, ignored")
            elif not full.is_file():
                warnings.append(f"{relative}: not a regular file (a fifo or device?), ignored")
            else:
                entries.append(_Entry(relative, full.stat().st_size, lambda cap, full=full: _read_capped(full, cap)))
    return entries, warnings, skipped


def _read_capped(path: Path, cap: int) -> bytes:
    with path.open("rb") as handle:
        return handle.read(cap)


def _list_zip(where: str, archive: zipfile.ZipFile) -> tuple[list[_Entry], list[str], list[str]]:
    entries: list[_Entry] = []
    warnings: list[str] = []
    skipped: set[str] = set()
    for info in archive.infolist():
        name = info.filename
        safe = _safe_member(name)
        if safe is None and not info.is_dir():
            raise SubmissionError(f"{where}: the entry {name!r} would land outside the submission folder; "
                                  "the zip was refused")
        if info.is_dir() or safe is None:
            continue
        parts = safe.split("/")
        junk = next((k for k, part in enumerate(parts[:-1]) if is_skipped_dir(part)), None)
        if junk is not None:
            skipped.add("/".join(parts[:junk + 1]) + "/")
        elif stat.S_ISLNK(info.external_attr >> 16):
            warnings.append(f"{name}: a symlink, ignored")
        else:
            entries.append(_Entry(safe, info.file_size, lambda cap, info=info: _inflate_capped(archive, info, cap)))
    return entries, warnings, sorted(skipped)


def _inflate_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> bytes:
    with archive.open(info) as member:
        return member.read(cap)  # the header's size may lie: never inflate past the cap


def _select(name: str, entries: list[_Entry], skipped: list[str], named: Collection[str] | None,
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


def _answer_cells(entries: list[_Entry], wanted: set[str] | None,
                  warnings: list[str]) -> tuple[list[_Entry], dict[str, str]]:
    """Where the submission is a notebook (none of the named files, one notebook with answer cells):
    the entries with its cells in place of the notebook, and the reason for each named file that
    has no cell. A notebook that cannot be read, when nothing else could be graded, refuses the
    submission."""
    if not wanted or any(entry.path in wanted for entry in entries):
        return entries, {}
    found: list[tuple[_Entry, dict[str, str]]] = []
    unreadable: list[str] = []
    for entry in (e for e in entries if e.path.endswith(NOTEBOOK_SUFFIX)):
        try:
            data = entry.read(MAX_NOTEBOOK_BYTES + 1) if entry.size <= MAX_NOTEBOOK_BYTES else b""
        except READ_ERRORS as error:
            unreadable.append(f"{entry.path} could not be read ({error})")
            continue
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
    if len(found) > 1:
        raise SubmissionError(f"{len(found)} notebooks hold answer cells ({', '.join(e.path for e, _ in found)}): "
                              "keep only the one to be graded")
    if not found:
        if unreadable:
            raise SubmissionError("; ".join(unreadable))
        return entries, {}
    notebook, files = found[0]
    cells: list[_Entry] = []
    for cell_name, code in files.items():
        safe = _safe_member(cell_name)
        if safe is None:
            warnings.append(f"{notebook.path}: an answer cell names {cell_name!r}, outside the submission; ignored")
            continue
        data = code.encode("utf-8")
        cells.append(_Entry(safe, len(data), lambda cap, data=data: data[:cap]))
    names = {cell.path for cell in cells}
    others = [e for e in entries if e is not notebook and e.path not in names]
    no_cell = {name: missing_cell_note(name, notebook.path) for name in sorted(wanted)
               if name not in names and all(e.path != name for e in others)}
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


def _safe_member(name: str) -> str | None:
    """The entry's path if it stays inside the submission, else None."""
    name = name.replace("\\", "/")
    pure = PurePosixPath(name)
    if name.startswith("/") or pure.is_absolute() or ":" in pure.parts[0] or ".." in pure.parts:
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
def _drop_enclosing_folder(entries: list[_Entry], skipped: list[str]) -> tuple[list[_Entry], list[str]]:
    """Students often zip the folder rather than its contents: look inside one lone folder
    (a .DS_Store beside it does not count). `skipped` (folders not looked into) is named the same way."""
    files = [e for e in entries if e.path.split("/")[-1] not in JUNK_FILES]
    tops = {e.path.split("/", 1)[0] for e in files}
    if len(tops) != 1 or not all("/" in e.path for e in files):
        return entries, skipped
    prefix = tops.pop() + "/"
    return ([_Entry(e.path.removeprefix(prefix), e.size, e.read) for e in entries],
            [name.removeprefix(prefix) for name in skipped])
