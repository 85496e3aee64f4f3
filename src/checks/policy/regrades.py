"""Regrade requests: a student asks, per question, with a message; staff answer, with an optional
manual adjustment of the score, kept apart from the automatic score and audited; the student
sees the answer (in their feedback, once the assignment is published again).

A request travels as a small JSON file the student writes (`checks regrade-request`) and hands in
with their work, or the course server records it directly (record_request). Staff collect the
files into COURSE/records/regrades.jsonl (records.py: append-only, who and when on every line);
an answer is a new line there, and a later answer to the same request replaces the earlier one
(both stay in the file). The course server calls these same functions.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from checks.course.assignment import CourseError
from checks.policy import records
from checks.policy.config import Course

REGRADES = "regrades"
REQUEST_KIND = "checks regrade request"  # what a request file says it is
MAX_MESSAGE_CHARS = 4000


@dataclass(frozen=True)
class Request:
    """What a student asked."""

    id: str
    assignment: str
    student: str
    question: str
    message: str
    requested_at: str  # UTC, ISO 8601
    submission: str = ""  # the course server's submission id it asks about ("": a request file's, the one graded)


@dataclass(frozen=True)
class Answer:
    """What staff answered: the reply the student reads, and the points added (0: none)."""

    id: str
    reply: str
    points: float
    by: str
    at: str  # UTC, ISO 8601


@dataclass(frozen=True)
class Thread:
    request: Request
    answer: Answer | None  # the latest; None: still open
    answers: tuple[Answer, ...] = ()  # every one, oldest first: the audit trail


def new_request(assignment: str, student: str, question: str, message: str, *, now: datetime,
                submission: str = "") -> Request:
    """A request, checked as a student types it: a question id and a message within bounds.
    `submission`: the course server's id of the submission it asks about."""
    for what, value in (("the assignment", assignment), ("your student id", student), ("the question", question)):
        if not value.strip() or len(value) > 200 or any(ch in value for ch in "\n\r\t"):
            raise CourseError(f"{what} must be a short name on one line, not {value!r}")
    if not message.strip():
        raise CourseError("say what should be looked at again (--message)")
    if len(message) > MAX_MESSAGE_CHARS:
        raise CourseError(f"the message is {len(message):,} characters; keep it within {MAX_MESSAGE_CHARS:,}")
    at = now.astimezone(timezone.utc).isoformat(timespec="seconds")
    named = [assignment, student, question, message, at] + ([submission] if submission else [])
    digest = hashlib.sha256(json.dumps(named).encode()).hexdigest()[:12]
    return Request(digest, assignment.strip(), student.strip(), question.strip(), message.strip(), at, submission)


def write_request(request: Request, folder: Path) -> Path:
    """The file a student hands in: never over an existing one."""
    path = folder / f"regrade-{request.assignment}-{request.student}-{request.id}.json"
    data = json.dumps({"kind": REQUEST_KIND, **asdict(request)}, indent=2, ensure_ascii=False) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(data)
    return path


