"""The child process `%checks test` starts: the public checks on a notebook's folder.

It runs them through the same library path as `checks test` (grading.session.grade_sources with
public=True, then the quiz's form) on the files `checks pack` would upload, and writes the result
as JSON to a file the kernel names, so that nothing the student's code does, nor the grader's own
start-up, can reach the kernel: the kernel only reads plain data back. Run as `python -m checks.notebooks.runner FOLDER OUT [WORD...]`, the words
that followed `%checks test`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from checks.config.errors import UsageError
from checks.config.settings import Settings
from checks.course.assignment import (Assignment, CourseError, find_assignment_copy, find_course_root,
                                      load_assignment, load_copy, read_marker)
from checks.course.submissions import MAX_FILE_BYTES, SubmissionError, list_folder
from checks.course.selection import read_test_words
from checks.grading.public import public_questions, run_public_checks as run_public_checks_of
from checks.grading.session import Source
from checks.suites.quiz import QUIZ_FILE


def assignment_of(folder: Path, course: Path | None = None) -> Assignment:
    """The assignment a notebook's folder is a release or a copy of: from the course around it
    where there is one (its quiz key), else from the copy's own marker."""
    copy = find_assignment_copy(folder)
    if copy is None:
        raise CourseError(f"{folder} is not an assignment folder (nor inside one): no .checks.toml here or above; "
                          "open the notebook from its assignment folder, or a copy of the whole folder")
    name = read_marker(copy)["assignment"]
    try:
        root = find_course_root(folder, named=course)
    except CourseError:
        return load_copy(copy)
    if not (root / "assignments" / name).is_dir() and not (root / "autograder" / name).is_dir():
        return load_copy(copy)
    return load_assignment(root, name)


def graded_files(assignment: Assignment, folder: Path) -> dict[str, bytes]:
    """What `checks pack` would upload from `folder` (the assignment's files and quiz.toml), and any
    file that looks like one of them (`strides.PY`, `tests/strides.py`), so that the checks can say
    what to rename. Nothing else is read: the notebook itself, its outputs and data (often
    megabytes) are not part of a submission and must not stop the checks."""
    wanted = [*assignment.files, QUIZ_FILE]
    files: dict[str, bytes] = {}
    try:
        listing = list_folder(folder)  # as `checks grade` lists a folder: the same skips, links and caps
    except SubmissionError as error:
        raise CourseError(str(error)) from None
    for entry in listing.files:
        name = entry.path.rsplit("/", 1)[-1].lower()
        if any(name == w.lower() or name.startswith(w.lower() + ".") for w in wanted):
            if entry.size > MAX_FILE_BYTES:
                raise CourseError(f"{entry.path} is {entry.size // 2**20} MiB; the grader reads files "
                                  f"up to {MAX_FILE_BYTES // 2**20} MiB")
            files[entry.path] = entry.read(MAX_FILE_BYTES)
    return files


def run_public_checks(folder: Path, words: Sequence[str] | str | None = None,
                      settings: Settings | None = None) -> dict:
    """The public checks of `folder` as plain data: the submission result, quiz forms, and the
    questions asked for (all when none). `words`: what followed `%checks test`, read as `checks test`
    reads its own ([ASSIGNMENT] [PATH] [QUESTION...]; course/selection.py): the assignment, where
    named, must be the one the folder is a copy of; a question it does not have is an error that
    names the nearest."""
    words = [words] if isinstance(words, str) else list(words or [])
    settings = settings or Settings()
    copy = find_assignment_copy(folder)
    name = read_marker(copy).get("assignment") if copy is not None else None
    here = public_questions(load_copy(copy)) or [] if copy is not None else None
    request = read_test_words(words, [name] if name else [], questions_here=here, cwd=folder)
    if request.path is not None:
        folder = (folder / request.path).resolve()
        if not folder.is_dir():
            raise CourseError(f"{folder} is not a folder: `%checks test` checks a folder of your files")
    assignment = assignment_of(folder, settings.course)
    if request.assignment is not None and request.assignment != assignment.name:
        raise CourseError(f"{folder} is a copy of {assignment.name}, not of {request.assignment}: here, use "
                          f"`%checks test` or `%checks test {assignment.name}`")
    files = graded_files(assignment, folder)
    checks = run_public_checks_of(assignment, Source.from_files(folder.name, files), files.get(QUIZ_FILE),
                                  request.questions, settings)
    return {"assignment": assignment.name, "folder": str(folder), "question": " ".join(request.questions) or None,
            "result": checks.result.to_dict(), "quiz": [asdict(form) for form in checks.quiz],
            "quiz_problem": checks.quiz_problem}


def main(argv: list[str]) -> int:
    """`python -m checks.notebooks.runner FOLDER OUT [WORD...]`, started by `%checks test`: a front
    end of its own, with the notebook's environment (CHECKS_ISOLATION, CHECKS_COURSE)."""
    folder, out = Path(argv[0]).resolve(), Path(argv[1])
    try:
        report = run_public_checks(folder, argv[2:], Settings.from_environment())
    except UsageError as error:
        report = {"problem": str(error)}
    out.write_text(json.dumps(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
