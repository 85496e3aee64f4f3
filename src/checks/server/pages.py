"""What every page and API route of the course server shares: who is asking (a Bearer token, a
signed session cookie, its CSRF token), rendering a page, and a submission as its reader may see
it. Its own module, below the route modules (app, policy_routes, lti_routes), so that none of
them imports another's private helpers and the imports run one way.
"""

from __future__ import annotations

import asyncio
import hmac
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any

import markupsafe
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from checks.course import inert
from checks.course.assignment import Assignment
from checks.policy import dates, regrades
from checks.policy.config import Course
from checks.server import auth, lateness, live
from checks.server.config import ServerConfig
from checks.server.queue import GradingQueue
from checks.server.storage import DONE, FAILED, GRADING, QUEUED, Storage, SubmissionRow, User
from checks.suites.scoring import MANUAL, Adjustment, SubmissionResult


class Waiters:
    """Requests waiting for a submission's result (a long poll): woken from the grading threads as
    each result is recorded, else they look again every second (another process may grade it)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._futures: dict[str, set[asyncio.Future]] = {}

    def register(self, submission_id: str) -> asyncio.Future:
        self.loop = asyncio.get_running_loop()
        future = self.loop.create_future()
        self._futures.setdefault(submission_id, set()).add(future)
        return future

    def forget(self, submission_id: str, future: asyncio.Future) -> None:
        waiting = self._futures.get(submission_id)
        if waiting is not None:
            waiting.discard(future)
            if not waiting:
                del self._futures[submission_id]

    def finished(self, submission_id: str) -> None:
        """From any thread."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._wake, submission_id)

    def _wake(self, submission_id: str) -> None:
        for future in self._futures.pop(submission_id, set()):
            if not future.done():
                future.set_result(None)


@dataclass
class Server:
    """What every route needs: the configuration, the storage, the graders' queue."""

    config: ServerConfig
    storage: Storage
    queue: GradingQueue | None
    assignments: dict[str, Assignment]
    auth: auth.Authenticator
    templates: Environment
    waiters: Waiters



# ---------------------------------------------------------------------------- who is asking

def page_templates(folder: Path, zone: tzinfo = timezone.utc) -> Environment:
    """The pages' templates: autoescaped, and every value they print made visible first
    (inert.visible), so that no control character a student wrote (an ESC in a regrade message, a
    bidirectional override in a file name) reaches any page: the one place student text enters them."""
    templates = Environment(loader=FileSystemLoader(folder), autoescape=select_autoescape(default=True),
                            finalize=_visible)
    templates.globals["utc"] = timezone.utc
    templates.filters["local"] = lambda when, seconds=False: local_time(
        datetime.fromisoformat(when) if isinstance(when, str) else when, zone, seconds=seconds)
    return templates


def _visible(value: object) -> object:
    """A value a template prints: text without control characters (lines and tabs kept: a file's
    text, a message), markup (escaped already, or rendered from escaped markdown) likewise."""
    if isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(inert.visible(str(value), keep="\n\r\t"))
    return inert.visible(value, keep="\n\r\t") if isinstance(value, str) else value


async def api_user(server: Server, request: Request) -> User:
    """The user of a Bearer token, or 401."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    user = None
    if scheme.lower() == "bearer" and token:
        user = await run_in_threadpool(server.auth.user_for, token.strip())
    if user is None:
        raise HTTPException(401, "not signed in: run `checks login URL` with your token",
                            headers={"WWW-Authenticate": "Bearer"})
    return user


def page_user(server: Server, request: Request) -> User | None:
    """The signed-in user of a browser session: None when signed out, or when the session was ended
    on the server (the user signed out anywhere, or was given a new token or role)."""
    user_id = request.session.get("uid")
    if not isinstance(user_id, str):
        return None
    user = server.storage.user(user_id)
    if user is None or request.session.get("tok") != user.token_hash[-16:]:
        return None
    generation = request.session.get("gen")  # ended on the server by a sign-out, a new token, a new role
    if not user.session_gen or not isinstance(generation, str) or \
            not hmac.compare_digest(generation.encode(), user.session_gen.encode()):
        return None
    return user


async def start_session(server: Server, request: Request, user: User) -> None:
    """Sign `user` in on this browser (the login form, an LTI launch): a fresh cookie that carries
    the user's token stamp and session generation, which page_user checks on every request."""
    generation = user.session_gen or await run_in_threadpool(server.storage.end_sessions, user.id)
    request.session.clear()
    request.session.update({"uid": user.id, "tok": user.token_hash[-16:], "gen": generation,
                            "csrf": auth.new_csrf_token()})


def csrf_token(request: Request) -> str:
    token = request.session.get("csrf")
    if not isinstance(token, str):
        token = request.session["csrf"] = auth.new_csrf_token()
    return token