def read_request_file(path: Path) -> Request:
    """A student's request file, checked (it is student text: data, never trusted to be well formed)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CourseError(f"{path} is not a regrade request checks wrote: {error}") from None
    if not isinstance(data, dict) or data.get("kind") != REQUEST_KIND:
        raise CourseError(f"{path} is not a regrade request checks wrote")
    fields = {key: data.get(key, "" if key == "submission" else None) for key in Request.__dataclass_fields__}
    if not all(isinstance(value, str) for value in fields.values()):
        raise CourseError(f"{path}: every field of a regrade request is a string")
    try:
        asked = datetime.fromisoformat(fields["requested_at"])
    except ValueError:
        asked = None
    if asked is None or asked.tzinfo is None:
        raise CourseError(f"{path}: `requested_at` must be a date and time with its offset")
    # made again from its fields: the id is the content's, whatever the file says
    return new_request(fields["assignment"], fields["student"], fields["question"], fields["message"], now=asked,
                       submission=fields["submission"])


def record_request(course: Course, request: Request, *, by: str, now: datetime) -> bool:
    """Add a request to the course's records (checked against the roster and the assignments);
    False when that request is there already (collecting a file twice records it once)."""
    if request.assignment not in course.policies:
        raise CourseError(f"regrade request {request.id}: no assignment {request.assignment!r} in this course")
    roster = course.require_roster("a regrade request")
    if request.student not in roster:
        raise CourseError(f"regrade request {request.id}: {request.student!r} is not on the roster ({roster.path})")
    path = records.records_path(course.folder, REGRADES)
    with records.locked(path) as fd:
        if any(line.fields.get("id") == request.id for line in records.read_records(path)):
            return False
        records.append(fd, {"event": "request", **asdict(request), "by": by, "at": _stamp(now)})
    return True


def answer(course: Course, request_id: str, reply: str, *, points: float = 0.0, by: str, now: datetime) -> Answer:
    """Staff's answer to a request, with `points` added to the student's score (negative: taken)."""
    if not reply.strip():
        raise CourseError("write the answer the student will read (--reply)")
    if not math.isfinite(points):
        raise CourseError("--adjust must be a number of points")
    known = {thread.request.id: thread for thread in threads(course)}
    if request_id not in known:
        raise CourseError(f"no regrade request {request_id!r} (`checks regrade list` shows them)")
    given = Answer(request_id, reply.strip(), float(points), by, _stamp(now))
    path = records.records_path(course.folder, REGRADES)
    with records.locked(path) as fd:
        records.append(fd, {"event": "answer", **asdict(given)})
    return given


def threads(course: Course, *, assignment: str | None = None, student: str | None = None) -> list[Thread]:
    """Every request with its answers, in the order asked (CourseError names a bad line)."""
    requests: dict[str, Request] = {}
    answers: dict[str, list[Answer]] = {}
    for line in records.read_records(records.records_path(course.folder, REGRADES)):
        fields = line.fields
        try:
            if fields.get("event") == "request":
                requests[fields["id"]] = Request(*(str(fields.get(key, "") if key == "submission" else fields[key])
                                                   for key in Request.__dataclass_fields__))
            elif fields.get("event") == "answer":
                answers.setdefault(fields["id"], []).append(
                    Answer(str(fields["id"]), str(fields["reply"]), float(fields["points"]), str(fields["by"]),
                           str(fields["at"])))
            else:
                raise KeyError("event")
        except (KeyError, TypeError, ValueError) as error:
            raise CourseError(f"{line.where()}: not a regrade record checks wrote (missing or bad {error})") from None
    return [Thread(request, (answers.get(request.id) or [None])[-1], tuple(answers.get(request.id, ())))
            for request in requests.values()
            if assignment in (None, request.assignment) and student in (None, request.student)]


@dataclass(frozen=True)
class Manual:
    """An answered request's adjustment, tied to the question (and, on the server, the submission)
    it answers."""

    points: float
    reason: str
    by: str
    at: str
    question: str = ""
    submission: str = ""  # "": a request file's, for the submission graded


def manual_adjustments(course: Course, assignment: str) -> dict[str, list[Manual]]:
    """Each student's answered requests on `assignment`: what the gradebook keeps as manual
    adjustments, apart from the automatic score. A later request on the same question of the same
    submission replaces an earlier one's adjustment (two answers to one question never stack)."""
    latest: dict[tuple[str, str, str], Manual] = {}
    for thread in threads(course, assignment=assignment):
        if thread.answer is not None:
            request = thread.request
            latest[(request.student, request.submission, request.question)] = Manual(
                thread.answer.points, f"regrade of {request.question}: {thread.answer.reply}", thread.answer.by,
                thread.answer.at, request.question, request.submission)
    found: dict[str, list[Manual]] = {}
    for (student, _, _), manual in latest.items():
        found.setdefault(student, []).append(manual)
    return found


def applied(manual: list[Manual], submission: str, questions: dict[str, tuple[float, float]]) -> list[Manual]:
    """The adjustments that apply to `submission` (those tied to it, and those tied to none), each
    kept within its question's bounds: `questions` maps a question id to (its score, its maximum),
    and no adjustment takes a question above its maximum or below 0 (the reason says where one was
    cut). One tied to another submission answers that one, not this: it is left out."""
    given: dict[str, float] = {}
    kept = []
    for item in manual:
        if item.submission and item.submission != submission:
            continue
        points = item.points
        if questions:
            score, most = questions.get(item.question, (0.0, 0.0))
            before = given.get(item.question, 0.0)
            points = round(min(max(score + before + item.points, 0.0), most) - score - before, 6) + 0.0
            given[item.question] = before + points
        reason = item.reason
        if points != item.points:
            reason += (f" (the answer gave {item.points:+g}; {item.question} is kept within 0 to "
                       f"{questions.get(item.question, (0.0, 0.0))[1]:g} points)")
        kept.append(Manual(points, reason, item.by, item.at, item.question, item.submission))
    return kept


def question_scores(result_questions: list) -> dict[str, tuple[float, float]]:  # noqa: ANN001 - QuestionResults
    """(score, maximum) by question id, for `applied`."""
    return {question.qid: (float(question.score), float(question.max_score)) for question in result_questions}


def _stamp(now: datetime) -> str:
    return now.astimezone(timezone.utc).isoformat(timespec="seconds")
