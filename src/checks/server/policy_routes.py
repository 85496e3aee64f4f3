"""The course policy's decisions on the server: staff grant and revoke extensions and answer
regrade requests; students file a regrade request per question and read the answer.

Every decision goes through the same library the command line uses (checks.policy.extensions,
checks.policy.regrades), so the records are the same audited lines under COURSE/records/ that
`checks extension` and `checks regrade` write and read, with the signed-in user as `by`. Every
form carries the session's CSRF token (pages.checked_form); a mistake (a date without a time zone,
a student not on the roster, an empty reply) is the library's CourseError, shown on the page
with status 400 and nothing recorded.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from checks.course.assignment import CourseError
from checks.policy import extensions, regrades
from checks.server import pages
from checks.server.pages import Server
from checks.suites.scoring import SubmissionResult


def _now() -> datetime:
    return datetime.now(timezone.utc)


# ---------------------------------------------------------------------------- extensions (staff)

def _student_context(server: Server, student_id: str) -> dict:
    """What a student's staff page shows of the policy: extensions in force and their history,
    and the student's regrade requests."""
    course = pages.course(server)
    history = [e for e in extensions.history(course) if e.student == student_id]
    in_force = {name: until for name in server.config.assignments
                if (until := extensions.in_force(course, name).get(student_id)) is not None}
    return {"extensions": in_force, "extension_history": history,
            "threads": regrades.threads(course, student=student_id), "names": list(server.config.assignments)}


async def staff_student(server: Server, request: Request) -> Response:
    """A student's history, with their extensions (grant and revoke forms) and regrade requests."""
    user = pages.require_staff(server, request)
    student = server.storage.user(request.path_params["user"])
    if student is None:
        raise HTTPException(404, "no such student")
    rows = server.storage.submissions(user_id=student.id)
    return pages.render(server, request, "student.html.j2", student=student,
                       rows=[pages.row_view(server, row, user) for row in rows],
                       **await run_in_threadpool(_student_context, server, student.id), error="")


async def staff_extension(server: Server, request: Request) -> Response:
    """Grant (a date) or revoke (action=revoke) a student's extension, with a reason: audited."""
    user = pages.require_staff(server, request)
    form = await pages.checked_form(request)
    student, assignment = str(form.get("student", "")), str(form.get("assignment", ""))
    revoke = form.get("action") == "revoke"
    until = None if revoke else str(form.get("until", "")).strip()
    try:
        if until == "":
            raise CourseError("give the new due date (such as 2030-07-07T23:59:00+02:00), or revoke")
        await run_in_threadpool(lambda: extensions.grant(pages.course(server), assignment, student, until,
                                                         reason=str(form.get("reason", "")), by=user.id, now=_now(),
                                                         fields=("New due date", "Why")))
    except CourseError as error:
        target = server.storage.user(student)
        if target is None:
            raise HTTPException(400, str(error)) from None
        return pages.render(server, request, "student.html.j2", status=400, student=target,
                           rows=[pages.row_view(server, row, user) for row in server.storage.submissions(user_id=student)],
                           **await run_in_threadpool(_student_context, server, student), error=str(error))
    return RedirectResponse(f"/staff/students/{student}", status_code=303)


# ---------------------------------------------------------------------------- regrade requests

async def staff_regrades(server: Server, request: Request) -> Response:
    """Every regrade request of an assignment (all, by default), open ones first, with answer forms."""
    pages.require_staff(server, request)
    assignment = request.query_params.get("assignment") or None
    threads = await run_in_threadpool(regrades.threads, pages.course(server), assignment=assignment)
    threads.sort(key=lambda thread: thread.answer is not None)
    return pages.render(server, request, "regrades.html.j2", threads=threads, assignment=assignment or "", error="")


async def staff_answer(server: Server, request: Request) -> Response:
    """Answer a request, with an optional manual adjustment (points, kept apart from the score)."""
    user = pages.require_staff(server, request)
    form = await pages.checked_form(request)
    request_id = request.path_params["id"]
    try:
        text = str(form.get("points", "")).strip() or "0"
        try:
            points = float(text)
        except ValueError:
            raise CourseError(f"the adjustment must be a number of points, not {text!r}") from None
        await run_in_threadpool(_check_bounds, server, request_id, points)
        await run_in_threadpool(lambda: regrades.answer(pages.course(server), request_id, str(form.get("reply", "")),
                                                        points=points, by=user.id, now=_now()))
    except CourseError as error:
        threads = await run_in_threadpool(regrades.threads, pages.course(server))
        return pages.render(server, request, "regrades.html.j2", status=400, threads=threads, assignment="",
                           error=str(error))
    return RedirectResponse("/staff/regrades", status_code=303)


def _check_bounds(server: Server, request_id: str, points: float) -> None:
    """CourseError where `points` would take the question the request asks about above its maximum
    (or below 0) in the submission it asks about: the answer is refused, naming what is possible."""
    thread = next((t for t in regrades.threads(pages.course(server)) if t.request.id == request_id), None)
    if thread is None or not thread.request.submission:
        return  # regrades.answer names an unknown request; a request file's is bounded when it is applied
    row = server.storage.submission(thread.request.submission)
    result = None if row is None or row.result is None else SubmissionResult.from_dict(row.result)
    scores = regrades.question_scores(result.questions) if result is not None else {}
    if thread.request.question not in scores:
        if points:
            raise CourseError(f"{thread.request.question} has no score in submission {thread.request.submission}: "
                              "no points can be added to it (answer with 0)")
        return
    score, most = scores[thread.request.question]
    if not -score <= points <= most - score:
        raise CourseError(f"{thread.request.question} has {score:g} of {most:g} points in submission "
                          f"{thread.request.submission}: the adjustment must be from {-score:g} to {most - score:+g}")


async def student_regrade(server: Server, request: Request) -> Response:
    """A student's regrade request on one question of their submission, with a message."""
    user = pages.require_page_user(server, request)
    row = pages.owned(server, user, request.path_params["id"])
    form = await pages.checked_form(request)
    if row.user_id != user.id:
        raise HTTPException(403, "a regrade request is the student's own")
    question = str(form.get("question", ""))
    if question not in pages.questions_seen(server, row, user):
        raise HTTPException(400, f"no question {question!r} in this submission's results")
    try:
        asked = regrades.new_request(row.assignment, user.id, question, str(form.get("message", "")), now=_now(),
                                     submission=row.id)
        await run_in_threadpool(lambda: regrades.record_request(pages.course(server), asked, by=user.id, now=_now()))
    except CourseError as error:
        raise HTTPException(400, str(error)) from None
    return RedirectResponse(f"/submissions/{row.id}#regrades", status_code=303)


ROUTES: list[tuple[str, Callable, list[str]]] = [
    ("/staff/students/{user}", staff_student, ["GET"]),
    ("/staff/extensions", staff_extension, ["POST"]),
    ("/staff/regrades", staff_regrades, ["GET"]),
    ("/staff/regrades/{id}/answer", staff_answer, ["POST"]),
    ("/submissions/{id}/regrade", student_regrade, ["POST"]),
]
