"""The public checks of one submission, as `checks test` and `%checks test` both run them: the
public suite (all of it, or the questions asked for), then the form of each quiz answer.

Questions asked for are checked against the suite's declared ids before anything starts, and a
mistyped one names the nearest (course/selection.py); only their tests run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from checks.config.settings import Settings
from checks.course.assignment import Assignment, CourseError
from checks.course.selection import check_questions
from checks.grading.session import Source, grade_sources
from checks.suites.questions import declared_questions
from checks.suites.quiz import AnswerForm, answer_kinds, answer_tolerances, check_answers
from checks.suites.scoring import SubmissionResult


@dataclass
class PublicChecks:
    result: SubmissionResult
    quiz: list[AnswerForm] = field(default_factory=list)
    quiz_problem: str = ""  # why quiz.toml cannot be read at all ("" when it can)


def public_questions(assignment: Assignment) -> list[str] | None:
    """The ids `checks test` can be asked for: the public suite's, then the quiz's; None when the
    suite's cannot be read from its source."""
    declared = declared_questions(assignment.public_tests_dir)
    return None if declared is None else declared + [f"quiz.{key}" for key in answer_kinds(assignment)]


def run_public_checks(assignment: Assignment, source: Source, quiz_bytes: bytes | None,
                      questions: Sequence[str] = (), settings: Settings | None = None) -> PublicChecks:
    """The public checks of `source` (`quiz_bytes`: its quiz.toml, None when it has none); with
    `questions`, of those only; in the jail and on the device `settings` name. CourseError for a
    question the assignment does not have."""
    settings = settings or Settings()
    if not assignment.public_tests_dir.is_dir():
        raise CourseError(f"{assignment.name} has no public tests in {assignment.public_tests_dir}")
    kinds = answer_kinds(assignment)
    quiz_ids = [f"quiz.{key}" for key in kinds]
    known = public_questions(assignment)
    if questions and known is not None:
        check_questions(assignment.name, questions, known)
    code = [qid for qid in questions if qid not in quiz_ids]
    if questions and not code:
        result = SubmissionResult(source.name, assignment.name)  # quiz answers only: no suite to run
    else:
        (result,) = grade_sources(assignment, [source], public=True, jobs=1, questions=code or None,
                                  isolation=settings.isolation, device=settings.device)
    if code and known is None and not result.error:  # ids the source did not declare: known now
        ran = {q.qid for q in result.questions}
        unknown = [qid for qid in code if qid not in ran]
        if unknown:
            raise CourseError(f"{assignment.name} has no question {', '.join(map(repr, unknown))}; "
                              f"`checks test {assignment.name}` lists its questions")
    quiz, quiz_problem = check_answers(kinds, quiz_bytes, answer_tolerances(assignment))
    if questions:
        quiz = [form for form in quiz if form.qid in questions]
        quiz_problem = quiz_problem if quiz else ""
    return PublicChecks(result, quiz, quiz_problem)
