"""Quiz answers: quiz.toml is parsed (never executed) and each key scored on its own.

Numbers are accepted as int, float or a numeric string and compared with a relative tolerance of
1e-6; booleans as TOML booleans or the strings true/false in any case. A missing, empty or
unreadable answer costs that question only, and the feedback says which it was.

`checks test` and `checks pack` only look at the form of each answer (check_answers): present, and
of the kind the key expects; whether it is right stays with the hidden key.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from typing import Any

from checks.course.assignment import ANSWER_KINDS, Assignment, QuizItem, answer_kind, read_marker
from checks.suites.scoring import QuestionResult

QUIZ_FILE = "quiz.toml"
MAX_QUIZ_BYTES = 64 * 1024
REL_TOL = 1e-6
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
    try:
        return tomllib.loads(data.decode("utf-8")), ""
    except UnicodeDecodeError:
        return {}, f"{QUIZ_FILE} is not UTF-8 text."
    except (tomllib.TOMLDecodeError, RecursionError) as error:
        return {}, f"{QUIZ_FILE} is not valid TOML ({error}); write answers as key = value."


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
    else:
        correct = math.isclose(parsed, float(item.answer), rel_tol=REL_TOL, abs_tol=1e-12)
    return result(correct, "Correct." if correct else f"{item.key} = {given!r} is not the right answer.")


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


def check_answers(kinds: dict[str, str | None], data: bytes | None) -> tuple[list[AnswerForm], str]:
    """Whether each answer is present and of its kind (never whether it is right), and why the file
    cannot be read at all ("" when it can). A key the quiz does not ask is reported too: most are typos."""
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
            problem = "" if not all(problems) else f"expected a number or true/false, got {given!r}."
        else:
            problem = (_as_bool(given) if kind == ANSWER_KINDS[1] else _as_number(given))[1]
        forms.append(AnswerForm(key, not problem, problem.rstrip(".") if problem else f"answered ({kind or 'well-formed'})"))
    forms += [AnswerForm(key, False, f"not a question of this quiz (a typo? the keys are {', '.join(kinds)})")
              for key in answers if key not in kinds]
    return forms, ""
