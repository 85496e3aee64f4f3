"""`checks grade`: a whole class into an output folder that survives interruption.

DIR/gradebook.sqlite is the single source of truth (see reports/gradebook.py). Each finished submission
is committed there in one transaction, then its results.json and feedback.md are rendered from
that record (atomically); an interrupted run, Ctrl-C or kill -9, loses at most the submissions
in flight. A submission counts as already graded when the gradebook holds it, graded without a
grader error, from the same content (a fingerprint of its files): a re-run skips those unless
asked to regrade, grades the rest, and then renders every file of the folder (results.json,
feedback.md, gradebook.csv, report.html) again from the database wherever it is missing or
differs. So an interrupted run, re-run, ends with the same gradebook as an uninterrupted one.

One run at a time writes a folder (DIR/gradebook.lock); a write that fails (a full disk,
RLIMIT_FSIZE) stops the run with OutputFailed, which the same command, run again, repairs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import stat
import time
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from checks import __version__
from checks.config.errors import UsageError
from checks.config.settings import Settings
from checks.course.assignment import Assignment
from checks.reports.analytics import ANALYTICS_JSON, MISTAKES_CSV, analytics_json, class_analytics, mistakes_csv
from checks.reports.gradebook import (DB_FILE, Entry, Graded, Gradebook, GradebookUnwritable, Run, Superseded,
                                      lock_folder, utc_now)
from checks.reports.regrade import REGRADE_CSV, regrade_csv, regrade_report
from checks.grading.session import Source, grade_sources, named_files
from checks.reports.html import REPORT_FILE, render_report
from checks.reports.render import (GRADEBOOK_FILE, check_gradebook_csv, gradebook_csv, remove_stale_temp_files,
                                   write_if_changed, write_submission_reports)
from checks.suites.scoring import SubmissionResult
from checks.course.caps import MAX_FILE_BYTES, MAX_FINGERPRINT_BYTES
from checks.course import lms
from checks.course.digest import suite_fingerprint
from checks.course.submissions import (JUNK_FILES, NOTEBOOK_SUFFIX, READ_ERRORS, Found, SubmissionError, is_skipped_dir,
                                       list_folder, zip_entries)
from checks.grading.names import as_found, batch_names
from checks.grading.adjust import Applied, apply_policy, submission_times
from checks.policy.config import Course
from checks.policy.times import SubmissionTimes

# why a submission is graded in this run (None in Planned.reason: already graded, skipped)
NEW, REGRADE, CHANGED, RETRY = ("new", "--regrade", "changed since it was graded",
                                "the grader failed on it last time")

Grader = Callable[..., Iterable[SubmissionResult]]  # grade_sources, or a stand-in in tests


class OutputFailed(Exception):
    """The output folder could not be written (a full disk, a quota, a file size limit): the run
    stopped there. What was committed before stays in the gradebook; the same command, run
    again, grades the rest. str() says so."""


@dataclass(frozen=True)
class Planned:
    path: Path
    name: str
    fingerprint: str
    reason: str | None  # why it is graded now; None when it is already graded and skipped
    note: str = ""  # why its name is not its own (grading/names.py): a warning in its feedback
    found: Found | None = None  # what is read (a student's files in a bulk download, say); None: `path`

    @property
    def source(self) -> Found:
        return self.found or Found(self.path, self.name)


@dataclass
class BatchSummary:
    out_dir: Path
    graded: list[SubmissionResult] = field(default_factory=list)  # by this run
    skipped: list[str] = field(default_factory=list)  # already graded by an earlier run
    records: list[Graded] = field(default_factory=list)  # the whole gradebook after this run, by name
    seconds: float = 0.0
    applied: Applied | None = None  # what the course policy did (None: no course policy was applied)

    @property
    def failed(self) -> list[SubmissionResult]:
        """Submissions of this run the grader itself could not grade (never the student's doing)."""
        return [r for r in self.graded if r.error]

    @property
    def results(self) -> list[SubmissionResult]:
        return [record.result for record in self.records]


class BatchListener:
    """What a grade run reports as it goes (the CLI shows it; tests may record it)."""

    def locked(self) -> None:
        """The run holds the output folder (a second run into it stopped before this): grading begins."""

    def started(self, plan: list[Planned]) -> None:
        """Before grading: every submission asked for, and which of them will be graded."""

    def graded(self, result: SubmissionResult, done: int, total: int) -> None:
        """A submission was graded and saved (`done` of the `total` this run grades)."""

    def stopped(self) -> None:
        """Grading ended, finished or interrupted."""

    def problem(self, message: str) -> None:
        """Something the run could not do that is no submission's grade (bringing the reports up to
        date on the way out of an interrupted run): said beside the interruption, never hidden."""


def check_submission_paths(paths: list[Path | Found]) -> None:
    """A path that does not exist is a typo, not a student: refuse the batch before grading."""
    missing = [str(found.path) for found in map(as_found, paths) if not found.path.exists()]  # a dangling link too
    if missing:
        raise UsageError(f"no such submission: {', '.join(missing)} (nothing was graded; check the path"
                         f"{'s' if len(missing) > 1 else ''})")


def check_out_dir(out_dir: Path, paths: list[Path | Found]) -> None:
    """UsageError, before anything is graded or written, when the output folder is a submission
    (or a bulk download) being graded, lies inside one, or holds one: the grader would write into
    the students' files, and the next run would grade its own output."""
    out = Path(os.path.realpath(out_dir))
    advice = "choose an output folder outside the submissions, such as grades/ (nothing was graded)"
    for found in map(as_found, paths):
        submission = Path(os.path.realpath(found.path))
        if out == submission:
            raise UsageError(f"--out {out_dir} is being graded itself: the grader would write into the "
                             f"submissions; {advice}")
        if submission in out.parents:
            raise UsageError(f"--out {out_dir} is inside {found.path}, which is being graded: the grader would "
                             f"write into it; {advice}")
        if out in submission.parents:
            raise UsageError(f"--out {out_dir} holds {found.path}, which is being graded: the grader would write "
                             f"beside it, or into it; {advice}")


def expand_submission_paths(paths: list[Path], assignment: str | None = None,
                            skipped: list[str] | None = None) -> list[Found]:
    """Each student's submission among the paths given (UsageError naming every path that does not exist).

    Folders, zips and notebooks as given; a folder that holds two or more of them (and no work of its
    own) stands for each. A folder that holds one, and no work of its own, is a student's that wraps
    their work (alice/hw2/, alice/hw2.zip): graded as alice. A folder that holds one named for the
    assignment (nbgrader's submitted/<student>/<name>/, or <name>.ipynb) is one student's. An LMS's
    bulk download (a Canvas or Moodle folder or zip, or its files and folders given one by one:
    course/lms.py) stands for each student in it, under the name and id the LMS gives them.

    Hidden entries (a name that starts with a dot) count when telling a folder of submissions from
    one submission, so that one cannot make its neighbours one student's; they are not graded.

    Names come only from what the grader was given, never from inside a student's work: a class
    folder or a bulk download is read as one only where it is the one path given, and each of its
    entries is one student's (a student's folder or zip that holds folders, or files named as an
    LMS names them, cannot stand for other students). Among several paths (`submissions/*`), each
    is one student's, or an LMS's entry given one by one.
    `skipped`: a line to show is added for every entry of a folder of submissions that is not
    graded, and for every path that looks like several students but is graded as one, saying why."""
    check_submission_paths(paths)
    found: list[Found] = []
    one_by_one: dict[Path, list[tuple[Path, lms.LmsName]]] = {}  # LMS-named files or folders, by folder
    notes = skipped if skipped is not None else []
    submitted = [path for path in paths  # `canvas/*` names .DS_Store and __MACOSX/ too: nobody's submission
                 if not ((path.name in JUNK_FILES and path.is_file()) or (is_skipped_dir(path.name) and path.is_dir()))]
    for path in submitted:
        named = lms.lms_name(path.name, folder=path.is_dir())
        if named is not None and (path.is_dir() or path.is_file()):
            one_by_one.setdefault(path.parent, []).append((path, named))
            continue
        if len(submitted) == 1:
            found += _student(path, assignment, class_folder=True, skipped=notes)
        else:
            found += _one_student(path, assignment, notes)
    for folder, given in one_by_one.items():
        found += _lms_students(folder, [(path.name, named) for path, named in given])
    return found


def _submission_like(path: Path, assignment: str | None) -> tuple[list[Path], list[Path], list[tuple[Path, str]]]:
    """What in a folder may be a student's submission (folders, zips, notebooks), unless the folder
    holds work of its own (.py files, quiz.toml, a folder or notebook named for the assignment); the
    hidden ones (submission-like but for a name that starts with a dot); and each other entry, with
    why it is no submission."""
    if not path.is_dir() or any(path.glob("*.py")) or (path / "quiz.toml").exists():
        return [], [], []
    children: list[Path] = []
    hidden: list[Path] = []
    others: list[tuple[Path, str]] = []
    for child in sorted(path.iterdir()):
        like = child.is_dir() or child.suffix in (".zip", NOTEBOOK_SUFFIX)
        if is_skipped_dir(child.name) or child.name in JUNK_FILES:
            others.append((child, "a tool's or the system's own, nobody's submission"))
        elif child.name.startswith(".") and like:
            hidden.append(child)
        elif child.name.startswith("."):
            others.append((child, "a hidden file, not a folder, zip or notebook"))
        elif like:
            children.append(child)
        else:
            others.append((child, "not a folder, zip or notebook"))
    if any(assignment in (child.name, child.stem) for child in children):
        return [], [], []
    return children, hidden, others


def _student(path: Path, assignment: str | None, *, class_folder: bool = False,
             skipped: list[str] | None = None) -> list[Found]:
    """The submission at `path`: a bulk download's students; with `class_folder`, a folder's two or
    more submissions (hidden ones counted, though not graded: each skipped entry is noted in
    `skipped`); else one student's. A folder that wraps a student's work in one zip or notebook,
    and holds no work of its own, is read there, named for the folder (a lone folder inside is
    dropped when the folder is read)."""
    if (download := _download(path)) is not None:
        return download
    inside, hidden, others = _submission_like(path, assignment)
    if class_folder and len(inside) + len(hidden) >= 2:
        if skipped is not None:
            skipped += [f"skipped {entry}: not graded; its name starts with a dot, which hides it (rename it to "
                        "grade it)" for entry in hidden]
            skipped += [f"skipped {entry}: not graded; {why}" for entry, why in others]
        return [found for child in inside for found in _one_student(child, assignment, skipped)]
    if len(inside) == 1 and inside[0].is_file():
        return _download(inside[0]) or [Found(inside[0], Found(path).name)]
    return [Found(path)]


def _one_student(path: Path, assignment: str | None, skipped: list[str] | None) -> list[Found]:
    """The submission at `path`, one student's whatever it holds, under the name of `path`: a
    folder that wraps the student's work in one zip or notebook is read there. One that looks
    like several students (folders of work, files named as an LMS names them) is noted in
    `skipped`: its content is the student's, and cannot name anyone."""
    inside, hidden, _ = _submission_like(path, assignment)
    wrapped = inside[0] if len(inside) == 1 and inside[0].is_file() else None
    looks_like_several = _download(wrapped or path) is not None or (wrapped is None and len(inside) + len(hidden) >= 2)
    if skipped is not None and looks_like_several:
        skipped.append(f"{path}: graded as one student's submission, though it looks like several (a folder of "
                       "submissions or an LMS download): what a submission holds cannot name other students; "
                       "to grade a class folder or a download, give it alone")
    return [Found(wrapped, Found(path).name)] if wrapped is not None else [Found(path)]


def _download(path: Path) -> list[Found] | None:
    """Each student of an LMS's bulk download at `path` (a folder or zip), or None when it is none."""
    if path.is_dir():
        entries = _folder_entries(path)
        if entries is None:
            return None
        return _lms_students(path, entries)
    if path.suffix.lower() != ".zip" or not path.is_file() or (names := zip_entries(path)) is None:
        return None
    entries = [name for name in names if not _junk(name)]
    students = lms.split_download(entries)
    if students is None:
        return None
    found = []
    for student in students:
        zipped = student.own_zip()
        members, notes = ((zipped[0],), zipped[1]) if zipped else (student.files, student.notes)  # read inside
        found.append(Found(path, student.name.student, student.student_id, members, notes))
    return _named(found, students)


def _folder_entries(path: Path) -> list[tuple[str, lms.LmsName]] | None:
    """The top of a folder, if every entry in it (junk aside) is named as an LMS names a student's
    file or folder; None at the first that is not."""
    entries = []
    try:
        with os.scandir(path) as scan:
            for entry in scan:
                if _junk(entry.name) or is_skipped_dir(entry.name):
                    continue
                folder = entry.is_dir(follow_symlinks=False)
                named = lms.lms_name(entry.name, folder=folder)
                if named is None:
                    return None
                entries.append((entry.name, named))
    except OSError:
        return None
    return entries or None


def _lms_students(folder: Path, given: list[tuple[str, lms.LmsName]]) -> list[Found]:
    """The students of files or folders of a bulk download in `folder` (entry names, parsed)."""
    moodle = {entry: named for entry, named in given if named.lms == lms.MOODLE and not named.file}
    flat = [entry for entry, named in given if entry not in moodle]
    found: list[Found] = []
    students: list[lms.Student] = []
    split = lms.split_download(flat)
    unsplit = [Found(folder / entry) for entry in flat] if split is None else []  # two LMSs' kinds: each as it is
    for student in split or []:
        zipped = student.own_zip()
        if zipped:  # the student's own zip: read as a submission of its own
            found.append(Found(folder / zipped[0][0], student.name.student, student.student_id, notes=zipped[1]))
        else:
            found.append(Found(folder, student.name.student, student.student_id, student.files, student.notes))
        students.append(student)
    by_student: dict[tuple[str, str, str], list[str]] = {}
    for entry, named in sorted(moodle.items()):
        by_student.setdefault(named.key, []).append(entry)
    for entries in by_student.values():  # a Moodle folder per student and plugin: the uploads are graded
        plugins = {moodle[entry].plugin: entry for entry in entries}
        chosen = plugins.get(lms.MOODLE_FILES, entries[0])
        others = sorted(plugin for plugin in plugins if plugins[plugin] != chosen)
        notes = (lms.moodle_note(others),) if others else ()
        named = moodle[chosen]
        found.append(Found(folder / chosen, named.student, named.student_id, notes=notes))
        students.append(lms.Student(named, ()))
    return _named(found, students) + unsplit


def _named(found: list[Found], students: list[lms.Student]) -> list[Found]:
    """Students of one download who share a name (or have none: anonymous grading) are told apart
    by their LMS id: name_id, as the LMS itself writes it."""
    counts: dict[str, int] = {}
    for item in found:
        counts[item.name] = counts.get(item.name, 0) + 1
    return [item if item.name and counts[item.name] == 1 and student.name.student
            else Found(item.path, f"{student.name.student}_{item.student_id}" if student.name.student
                       else item.student_id, item.student_id, item.members, item.notes)
            for item, student in zip(found, students)]


def _junk(entry: str) -> bool:
    """An entry of a download that is nobody's submission: macOS and Windows debris (.DS_Store, ._x,
    __MACOSX/), caches, and anything hidden at its top (an LMS names every file it writes)."""
    parts = entry.split("/")
    return parts[-1] in JUNK_FILES or any(is_skipped_dir(part) for part in parts[:-1]) or parts[0].startswith(".")


def fingerprint(path: Path | Found) -> str:
    """A digest of a submission's content: a zip's bytes, or a folder's files as the reader lists them
    (course/submissions.list_folder: links, caches, names it skips left out; a folder it refuses
    counts by the reason). Content counts up to MAX_FILE_BYTES a file and MAX_FINGERPRINT_BYTES in
    all, names and sizes always. Changes when the student's files change, not when copied. A
    student's files in a bulk download: those files (in a zip: their sizes and CRCs, from its directory)."""
    found = as_found(path)
    path = found.path
    digest = hashlib.sha256()
    budget = [MAX_FINGERPRINT_BYTES]
    if found.members:
        return _members_fingerprint(found, digest, budget)
    if path.is_file():
        _hash_file(digest, path, "", budget)
    elif path.is_dir():
        try:
            listing = list_folder(path)
        except SubmissionError as error:  # refused when it is graded: its reason stands for it
            digest.update(os.fsencode(f"refused: {error}"))
            return digest.hexdigest()
        for entry in listing.files:
            _hash_file(digest, path / entry.path, entry.path, budget)
    else:
        return ""
    return digest.hexdigest()


def _members_fingerprint(found: Found, digest: "hashlib._Hash", budget: list[int]) -> str:
    if found.path.is_dir():
        for entry, name in found.members:
            digest.update(os.fsencode(name) + b"\0")
            _hash_file(digest, found.path / entry, entry, budget)
        return digest.hexdigest()
    wanted = dict(found.members)
    try:
        with zipfile.ZipFile(found.path) as archive:  # the directory was read once already: within the caps
            for info in archive.infolist():
                if info.filename in wanted:
                    digest.update(os.fsencode(f"{info.filename}\0{wanted[info.filename]}\0{info.file_size}\0"
                                              f"{info.CRC}\0"))
    except READ_ERRORS as error:
        digest.update(os.fsencode(f"unreadable: {error}"))
    return digest.hexdigest()


def _hash_file(digest: "hashlib._Hash", path: Path, relative: str, budget: list[int]) -> None:
    """The file's relative path and size, and its content (a folder's file only up to MAX_FILE_BYTES)
    while `budget`, the bytes left to read, lasts."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):  # links, fifos, devices: never opened here
            return
        digest.update(os.fsencode(relative) + f"\0{info.st_size}\0".encode())
        if info.st_size <= MAX_FILE_BYTES or not relative:
            with path.open("rb") as handle:
                while budget[0] > 0 and (chunk := handle.read(min(1 << 20, budget[0]))):
                    budget[0] -= len(chunk)
                    digest.update(chunk)
    except OSError as error:
        digest.update(f"unreadable: {error.strerror}\0".encode())


def plan_batch(paths: list[Path | Found], held: dict[str, Entry], *, regrade: bool = False) -> list[Planned]:
    """Which submissions to grade, and why; the others are already graded (`held`: the gradebook's index)."""
    names = batch_names(paths, held)
    plan = []
    for found, named in zip(map(as_found, paths), names):
        path = Path(os.path.abspath(found.path))  # symlinked folders keep their own name
        found = dataclasses.replace(found, path=path)
        digest = fingerprint(found)
        entry = held.get(named.name)
        if regrade:
            reason: str | None = REGRADE
        elif entry is None:
            reason = NEW
        elif not entry.ok:
            reason = RETRY
        elif entry.fingerprint != digest:
            reason = CHANGED
        else:
            reason = None
        plan.append(Planned(path, named.name, digest, reason, named.note, found))
    return plan


def grade_to_folder(assignment: Assignment, paths: list[Path | Found], out_dir: Path, *, jobs: int | None = None,
                    regrade: bool = False, listener: BatchListener | None = None,
                    grader: Grader | None = None, settings: Settings | None = None, course: Course | None = None,
                    times: SubmissionTimes | None = None, now: datetime | None = None) -> BatchSummary:
    """Grade what is not graded yet into out_dir (see the module's docstring); `grader` defaults to
    grading.grade_sources, in the jail and on the device `settings` name. With `course` (its policy,
    loaded and checked before this is called), the policy is applied before the folder is
    published (grading/adjust.py): `times` says when each submission was made, `now` is the clock
    of the records it writes."""
    if jobs is not None and jobs < 1:
        raise UsageError(f"jobs must be at least 1, not {jobs}")
    check_submission_paths(paths)
    check_out_dir(out_dir, paths)
    batch_names(paths)  # refuse a path given twice before anything is written
    listener = listener or BatchListener()
    with lock_folder(out_dir):
        listener.locked()
        return _grade_locked(assignment, paths, out_dir, jobs=jobs, regrade=regrade, listener=listener,
                             grader=grader or _local_grader(settings or Settings()),
                             policy=None if course is None else (course, times, now or datetime.now(timezone.utc)))


def _local_grader(settings: Settings) -> Grader:
    return functools.partial(grade_sources, isolation=settings.isolation, device=settings.device)


def _grade_locked(assignment: Assignment, paths: list[Path | Found], out_dir: Path, *, jobs: int | None, regrade: bool,
                  listener: BatchListener, grader: Grader,
                  policy: tuple[Course, SubmissionTimes | None, datetime] | None = None) -> BatchSummary:
    """grade_to_folder, while this run holds the folder's lock."""
    started = time.monotonic()
    summary = BatchSummary(out_dir)
    with _stop_if_unwritable(out_dir):
        # refuses a gradebook.sqlite, and then a gradebook.csv, that checks did not write
        gradebook = Gradebook(out_dir / DB_FILE, assignment.name,
                              before_writing=lambda questions: check_gradebook_csv(out_dir / GRADEBOOK_FILE, questions))
        held = gradebook.index()
    plan = plan_batch(paths, held, regrade=regrade)
    todo = [p for p in plan if p.reason]
    summary.skipped = [p.name for p in plan if not p.reason]
    by_name = {p.name: p for p in todo}
    suite = suite_fingerprint(assignment)  # recorded with each grade: a regrade says whether the suite changed
    with _stop_if_unwritable(out_dir):
        run_id = gradebook.start_run(__version__, jobs=jobs, regrade=regrade, submissions=len(plan), to_grade=len(todo))
    listener.started(plan)
    written: dict[str, bytes] = {}  # each submission's reports this run wrote (publish renders less)
    try:
        if todo:
            sources = [Source.from_found(p.source, named_files(assignment), name=p.name) for p in todo]
            results = iter(grader(assignment, sources, jobs=jobs))
            try:
                for result in results:
                    planned = by_name[result.name]
                    if planned.note:
                        result.warnings.insert(0, planned.note)
                    result.student_id = planned.source.student_id
                    record = Graded(result, __version__, utc_now(), planned.source.describe(), planned.fingerprint,
                                    run_id, suite)
                    with _stop_if_unwritable(out_dir):
                        gradebook.record(record)  # the commit point: from here on it is graded
                        written[result.name] = write_submission_reports(
                            out_dir, result, grader_version=record.grader_version, graded_at=record.graded_at)
                    summary.graded.append(result)
                    listener.graded(result, len(summary.graded), len(todo))
            finally:
                getattr(results, "close", lambda: None)()  # a generator: stop its children now
    except BaseException:  # Ctrl-C above all: leave what is saved readable, then let it through
        listener.stopped()
        try:
            gradebook.finish_run(run_id, graded=len(summary.graded), interrupted=True)
            publish(out_dir, gradebook.load(), assignment=assignment, superseded=gradebook.superseded())
        except Exception as error:  # noqa: BLE001 - the interruption is what the caller hears; this is said too
            listener.problem(f"the reports in {out_dir} could not be brought up to date on the way out "
                             f"({type(error).__name__}: {error}); every submission graded is in {DB_FILE}: "
                             "the same command finishes the run and writes them")
        raise
    listener.stopped()
    with _stop_if_unwritable(out_dir):
        gradebook.finish_run(run_id, graded=len(summary.graded))
        if policy is not None:
            course, times, now = policy
            found = {p.name: p.source for p in plan}
            summary.applied = apply_policy(course, assignment.name, gradebook,
                                           submission_times(times, found, course), now=now)
        summary.records = gradebook.load()
        publish(out_dir, summary.records, assignment=assignment, superseded=gradebook.superseded(), written=written)
    summary.seconds = time.monotonic() - started
    return summary


@contextlib.contextmanager
def _stop_if_unwritable(out_dir: Path) -> Iterator[None]:
    """A write that fails (ENOSPC, EDQUOT, EFBIG under RLIMIT_FSIZE; SQLite's "disk I/O error")
    stops the run with one clear message instead of a traceback."""
    try:
        yield
    except (OSError, GradebookUnwritable) as error:
        raise OutputFailed(f"could not write to {out_dir} ({error}); is the disk full, or a file size limit "
                           f"or quota reached? The run stopped; what was graded before is saved in {DB_FILE}. "
                           "Make room and run the same command again to grade the rest.") from error


def publish(out_dir: Path, records: list[Graded], *, assignment: Assignment,
            superseded: tuple[Run | None, list[Superseded]] = (None, []),
            written: Mapping[str, bytes] | None = None) -> None:
    """Render every file of the output folder from the gradebook, rewriting only what differs:
    `superseded` (Gradebook.superseded) is what the latest regrade replaced; `written`: what
    write_submission_reports returned for each submission whose reports this run wrote."""
    for record in records:
        write_submission_reports(out_dir, record.result, grader_version=record.grader_version,
                                 graded_at=record.graded_at, page_of=(written or {}).get(record.result.name))
    results = [record.result for record in records]
    remove_stale_temp_files(out_dir)
    write_if_changed(out_dir / GRADEBOOK_FILE, gradebook_csv(results))
    analytics = class_analytics(assignment.name, records)
    write_if_changed(out_dir / ANALYTICS_JSON, analytics_json(analytics))
    write_if_changed(out_dir / MISTAKES_CSV, mistakes_csv(analytics))
    regrade = regrade_report(records, *superseded)
    if regrade is not None:
        write_if_changed(out_dir / REGRADE_CSV, regrade_csv(regrade))
    write_if_changed(out_dir / REPORT_FILE, render_report(assignment.name, records, title=assignment.title,
                                                          regrade=regrade))
