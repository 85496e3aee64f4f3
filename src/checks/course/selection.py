"""What `checks test [ASSIGNMENT] [PATH] [QUESTION...]` and `%checks test [ASSIGNMENT] [QUESTION...]`
are asked for: the same words, read one way for both.

The assignment may be left out inside a copy of one (or its release folder): the copy's marker
names it. Question ids are `module.name` or `quiz.key`; a word that is neither an assignment nor
a path is a question, and one the assignment does not have is an error that names the nearest.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from checks.course.assignment import CourseError

PATH_SUFFIXES = (".zip", ".ipynb")


@dataclass(frozen=True)
class TestRequest:
    """What a student asked to check: None for what the place they are in decides."""

    assignment: str | None = None
    path: Path | None = None
    questions: tuple[str, ...] = ()


TestRequest.__test__ = False  # a name pytest would otherwise try to collect


def read_test_words(words: Sequence[str], assignments: Collection[str] = (), *,
                    questions_here: Sequence[str] | None = None, cwd: Path | None = None) -> TestRequest:
    """`words` as typed after `test`. `assignments`: the names known here (the course's, the
    copy's); `questions_here`: the questions of the copy the current folder is in (None outside
    one), which then needs no name.

    The first word is the assignment when it is one of `assignments`, or looks like a name (no dot,
    no slash) and is not (nearly) a question of the copy you are in (`numel`); a word with a slash,
    a .zip or .ipynb suffix, or naming something that exists, is the path; every other word is a
    question."""
    cwd = cwd or Path.cwd()
    assignment: str | None = None
    path: Path | None = None
    questions: list[str] = []
    for position, word in enumerate(words):
        if position == 0 and _names_assignment(word, assignments, questions_here):
            assignment = word
        elif "/" in word or word.endswith(PATH_SUFFIXES) or (cwd / word).exists():
            if path is not None:
                raise CourseError(f"two paths to check, {path} and {word}: name one folder, .zip or notebook")
            path = Path(word).expanduser()
        else:
            questions.append(word)
    return TestRequest(assignment, path, tuple(questions))


def _names_assignment(word: str, assignments: Collection[str], questions_here: Sequence[str] | None) -> bool:
    if word in assignments:
        return True
    if "." in word or "/" in word:
        return False
    if questions_here is not None and nearest(word, questions_here) is not None:
        return False  # in a copy, `checks test numel` means its question strides.numel
    close = difflib.get_close_matches(word, list(assignments), n=1, cutoff=0.8)
    if close:
        raise CourseError(f"no assignment {word!r} here (did you mean {close[0]}?)")
    return True


def check_questions(assignment: str, asked: Sequence[str], known: Sequence[str]) -> None:
    """CourseError unless every question asked for is one of `known`, naming the nearest for each
    that is not."""
    unknown = [qid for qid in asked if qid not in known]
    if not unknown:
        return
    parts = []
    for qid in unknown:
        close = nearest(qid, known)
        parts.append(f"no question {qid!r}" + (f" (did you mean {close}?)" if close else ""))
    raise CourseError(f"{assignment} has {'; '.join(parts)}; its questions: {', '.join(known)}")


def nearest(word: str, choices: Sequence[str]) -> str | None:
    """The choice `word` most likely meant: the closest whole id (difflib), else the one whose last
    part is closest to the word's (`numel` or `numle` for `strides.numel`)."""
    close = difflib.get_close_matches(word, choices, n=1)
    if close:
        return close[0]
    short = {choice.rsplit(".", 1)[-1]: choice for choice in choices}
    close = difflib.get_close_matches(word.rsplit(".", 1)[-1], list(short), n=1)
    return short[close[0]] if close else None