async def checked_form(request: Request, **limits: int) -> Any:
    """The form, once its CSRF field matches the session's (else 403)."""
    form = await request.form(**limits)
    if not auth.csrf_ok(request.session.get("csrf"), form.get("csrf")):
        raise HTTPException(403, "the form is out of date or not from this site (CSRF check); reload the page")
    return form


def owned(server: Server, user: User, submission_id: str) -> SubmissionRow:
    """The submission, if this user may see it (its owner, or staff); 404 otherwise, as for an unknown id."""
    row = server.storage.submission(submission_id)
    if row is None or (row.user_id != user.id and not user.staff):
        raise HTTPException(404, "no such submission")
    return row


def course(server: Server) -> Course:
    """The course policy the server was loaded with (dates, grace days, records)."""
    assert server.config.course is not None, "load_config loads the course policy"
    return server.config.course


def policy_assignment(server: Server, name: str, user: User | None = None) -> Assignment:
    policy = server.config.assignments.get(name)
    if policy is None or (not policy.is_open(datetime.now(timezone.utc)) and not (user and user.staff)):
        raise HTTPException(404, f"no assignment {name!r} is open on this server")
    return server.assignments[name]



# ---------------------------------------------------------------------------- results, as students see them

def hidden_shown(server: Server, row: SubmissionRow) -> bool:
    return hidden_shown_for(server, row.assignment, row.user_id)


def hidden_shown_for(server: Server, assignment: str, student: str) -> bool:
    """Whether `student` sees the hidden results of `assignment` now: the staff released them, or
    the policy does at the student's own due date (an extension moves it for them)."""
    policy = server.config.assignments[assignment]
    if not policy.policy.hidden_wait:  # nothing waits: no records to read
        return True
    due = dates.extended_due(policy.policy, lateness.extension(course(server), assignment, student))
    return policy.hidden_shown(datetime.now(timezone.utc), server.storage.hidden_released(assignment), due=due)


def late_view(server: Server, row: SubmissionRow) -> dict | None:
    """What the receipt time of a submission costs under the policy (None: no due date, or staff's)."""
    decided = decision(server, row)
    if decided is None:
        return None
    return {"on_time": decided.on_time, "days_late": decided.days_late, "grace_days": decided.grace_days,
            "penalty_percent": decided.penalty_percent, "closed": decided.closed,
            "due": decided.due.isoformat() if decided.due else None, "reasons": list(decided.reasons)}


def visibility_note(server: Server, assignment: str, shown: bool) -> str:
    policy = server.config.assignments[assignment]
    if policy.hidden == "visible":
        return "Scores and feedback of every check are shown as soon as it is graded."
    if shown:
        return "The hidden checks' scores and feedback are released."
    due = local_time(policy.due, zone(server)) if policy.due else "the staff release them"
    return f"The hidden checks' scores and feedback are shown after the due date ({due}); until then only whether it was read and graded."


def student_result(server: Server, row: SubmissionRow, user: User) -> SubmissionResult | None:
    """The result as this user may see it: None until graded, or when the grader failed (staff see
    the failure, a student never a score from it); without hidden scores until they are released."""
    if row.status != DONE or row.result is None:
        return None
    result = SubmissionResult.from_dict(row.result)
    if not user.staff and not hidden_shown(server, row):
        return withheld(result)
    return charged(server, row, result)


def withheld(result: SubmissionResult) -> SubmissionResult:
    """What a student reads of the hidden run before its results are released: that it was graded,
    or why the upload could not be read, and nothing the run measured: no question, score,
    warning, device or duration (found by a fresh attacker: the run's seconds carried what the
    student's code saw of the hidden inputs, slept into a duration)."""
    return SubmissionResult(result.name, result.assignment, sandbox=result.sandbox, refused=result.refused,
                            student_id=result.student_id)


def charged(server: Server, row: SubmissionRow, result: SubmissionResult) -> SubmissionResult:
    """The result with what the course policy does to its score, as the gradebook applies it (its
    late penalty, from the receipt time, and the answered regrade requests on this submission):
    result.final_score is then the number the student reads wherever their score shows (`checks
    submit`, the page, "My submissions", feedback)."""
    manual = regrades.manual_adjustments(course(server), row.assignment).get(row.user_id, [])
    result.adjustments = [a for a in result.adjustments if a.kind != MANUAL] + [
        Adjustment(MANUAL, given.points, given.reason, given.by, given.at)
        for given in regrades.applied(manual, row.id, regrades.question_scores(result.questions))]
    decided = decision(server, row)
    if decided is not None:
        late = lateness.late_adjustment(decided, result.score, datetime.fromtimestamp(row.created, timezone.utc))
        if late is not None:
            result.adjustments = [late] + [a for a in result.adjustments if a.kind != late.kind]
            result.submitted_at = datetime.fromtimestamp(row.created, timezone.utc).isoformat(timespec="seconds")
    return result


