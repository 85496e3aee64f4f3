"""What a submission must hold before it is accepted: every file the assignment takes, under its
own name, none over the grader's cap, and a quiz.toml whose answers are of their kinds.

One check for every way in (`checks pack` and `checks submit` on a folder, the course server's
web page and API on an upload), so that what one refuses the others refuse with the same words,
and an incomplete upload is never stored, graded and counted in place of a complete one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from checks.course.assignment import Assignment
from checks.course.caps import MAX_FILE_BYTES
from checks.course.submissions import missing_files
from checks.suites.quiz import QUIZ_FILE, answer_kinds, check_answers


@dataclass
class HandIn:
    """What check_handin found: `problems` refuse the submission; the rest are said and accepted."""

    problems: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)  # quiz keys with no answer yet


def submission_file_names(assignment: Assignment) -> list[str]:
    """The files a submission of this assignment consists of: its code files, and quiz.toml if it has a quiz."""
    return list(assignment.files) + ([QUIZ_FILE] if answer_kinds(assignment) else [])


def check_handin(assignment: Assignment, sizes: Mapping[str, int], quiz: bytes | None,
                 unread: Mapping[str, str] | None = None) -> HandIn:
    """Check a submission from what it holds: `sizes` (each path in it, relative and posix, and its
    size), `quiz` (its quiz.toml's bytes, None when it has none) and `unread` (named files that are
    there but could not be read: name -> why)."""
    names = submission_file_names(assignment)
    found = HandIn()
    found.problems += missing_files(tuple(names), dict.fromkeys(sizes, b""))
    for name in names:
        if name in (unread or {}):
            found.problems.append(f"{name}: {unread[name]}")
        elif name in sizes and sizes[name] > MAX_FILE_BYTES:
            found.problems.append(f"{name} is {sizes[name] // 2**20} MiB; the grader reads files up to "
                                  f"{MAX_FILE_BYTES // 2**20} MiB")
    kinds = answer_kinds(assignment)
    if kinds and QUIZ_FILE in sizes and QUIZ_FILE not in (unread or {}):
        forms, unreadable = check_answers(kinds, quiz)
        if unreadable:
            found.problems.append(unreadable)
        else:
            found.problems += [f"{QUIZ_FILE}: {form.key}: {form.note}" for form in forms if form.malformed]
            found.unanswered = [form.key for form in forms if not form.answered]
    return found
