"""From pytest cases to per-question scores: the results model every report is written from."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, fields

from checks.suites.describe import failed_how
from checks.suites.diagnoses import diagnoses_of

MAX_FAILURES_SHOWN = 3
# what a submission's feedback may take, whatever its code raised, printed or returned: one
# failure's message, one question's feedback, all questions' feedback together (characters)
MAX_MESSAGE_CHARS = 2_000
MAX_QUESTION_FEEDBACK_CHARS = 8_000
MAX_SUBMISSION_FEEDBACK_CHARS = 100_000
# how a failure caused by the untouched stub ends (suites/student.py, suites/api.py say it)
STILL_THE_STUB = "(still the stub"
# the one word every report uses for a question still the stub (QuestionResult.not_started), and
# for a quiz answer not given yet: the terminal table, the notebook's, the lesson's `yours(...)`
NOT_STARTED = "not started"
GRADED, REFUSED, NOT_GRADED = "graded", "refused", "not graded"  # SubmissionResult.status


@dataclass
class CaseResult:
    """One parametrized case of one test function."""

    qid: str
    test: str  # the test function that holds the points
    points: float
    all_or_nothing: bool
    passed: bool
    message: str = ""
    grader_error: bool = False  # the hidden test itself broke: not the student's fault
    nodeid: str = ""
    position: int = 0  # its test's place in the suite: tests run grouped by the worker they need


@dataclass
class QuestionResult:
    qid: str
    score: float
    max_score: float
    feedback: str
    passed_cases: int
    total_cases: int
    not_started: bool = False  # every case failed on the stub's NotImplementedError (not kept in the gradebook)
    # per test function, in suite order: {"points", "all_or_nothing", "passed": [bool per case]}, so that
    # a tool that scores by test case (the otter export) can give exactly this score; empty for a quiz
    parts: list[dict] = field(default_factory=list)
    # the likely mistakes its failures name (suites/diagnoses.py), one per mistake: what staff
    # analytics count; None when unknown (a gradebook row written before they were kept)
    diagnoses: list[str] | None = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.score >= self.max_score


@dataclass(frozen=True)
class Adjustment:
    """A change to a submission's automatic (raw) score, kept apart from it with its reason: a
    late penalty the course policy decided (kind LATE, by "policy"; 0 points where only an
    extension or grace days are worth saying), or a staff member's manual adjustment (MANUAL, from
    an answered regrade request). `points` is added to the raw score (a penalty is negative)."""

    kind: str
    points: float
    reason: str
    by: str
    at: str  # UTC, ISO 8601


LATE, MANUAL = "late", "manual"  # Adjustment.kind


@dataclass
class SubmissionResult:
    name: str
    assignment: str
    questions: list[QuestionResult] = field(default_factory=list)
    devices: list[str] = field(default_factory=list)
    sandbox: str = ""
    sandbox_uid: int | None = None  # the uid its sandbox processes ran as, where they had their own
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    error: str = ""  # set when the grader could not grade the submission at all
    refused: str = ""  # why the submission could not be read at all (graded 0: the student's doing)
    student_id: str = ""  # the LMS's id of the student, where the batch found one (Canvas, Moodle)
    # the course policy's view (reports/gradebook.py keeps both): when it was submitted (UTC ISO
    # 8601; "" unknown), and every adjustment to its raw score, with the reason
    submitted_at: str = ""
    adjustments: list[Adjustment] = field(default_factory=list)

    @property
    def status(self) -> str:
        """graded, refused (unreadable: scored 0) or not graded (the grader failed: no score)."""
        return NOT_GRADED if self.error else REFUSED if self.refused else GRADED

    @property
    def score(self) -> float:
        return round(sum(q.score for q in self.questions), 2)

    @property
    def max_score(self) -> float:
        return round(sum(q.max_score for q in self.questions), 2)

    @property
    def penalty(self) -> float:
        """Points the course's late policy took (0 or more)."""
        return round(-sum(a.points for a in self.adjustments if a.kind == LATE), 6) + 0.0  # never -0.0

    @property
    def manual(self) -> float:
        """Points staff added (or took) by hand, kept apart from the automatic score."""
        return round(sum(a.points for a in self.adjustments if a.kind == MANUAL), 6) + 0.0

    @property
    def final_score(self) -> float:
        """The score that counts, and the one every export carries: the raw score, less the late
        penalty, plus manual adjustments; never below 0."""
        return round(max(0.0, self.score + sum(a.points for a in self.adjustments)), 2)

    def question(self, qid: str) -> QuestionResult:
        return next(q for q in self.questions if q.qid == qid)

    def to_dict(self) -> dict:
        """What dataclasses.asdict gives (lists and dicts copied), written out: asdict's generic
        deep copy took some 10 ms a submission, in the grading process and in the parent."""
        data = {name: getattr(self, name) for name in _RESULT_FIELDS}
        data.update(devices=list(self.devices), warnings=list(self.warnings),
                    questions=[_question_dict(question) for question in self.questions],
                    adjustments=[{name: getattr(adjustment, name) for name in _ADJUSTMENT_FIELDS}
                                 for adjustment in self.adjustments])
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "SubmissionResult":
        """The result `to_dict` gave (`data` is left as it was: the server keeps and reads it again)."""
        questions = [QuestionResult(**q) for q in data["questions"]]
        adjustments = [Adjustment(**a) for a in data.get("adjustments", [])]
        return cls(questions=questions, adjustments=adjustments,
                   **{key: value for key, value in data.items() if key not in ("questions", "adjustments")})


