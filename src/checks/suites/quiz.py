"""Quiz answers: quiz.toml is parsed (never executed) and each key scored on its own.

Numbers are accepted as int, float or a numeric string and compared with a relative tolerance of
1e-6; booleans as TOML booleans or the strings true/false in any case. A missing, empty or
unreadable answer costs that question only, and the feedback says which it was.
"""

from __future__ import annotations

import math
import tomllib
from typing import Any

from checks.course.assignment import QuizItem
from checks.suites.scoring import QuestionResult

QUIZ_FILE = "quiz.toml"
MAX_QUIZ_BYTES = 64 * 1024
REL_TOL = 1e-6


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
    try:
        return tomllib.loads(data.decode("utf-8")), ""
    except UnicodeDecodeError:
        return {}, f"{QUIZ_FILE} is not UTF-8 text."
    except (tomllib.TOMLDecodeError, RecursionError) as error:
        return {}, f"{QUIZ_FILE} is not valid TOML ({error}); write answers as `key = value`."


def _score(item: QuizItem, given: Any) -> QuestionResult:
    def result(correct: bool, feedback: str) -> QuestionResult:
        return QuestionResult(item.qid, item.points if correct else 0.0, item.points, feedback, int(correct), 1)

    if given is None or given == "":
        return result(False, f"No answer for `{item.key}` in {QUIZ_FILE}.")
    parsed, problem = (_as_bool(given) if isinstance(item.answer, bool) else _as_number(given))
    if problem:
        return result(False, f"`{item.key}`: {problem}")
    if isinstance(item.answer, bool):
        correct = parsed is item.answer
    else:
        correct = math.isclose(parsed, float(item.answer), rel_tol=REL_TOL, abs_tol=1e-12)
    return result(correct, "Correct." if correct else f"`{item.key} = {given!r}` is not the right answer.")


def _as_number(value: Any) -> tuple[float | None, str]:
    if isinstance(value, bool):
        return None, f"expected a number, got the boolean {str(value).lower()}."
    if isinstance(value, (int, float)):
        return float(value), ""
    if isinstance(value, str):
        try:
            return float(value.strip()), ""
        except ValueError:
            pass
    return None, f"expected a number, got {value!r}."


def _as_bool(value: Any) -> tuple[bool | None, str]:
    if isinstance(value, bool):
        return value, ""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true", ""
    return None, f"expected true or false, got {value!r}."
