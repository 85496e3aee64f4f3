"""Quiz answers: quiz.toml is parsed (never executed) and each key scored on its own.

Numbers are accepted as int, float or a numeric string and compared within the key's tolerance
(course/tolerance.py: rtol/atol or significant digits; a relative 1e-6 by default), which students
are shown; booleans as TOML booleans or the strings true/false in any case. A missing, empty or
unreadable answer costs that question only, and the feedback says which it was. An answer of any
TOML type or size (a 5,000-digit integer, nan, a nested table, a date, a long string) is graded or
refused on its own, and shown in the feedback in a few words (answer_summary), never whole.

`checks test` and `checks pack` only look at the form of each answer (check_answers): present, and
of the kind the key expects; whether it is right stays with the hidden key.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import sys
import tomllib
from dataclasses import dataclass
from typing import Any, Iterator

from checks.course.assignment import ANSWER_KINDS, QUIZ_FILE, Assignment, QuizItem, answer_kind, read_marker
from checks.suites.scoring import QuestionResult

MAX_QUIZ_BYTES = 64 * 1024
# dots and brackets of keys and tables: tomllib's time grows with the square of a key's depth (a
# 64 KiB `a.a.a...` key took seconds in the grader's own process); answers are `key = value` lines
MAX_QUIZ_NESTING = 4_000
SHOWN_ANSWER = 60  # characters of an answer quoted back in feedback
NO_ANSWER = "no answer yet"  # an AnswerForm's note for a key with no answer


def grade_quiz(items: tuple[QuizItem, ...], files: dict[str, bytes],
               unread: dict[str, str] | None = None) -> list[QuestionResult]:
    """`unread`: files of the submission that were there but not read, and why (too big, say)."""
    if not items:
        return []
    why_unread = (unread or {}).get(QUIZ_FILE)
    if why_unread:
        return [QuestionResult(item.qid, 0.0, item.points, f"{why_unread}: no quiz answers were graded.", 0, 1)
                for item in items]
    answers, problem = read_answers(files.get(QUIZ_FILE))
    if problem:
        return [QuestionResult(item.qid, 0.0, item.points, problem, 0, 1) for item in items]
    return [_score(item, answers.get(item.key)) for item in items]


def read_answers(data: bytes | None) -> tuple[dict[str, Any], str]:
    """The answers, or ({}, why they could not be read)."""
    if data is None:
        return {}, f"No {QUIZ_FILE} in the submission, so no quiz answers were graded."
    if len(data) > MAX_QUIZ_BYTES:
        return {}, f"{QUIZ_FILE} is {len(data)} bytes; the limit is {MAX_QUIZ_BYTES}. It was not read."
    nesting = sum(data.count(mark) for mark in (b".", b"[", b"{"))
    if nesting > MAX_QUIZ_NESTING:
        return {}, (f"{QUIZ_FILE} holds {nesting:,} dots and brackets; the limit is {MAX_QUIZ_NESTING:,}. It was "
                    "not read: write each answer as key = value.")
    try:
        with _long_integers():
            return tomllib.loads(data.decode("utf-8")), ""
    except UnicodeDecodeError:
        return {}, f"{QUIZ_FILE} is not UTF-8 text."
    except (ValueError, RecursionError) as error:  # TOMLDecodeError is a ValueError
        return {}, f"{QUIZ_FILE} is not valid TOML ({str(error)[:200]}); write answers as key = value."


@contextlib.contextmanager
def _long_integers() -> Iterator[None]:
    """tomllib refuses a whole file for one integer of over 4,300 digits (Python's guard against
    quadratic int parsing); within MAX_QUIZ_BYTES one costs milliseconds, and is one wrong answer."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0 if limit == 0 else max(limit, MAX_QUIZ_BYTES))
    try:
        yield
    finally:
        sys.set_int_max_str_digits(limit)


def _score(item: QuizItem, given: Any) -> QuestionResult:
    def result(correct: bool, feedback: str) -> QuestionResult:
        return QuestionResult(item.qid, item.points if correct else 0.0, item.points, feedback, int(correct), 1)

    if given is None or given == "":
        return result(False, f"No answer for {item.key} in {QUIZ_FILE}.")
    parsed, problem = (_as_bool(given) if isinstance(item.answer, bool) else _as_number(given))
    if problem:
        return result(False, f"{item.key}: {problem}")
    if isinstance(item.answer, bool):
        correct = parsed is item.answer
        return result(correct, "Correct." if correct else f"{item.key} = {answer_summary(given)} is not the right answer.")
    correct = item.tolerance.accepts(parsed, float(item.answer))
    told = f" (answers count {item.tolerance.describe()} of the key)" if item.tolerance.declared else ""
    return result(correct, "Correct." if correct else f"{item.key} = {answer_summary(given)} is not the right answer{told}.")