_RESULT_FIELDS = tuple(field.name for field in fields(SubmissionResult))
_QUESTION_FIELDS = tuple(field.name for field in fields(QuestionResult))
_ADJUSTMENT_FIELDS = tuple(field.name for field in fields(Adjustment))


def _question_dict(question: QuestionResult) -> dict:
    data = {name: getattr(question, name) for name in _QUESTION_FIELDS}
    data["parts"] = [{key: list(value) if type(value) is list else value for key, value in part.items()}
                     for part in question.parts]
    data["diagnoses"] = None if question.diagnoses is None else list(question.diagnoses)
    return data


def score_cases(cases: list[CaseResult]) -> list[QuestionResult]:
    """Each test function earns its points times the share of its cases passed (or all or none).
    Questions and their cases come in suite order, whatever order the tests ran in."""
    by_question: dict[str, list[CaseResult]] = defaultdict(list)
    for case in sorted(cases, key=lambda case: case.position):
        by_question[case.qid].append(case)
    return _cap_submission_feedback([_score_question(qid, items) for qid, items in by_question.items()])


def _cut(text: str, limit: int, what: str) -> str:
    """`text`, or its start and a line that says it was cut, within `limit` characters."""
    if len(text) <= limit:
        return text
    note = f" ... [{len(text) - limit:,} more characters cut: {what} is capped at {limit:,}]"
    return text[:max(0, limit - len(note))] + note


def _cap_submission_feedback(questions: list["QuestionResult"]) -> list["QuestionResult"]:
    """Each question keeps its score; past MAX_SUBMISSION_FEEDBACK_CHARS in all, the feedback of
    the questions after says only that it was cut."""
    left = MAX_SUBMISSION_FEEDBACK_CHARS
    for question in questions:
        if len(question.feedback) > left:
            question.feedback = (f"{question.passed_cases} of {question.total_cases} checks passed. [feedback cut: "
                                 f"the submission's feedback is capped at {MAX_SUBMISSION_FEEDBACK_CHARS:,} characters]")
        left = max(0, left - len(question.feedback))
    return questions


def _score_question(qid: str, cases: list[CaseResult]) -> QuestionResult:
    by_test: dict[str, list[CaseResult]] = defaultdict(list)
    for case in cases:
        by_test[case.test].append(case)
    score = max_score = 0.0
    for items in by_test.values():
        points = items[0].points
        share = sum(c.passed for c in items) / len(items)
        score += points * (share if not items[0].all_or_nothing else float(share == 1.0))
        max_score += points
    passed = sum(c.passed for c in cases)
    not_started = not passed and all(STILL_THE_STUB in c.message for c in cases)
    parts = [{"points": items[0].points, "all_or_nothing": items[0].all_or_nothing, "passed": [c.passed for c in items]}
             for items in by_test.values()]
    return QuestionResult(qid, round(score, 2), round(max_score, 2), _feedback(cases), passed, len(cases), not_started,
                          parts, diagnoses_of([c.message for c in cases if not c.passed]))


def _feedback(cases: list[CaseResult]) -> str:
    """A count, then a few failures; cases that failed the same way (a stub, one exception, one
    missing module; describe.failed_how) are shown once with how many more there were. Every
    question's feedback, in every report, is written here."""
    failures = [c for c in cases if not c.passed]
    if not failures:
        return f"All {len(cases)} checks passed."
    lines = [f"{len(failures)} of {len(cases)} checks failed."]
    if any(c.grader_error for c in failures):
        lines.append("Some checks could not run because of a problem in the grader itself; "
                     "tell the course staff (this is not your mistake).")
    alike: dict[str, list] = {}  # outcome -> [first message, how many]
    for case in failures:
        alike.setdefault(failed_how(case.message), [case.message, 0])[1] += 1
    shown = list(alike.values())[:MAX_FAILURES_SHOWN]
    for message, count in shown:
        more = f" ({count - 1} more case{'s' if count > 2 else ''} failed the same way)" if count > 1 else ""
        lines.append(f"- {_with_count(_cut(message, MAX_MESSAGE_CHARS, 'one message'), more)}")
    hidden = len(failures) - sum(count for _, count in shown)
    if hidden:
        lines.append(f"- ... and {hidden} more failing case{'s' if hidden > 1 else ''}.")
    return _cut("\n".join(lines), MAX_QUESTION_FEEDBACK_CHARS, "a question's feedback")


def _with_count(message: str, more: str) -> str:
    """The count of alike cases at the end of the line that says what happened (the first, or the
    second after a scenario), before any traceback or hint below it."""
    lines = message.split("\n")
    at = 1 if len(lines) > 1 and failed_how(message) == "\n".join(lines[1:]) else 0
    lines[at] += more
    return "\n".join(lines)
