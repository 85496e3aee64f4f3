"""The child process `%checks test` starts: the public checks on a notebook's folder.

It runs them through the same library path as `checks test` (grading.session.grade_sources with
public=True, then the quiz's form) on the files `checks pack` would upload, and writes the result
as JSON to a file the kernel names, so that nothing the student's code does, nor the grader's own
start-up, can reach the kernel: the kernel only reads plain data back. Run as `python -m checks.notebooks.runner FOLDER OUT [QUESTION]`.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from checks.course.assignment import (Assignment, CourseError, find_assignment_copy, find_course_root,
                                      load_assignment, load_copy, read_marker)
from checks.course.submissions import MAX_FILE_BYTES, SKIPPED_DIRS
from checks.grading.session import Source, grade_sources
from checks.suites.quiz import QUIZ_FILE, answer_kinds, check_answers


def assignment_of(folder: Path) -> Assignment:
    """The assignment a notebook's folder is a release or a copy of: from the course around it
    where there is one (its quiz key), else from the copy's own marker."""
    copy = find_assignment_copy(folder)
    if copy is None:
        raise CourseError(f"{folder} is not an assignment folder (nor inside one): no .checks.toml here or above; "
                          "open the notebook from its assignment folder, or a copy of the whole folder")
    name = read_marker(copy)["assignment"]
    try:
        root = find_course_root(folder)
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
    for here, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in sorted(names):
            path = Path(here) / name
            if path.is_symlink() or not path.is_file():
                continue
            relative = path.relative_to(folder).as_posix()
            if any(name.lower() == w.lower() or name.lower().startswith(w.lower() + ".") for w in wanted):
                if path.stat().st_size > MAX_FILE_BYTES:
                    raise CourseError(f"{relative} is {path.stat().st_size // 2**20} MiB; the grader reads files "
                                      f"up to {MAX_FILE_BYTES // 2**20} MiB")
                files[relative] = path.read_bytes()
    return files


def run_public_checks(folder: Path, question: str | None = None) -> dict:
    """The public checks of `folder` as plain data: the submission result, quiz forms, and the
    question asked for (all when None). A question the suite does not have is an error that
    lists the ones it has."""
    assignment = assignment_of(folder)
    if not assignment.public_tests_dir.is_dir():
        raise CourseError(f"{assignment.name} has no public tests in {assignment.public_tests_dir}")
    files = graded_files(assignment, folder)
    (result,) = grade_sources(assignment, [Source.from_files(folder.name, files)], public=True, jobs=1)
    quiz_bytes = files.get(QUIZ_FILE)
    quiz, quiz_problem = check_answers(answer_kinds(assignment), quiz_bytes)
    known = [q.qid for q in result.questions] + [form.qid for form in quiz]
    if question is not None and not result.error:
        if question not in known:
            raise CourseError(f"{assignment.name} has no question {question!r}; its questions: {', '.join(known)}")
        result.questions = [q for q in result.questions if q.qid == question]
        quiz = [form for form in quiz if form.qid == question]
        quiz_problem = quiz_problem if quiz else ""
    return {"assignment": assignment.name, "folder": str(folder), "question": question,
            "result": result.to_dict(), "quiz": [asdict(form) for form in quiz], "quiz_problem": quiz_problem}


def main(argv: list[str]) -> int:
    folder, out = Path(argv[0]).resolve(), Path(argv[1])
    question = argv[2] if len(argv) > 2 else None
    try:
        report = run_public_checks(folder, question)
    except (CourseError, ValueError) as error:
        report = {"problem": str(error)}
    out.write_text(json.dumps(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