def _as_number(value: Any) -> tuple[float | None, str]:
    if isinstance(value, bool):
        return None, f"expected a number, got the boolean {str(value).lower()}."
    if isinstance(value, (int, float)):
        try:
            return float(value), ""
        except OverflowError:
            return None, f"expected a number, got {answer_summary(value)}, too large for one."
    if isinstance(value, str):
        try:
            return float(value.strip()), ""
        except ValueError:
            pass
    return None, f"expected a number, got {answer_summary(value)}."


def _as_bool(value: Any) -> tuple[bool | None, str]:
    if isinstance(value, bool):
        return value, ""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true", ""
    return None, f"expected true or false, got {answer_summary(value)}."


def answer_summary(value: Any) -> str:
    """A quiz answer in a few words for feedback: its value when short, else what it is. Never a
    whole megabyte, and never str() of a huge int (which raises past 4,300 digits)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        if value.bit_length() <= 128:
            return str(value)
        return f"an integer of about {int((value.bit_length() - 1) * math.log10(2)) + 1:,} digits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= SHOWN_ANSWER else f"{value[:SHOWN_ANSWER]!r}... ({len(value):,} characters)"
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date
        return f"the date/time {value.isoformat()}"
    if isinstance(value, dict):
        return f"a table of {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, list):
        return f"an array of {len(value)} item{'s' if len(value) != 1 else ''}"
    return f"a {type(value).__name__}"


@dataclass(frozen=True)
class AnswerForm:
    """One quiz key as `checks test` shows it: whether its answer is there and well-formed."""

    key: str
    ok: bool
    note: str

    @property
    def qid(self) -> str:
        return f"quiz.{self.key}"

    @property
    def answered(self) -> bool:
        """False while there is no answer yet (which is not a malformed one)."""
        return self.note != NO_ANSWER

    @property
    def malformed(self) -> bool:
        return self.answered and not self.ok


def answer_kinds(assignment: Assignment) -> dict[str, str | None]:
    """Each quiz key and the kind of answer it takes (ANSWER_KINDS; None where unknown): from the
    quiz key where the course has it, else from the release's marker, else the release's quiz.toml."""
    if assignment.quiz:
        return {item.key: answer_kind(item) for item in assignment.quiz}
    kinds = read_marker(assignment.release_dir).get("quiz")
    if isinstance(kinds, dict):
        return {key: kind if kind in ANSWER_KINDS else None for key, kind in kinds.items()}
    path = assignment.release_dir / QUIZ_FILE
    answers, _ = read_answers(path.read_bytes() if path.is_file() else None)
    return {key: None for key in answers}


def answer_tolerances(assignment: Assignment) -> dict[str, str]:
    """How close each numeric answer must be, in words (course/tolerance.py), where the author
    declared it (docs say the default): from the quiz key where the course has it, else the marker."""
    if assignment.quiz:
        return {item.key: item.tolerance.describe() for item in assignment.quiz
                if not isinstance(item.answer, bool) and item.tolerance.declared}
    told = read_marker(assignment.release_dir).get("quiz_tolerance")
    return {key: text for key, text in told.items() if isinstance(text, str)} if isinstance(told, dict) else {}


def check_answers(kinds: dict[str, str | None], data: bytes | None,
                  tolerances: dict[str, str] | None = None) -> tuple[list[AnswerForm], str]:
    """Whether each answer is present and of its kind (never whether it is right), and why the file
    cannot be read at all ("" when it can). A key the quiz does not ask is reported too: most are typos.
    `tolerances`: how close each numeric answer must be, shown beside it."""
    if not kinds:
        return [], ""
    answers, problem = read_answers(data)
    if problem:
        return [AnswerForm(key, False, f"not checked: {QUIZ_FILE} cannot be read") for key in kinds], problem
    forms = []
    for key, kind in kinds.items():
        given = answers.get(key)
        if given is None or given == "":
            forms.append(AnswerForm(key, False, NO_ANSWER))
            continue
        if kind is None:
            problems = [_as_number(given)[1], _as_bool(given)[1]]
            problem = "" if not all(problems) else f"expected a number or true/false, got {answer_summary(given)}."
        else:
            problem = (_as_bool(given) if kind == ANSWER_KINDS[1] else _as_number(given))[1]
        told = (tolerances or {}).get(key)
        shown = f"counted {told}" if told and kind != ANSWER_KINDS[1] else kind or "well-formed"
        forms.append(AnswerForm(key, not problem, problem.rstrip(".") if problem else f"answered ({shown})"))
    forms += [AnswerForm(key[:SHOWN_ANSWER], False, f"not a question of this quiz (a typo? the keys are {', '.join(kinds)})")
              for key in answers if key not in kinds]
    return forms, ""
