"""What a student's command (`checks test`, `pack`, `submit`) is about: the assignment, the folder
or file to check, and the questions asked for, from the words typed, the course (if there is one
here) and the copy of an assignment the folder is in. The CLI only prints what these decide."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from checks.course.assignment import (Assignment, CourseError, find_assignment_copy, find_course_root,
                                     list_assignments, load_assignment, load_copy, read_marker)
from checks.course.selection import TestRequest, read_test_words
from checks.grading.public import public_questions


def read_student_words(root: Path | None, words: Sequence[str], command: str) -> TestRequest:
    """[ASSIGNMENT] [PATH] [QUESTION...] as `%checks test` reads them too (course/selection.py),
    with the assignment always named: without a name, it is the one the copy at PATH, or around
    the current folder, is a copy of. `command` ("test", "pack", "submit") words the errors."""
    copy_here = find_assignment_copy(Path.cwd())
    known = list_assignments(root) if root is not None else []
    known += [p.name for p in (root / "assignments").iterdir() if p.is_dir()] if root and (root / "assignments").is_dir() else []
    known += [read_marker(copy_here)["assignment"]] if copy_here is not None else []
    here = public_questions(load_copy(copy_here)) or [] if copy_here is not None else None
    request = read_test_words(words, sorted(set(known)), questions_here=here)
    if request.assignment is not None:
        return request
    start = request.path if request.path is not None else Path.cwd()
    found = find_assignment_copy(start if start.is_dir() else start.parent) if start.exists() else None
    if found is None:
        names = f" (here: {', '.join(sorted(set(known)))})" if known else ""
        raise CourseError(f"name the assignment: `checks {command} ASSIGNMENT`{names}; in a copy of an "
                          f"assignment folder, `checks {command}` alone checks that copy")
    return dataclasses.replace(request, assignment=read_marker(found)["assignment"])


def student_target(root: Path | None, request: TestRequest, command: str) -> tuple[Assignment, Path]:
    """The assignment `request` names (read_student_words) and the folder or file to check or
    pack: its path; else the copy of that assignment the current folder is in; else the course's
    release. Without a course, a copy describes itself."""
    name, path = request.assignment, request.path
    if name is None:
        raise CourseError(f"name the assignment: `checks {command} ASSIGNMENT`")
    if path is not None and not path.exists():
        raise CourseError(f"{path} does not exist")
    start = path if path is not None else Path.cwd()
    found = find_assignment_copy(start if start.is_dir() else start.parent)
    copy = found if found is not None and read_marker(found)["assignment"] == name else None
    if root is not None:
        assignment = load_assignment(root, name)
    elif copy is not None:
        assignment = load_copy(copy)
    elif found is not None:
        other = read_marker(found)["assignment"]
        raise CourseError(f"{found} is a copy of {other}, not of {name}: here, use `checks {command} {other}`; "
                          f"for {name}, work in a copy of it or name the course with --course DIR")
    elif (here := find_assignment_copy(Path.cwd())) is not None:
        other = read_marker(here)["assignment"]
        if other != name:
            raise CourseError(f"{here} is a copy of {other}, not of {name}: for {name}, work in a copy of it or "
                              "name the course with --course DIR")
        assignment = load_copy(here)  # in a copy (`checks fetch`): it describes the assignment PATH is checked for
    else:
        find_course_root()  # raises: no course, and no copy of an assignment here
        raise CourseError(f"no copy of {name} found")
    return assignment, (path or copy or assignment.release_dir).resolve()