def decision(server: Server, row: SubmissionRow) -> dates.Decision | None:
    """What the receipt time of a submission costs under the policy (None: no due date, or staff's)."""
    policy = server.config.assignments[row.assignment]
    owner = server.storage.user(row.user_id)
    if policy.due is None or owner is None or owner.staff:
        return None
    return lateness.decision(course(server), policy, row.user_id, datetime.fromtimestamp(row.created, timezone.utc))


def public_result(row: SubmissionRow) -> SubmissionResult | None:
    """The public checks' result, which every reader of the submission sees at once, whatever the
    hidden results' policy: the same checks `checks test` runs, so they reveal nothing hidden. None
    before the public run finished, or when it failed (staff read that failure, never a student)."""
    return None if row.public_result is None else SubmissionResult.from_dict(row.public_result)


def settled(row: SubmissionRow, shown: bool) -> bool:
    """Whether the reader has all they may see of the submission now (what `checks submit` waits
    for): its grading is over, or its hidden results are not theirs to see yet and its public
    checks' result is there (the hidden suite may still be queued behind other students' public checks)."""
    return row.status not in (QUEUED, GRADING) or (not shown and row.public_result is not None)


def status_view(server: Server, row: SubmissionRow, user: User) -> dict:
    result = student_result(server, row, user)
    shown = user.staff or hidden_shown(server, row)
    status = row.status if user.staff or row.status != FAILED else "grader_problem"
    reply = {"id": row.id, "assignment": row.assignment, "status": status, "created": row.created,
             "settled": settled(row, shown),
             "position": server.storage.queue_position(row), "files": row.files, "hidden_shown": shown,
             "visibility": visibility_note(server, row.assignment, shown), "url": f"/submissions/{row.id}"}
    if result is not None:
        reply["result"] = result.to_dict()
    late = late_view(server, row)
    if late is not None:
        reply["late"] = late
    public = public_result(row)
    if public is not None:
        reply["public"] = public.to_dict()
    if user.staff and row.public_error:
        reply["public_error"] = row.public_error
    if row.status == FAILED:
        reply["message"] = ("The grader itself failed on this submission: this is not your mistake, and no score "
                            "was recorded. The course staff see it and will grade it again.")
        if user.staff:
            reply["error"] = row.error
    return reply



def require_page_user(server: Server, request: Request) -> User:
    user = page_user(server, request)
    if user is None:
        raise HTTPException(401, "sign in first, at /login")
    return user


def render(server: Server, request: Request, template: str, *, status: int = 200,
            headers: dict[str, str] | None = None, **context: Any) -> Response:
    user = page_user(server, request)
    page = server.templates.get_template(template)
    values = {"title": server.config.title, "user": user, "csrf": csrf_token(request), **context}
    if live.wanted(request):  # only the parts that change, for live.js
        return live.parts(page, values)
    return HTMLResponse(page.render(values), status_code=status, headers=headers)



def row_view(server: Server, row: SubmissionRow, user: User) -> dict:
    result = student_result(server, row, user)
    return {"id": row.id, "assignment": row.assignment, "user": row.user_id, "created": stamp(row.created, zone(server)),
            "status": row.status if user.staff or row.status != FAILED else "grader problem",
            "score": f"{result.final_score:g} / {result.max_score:g}" if result and result.questions else "",
            "error": row.error if user.staff else ""}


def stamp(when: float | None, where: tzinfo = timezone.utc) -> str:
    return "" if when is None else local_time(datetime.fromtimestamp(when, timezone.utc), where, seconds=True)


def local_time(when: datetime, where: tzinfo, *, seconds: bool = False) -> str:
    """A date and time as the course reads it: in its time zone ([policy] time_zone), named."""
    local = when.astimezone(where)
    return local.strftime("%Y-%m-%d %H:%M" + (":%S" if seconds else "")) + f" {local.tzname() or where}"


def zone(server: Server) -> tzinfo:
    """The course's time zone, in which every page shows its dates (UTC where it names none)."""
    return course(server).zone



def questions_seen(server: Server, row: SubmissionRow, user: User) -> list[str]:
    """The question ids a student may ask a regrade of: those of the results they can see (the
    hidden ones once released, else the public checks'), so that no form names a hidden question early."""
    result = student_result(server, row, user)
    if result is not None and result.questions:
        return [q.qid for q in result.questions]
    public = public_result(row)
    return [q.qid for q in public.questions] if public is not None else []



def require_staff(server: Server, request: Request) -> User:
    user = require_page_user(server, request)
    if not user.staff:
        raise HTTPException(403, "for course staff only")
    return user


