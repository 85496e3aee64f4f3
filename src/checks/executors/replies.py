"""What the driver believes of a Dask worker's reply: only what it asked for.

A reply is filed under the task's own submission, never under the name inside it, and its
questions must be the assignment's, each worth at most its points, scored between 0 and that.
Anything else is a grader failure for the task's submission (never another student's grade).

The assignment's questions and maxima are read from the suite's source, without importing it
(the driver never runs the hidden suite): each `@question("qid", points=N)` (or points per value
of the qid's one parameter, `points={"add": 2, ...}`) and the quiz. Where a decorator is not
plain literals, its questions are checked for their bounds only where they can be matched.
"""

from __future__ import annotations

import ast
import math
import re
import string
from dataclasses import dataclass, field
from pathlib import Path

from checks.course.assignment import Assignment
from checks.suites.scoring import SubmissionResult

TOLERANCE = 0.011  # scores and maxima are rounded to 2 decimals


@dataclass(frozen=True)
class Questions:
    """The questions an assignment's suite can give, and the most each is worth."""
    exact: dict[str, float] = field(default_factory=dict)
    patterns: tuple[tuple[re.Pattern[str], float], ...] = ()  # a qid template whose values are not known here
    complete: bool = True  # every decorator was read: the reply must hold exactly `exact`

    def most(self, qid: str) -> float | None:
        """The most `qid` may be worth, or None when it is not a question of the suite."""
        if qid in self.exact:
            return self.exact[qid]
        found = [points for pattern, points in self.patterns if pattern.fullmatch(qid)]
        return max(found) if found else None


def expected_questions(assignment: Assignment, public: bool) -> Questions:
    """The questions and maxima of the assignment's hidden (or public) suite and quiz, from their source."""
    exact: dict[str, float] = {}
    patterns: list[tuple[re.Pattern[str], float]] = []
    complete = True
    suite = assignment.suite_dir(public)
    for path in sorted(suite.rglob("*.py")) if suite.is_dir() else []:
        try:
            tree = ast.parse(path.read_bytes())
        except (OSError, SyntaxError, ValueError):
            complete = False
            continue
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                if not _is_question(decorator):
                    continue
                read = _read_question(decorator)
                if read is None:
                    complete = False
                    continue
                for qid, points in read[0].items():
                    exact[qid] = exact.get(qid, 0.0) + points
                for pattern, points in read[1]:
                    patterns.append((pattern, points))
                    complete = False
    if not public:
        for item in assignment.quiz:
            exact[item.qid] = exact.get(item.qid, 0.0) + item.points
    return Questions(exact, tuple(patterns), complete)


def _is_question(decorator: ast.expr) -> bool:
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(func, ast.Name) and func.id == "question") or \
        (isinstance(func, ast.Attribute) and func.attr == "question")


def _read_question(call: ast.expr) -> tuple[dict[str, float], list[tuple[re.Pattern[str], float]]] | None:
    """A @question's questions and points: exact qids, or a pattern for a template whose values
    come from parameters; None when it is not plain literals."""
    if not isinstance(call, ast.Call) or not call.args:
        return None
    try:
        template = ast.literal_eval(call.args[0])
        given = [kw.value for kw in call.keywords if kw.arg == "points"] or call.args[1:2]
        points = ast.literal_eval(given[0]) if given else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(template, str):
        return None
    fields = [name for _, name, _, _ in string.Formatter().parse(template) if name]
    if not fields and _number(points):
        return {template: float(points)}, []
    if len(fields) == 1 and isinstance(points, dict) and all(_number(v) for v in points.values()):
        return {template.format(**{fields[0]: key}): float(value) for key, value in points.items()}, []
    if fields and _number(points):
        parts = [re.escape(text) + ("(.+)" if name else "") for text, name, _, _ in string.Formatter().parse(template)]
        return {}, [(re.compile("".join(parts)), float(points))]
    return None


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def believed(name: str, assignment: Assignment, value: object, questions: Questions) -> SubmissionResult:
    """The result of `name` in a worker's `value`, checked; a grader failure of `name` saying what
    did not match where anything does not."""
    try:
        if not isinstance(value, dict):
            raise ValueError(f"a {type(value).__name__}, not a result")
        result = SubmissionResult.from_dict(value)
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        return _refused(name, assignment, f"it is not a result ({type(error).__name__}: {str(error)[:200]})")
    problem = _mismatch(name, assignment, result, questions)
    if problem:
        return _refused(name, assignment, problem)
    return result


def _mismatch(name: str, assignment: Assignment, result: SubmissionResult, questions: Questions) -> str:
    if result.name != name or result.assignment != assignment.name:
        return (f"it is filed as {result.name!r} of {result.assignment!r}, not as the submission that was sent "
                f"({name!r} of {assignment.name!r})")
    if result.error and not result.questions:
        return ""  # the grader's failure, said by the worker: no score to check
    seen: set[str] = set()
    for question in result.questions:
        most = questions.most(question.qid) if isinstance(question.qid, str) else None
        if most is None:
            return f"it scores a question the assignment does not have ({str(question.qid)[:80]!r})"
        if question.qid in seen:
            return f"it scores {question.qid!r} twice"
        seen.add(question.qid)
        numbers = (question.score, question.max_score)
        if not all(_number(n) for n in numbers):
            return f"its score for {question.qid!r} is not a number from 0 up"
        if question.max_score > most + TOLERANCE or question.score > question.max_score + TOLERANCE:
            return (f"it gives {question.qid!r} {question.score:g} of {question.max_score:g}, where the question "
                    f"is worth {most:g}")
    missing = sorted(set(questions.exact) - seen) if questions.complete else []
    if missing and result.questions:
        return f"it leaves out question(s) of the assignment: {', '.join(missing[:5])}"
    return ""


def _refused(name: str, assignment: Assignment, why: str) -> SubmissionResult:
    return SubmissionResult(name, assignment.name, error=f"the grader's reply was refused: {why} (not scored; "
                                                          "grading it again may succeed)")
