"""The course server's routes: a JSON API for `checks login/submit/fetch` (Bearer tokens) and HTML
pages for students and staff (a signed session cookie, a CSRF token on every form).

Every student request is authorised for that student: a submission another student owns is
answered 404, as one that does not exist. Nothing here runs student code: an upload is checked,
stored, queued (server/queue.py grades it) and acknowledged.
"""

from __future__ import annotations

import asyncio
import io
import math
import re
import time
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from checks import __version__
from checks.course.assignment import Assignment, load_assignment
from checks.reports.render import feedback_html, feedback_markdown, question_stats
from checks.course.assignment import CourseError
from checks.policy import dates, regrades
from checks.policy.config import Course
from checks.server import auth, lateness, live
from checks.server.config import ServerConfig
from checks.server.gradebook import FORMATS, gradebook_file
from checks.server.queue import GradingQueue
from checks.server.storage import DONE, FAILED, GRADING, QUEUED, Storage, SubmissionRow, User, new_id
from checks.server.uploads import UploadRefused, as_zip, store
from checks.server.web import BodyLimit, SecurityHeaders, client_address, session_secret
from checks.suites.scoring import SubmissionResult

TEMPLATES = Path(__file__).parent / "templates"
STYLE = (TEMPLATES / "style.css").read_text()
FEEDBACK_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"
SESSION_SECONDS = 12 * 3600


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


def create_app(config: ServerConfig, storage: Storage, queue: GradingQueue | None) -> Starlette:
    """The ASGI app of one course; `queue` is None where another process grades."""
    assignments = {name: load_assignment(config.course_root, name) for name in config.assignments}
    templates = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True))
    templates.globals["utc"] = timezone.utc
    server = Server(config, storage, queue, assignments, auth.Authenticator(storage), templates, Waiters())
    if queue is not None:
        queue.finished.append(server.waiters.finished)
        queue.hidden_shown = lambda row: _shown(server, row)  # then its public checks add nothing to see
    from checks.server import lti_routes, policy_routes  # their handlers use this module's helpers

    routes = [Route(path, _bind(server, handler), methods=methods)
              for path, handler, methods in policy_routes.ROUTES + lti_routes.ROUTES + ROUTES]
    middleware = [
        Middleware(SecurityHeaders, hsts=config.secure_cookies),
        Middleware(BodyLimit, limit=config.upload_bytes),
        Middleware(SessionMiddleware, secret_key=session_secret(config.data_dir), session_cookie="checks_session",
                   max_age=SESSION_SECONDS, same_site="strict", https_only=config.secure_cookies),
    ]
    app = Starlette(routes=routes, middleware=middleware, exception_handlers={HTTPException: _http_error})
    app.state.server = server
    return app


def _bind(server: Server, handler: Callable[[Server, Request], Awaitable[Response]]) -> Callable:
    async def endpoint(request: Request) -> Response:
        return await handler(server, request)
    endpoint.__name__ = handler.__name__
    return endpoint


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    headers = dict(error.headers or {})
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": error.detail}, status_code=error.status_code, headers=headers)
    return PlainTextResponse(f"{error.status_code}: {error.detail}\n", status_code=error.status_code, headers=headers)


# ---------------------------------------------------------------------------- who is asking

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
    """The signed-in user of a browser session (None when signed out, or the token was reissued)."""
    user_id = request.session.get("uid")
    if not isinstance(user_id, str):
        return None
    user = server.storage.user(user_id)
    if user is None or request.session.get("tok") != user.token_hash[-16:]:
        return None
    return user


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


def _course(server: Server) -> Course:
    """The course policy the server was loaded with (dates, grace days, records)."""
    assert server.config.course is not None, "load_config loads the course policy"
    return server.config.course


def _policy_assignment(server: Server, name: str, user: User | None = None) -> Assignment:
    policy = server.config.assignments.get(name)
    if policy is None or (not policy.is_open(datetime.now(timezone.utc)) and not (user and user.staff)):
        raise HTTPException(404, f"no assignment {name!r} is open on this server")
    return server.assignments[name]


# ---------------------------------------------------------------------------- logins

async def _login(server: Server, account: str, token: str, address: str,
                 expected: str | None = None) -> tuple[User | None, float]:
    """(the user, 0) on success; (None, seconds to wait) while backing off; (None, 0) when wrong.
    `account` names the backoff's account key; `expected`: the user the token must be (a web form's id)."""
    keys = auth.login_keys(account, address)
    config = server.config
    wait = await run_in_threadpool(auth.backoff_left, server.storage, keys, config.login_free_failures,
                                   config.login_backoff)
    if wait > 0:
        return None, wait
    user = await run_in_threadpool(server.auth.user_for, token)
    if user is None or (expected is not None and user.id != expected):
        for key in keys:
            await run_in_threadpool(server.storage.count_login_failure, key)
        return None, 0.0
    await run_in_threadpool(server.storage.clear_login_failures, keys[0])
    return user, 0.0


def _retry_after(seconds: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(time.time() + seconds, timezone.utc).strftime("%H:%M:%S UTC")


async def api_login(server: Server, request: Request) -> Response:
    try:
        body = await request.json()
        token = str(body["token"])
    except (ValueError, KeyError, TypeError):
        raise HTTPException(400, 'send {"token": "..."}') from None
    token_id = token.partition(".")[0][:64]
    owner = server.storage.user_by_token_id(token_id)  # backoff per account, whichever way it signs in
    user, wait = await _login(server, owner.id if owner else token_id, token, client_address(request.scope))
    if wait:
        raise HTTPException(429, f"too many failed logins: try again in {math.ceil(wait)} s, at {_when(wait)}",
                            headers=_retry_after(wait))
    if user is None:
        raise HTTPException(401, "that token is not valid here")
    return JSONResponse({"user": user.id, "name": user.name, "role": user.role})


async def login_page(server: Server, request: Request) -> Response:
    return _render(server, request, "login.html.j2", error="", status=200)


async def login_post(server: Server, request: Request) -> Response:
    form = await checked_form(request)
    account, token = str(form.get("user", "")).strip(), str(form.get("token", "")).strip()
    user, wait = await _login(server, account[:200], token, client_address(request.scope), expected=account)
    if wait:
        return _render(server, request, "login.html.j2", status=429, headers=_retry_after(wait),
                       error=f"Too many failed sign-ins: try again in {math.ceil(wait)} s (at {_when(wait)}).")
    if user is None:
        return _render(server, request, "login.html.j2", status=401, error="That id and token do not match.")
    request.session.clear()
    request.session.update({"uid": user.id, "tok": user.token_hash[-16:], "csrf": auth.new_csrf_token()})
    return RedirectResponse("/staff" if user.staff else "/", status_code=303)


async def logout(server: Server, request: Request) -> Response:
    await checked_form(request)
    request.session.clear()
    return RedirectResponse("/login", status_code=303)


# ---------------------------------------------------------------------------- submitting

async def _submit(server: Server, user: User, assignment: Assignment, parts: list[tuple[str, bytes]],
                  grace_answer: str | None = None) -> SubmissionRow:
    """Rate limit, check, store (fsynced), queue (committed): then, and only then, acknowledged. The
    receipt time is the submission time: the course policy decides lateness from it (lateness.py);
    a late upload that would spend grace days on request is refused (409) until it says whether to."""
    config = server.config
    policy = config.assignments[assignment.name]
    if not user.staff:  # refused before it costs a try
        try:
            await run_in_threadpool(lateness.admit, _course(server), policy, user.id, datetime.now(timezone.utc),
                                    grace_answer)
        except lateness.GraceQuestion as question:
            raise HTTPException(409, str(question)) from None
        except CourseError as error:
            raise HTTPException(403, str(error)) from None
    wait = await run_in_threadpool(server.storage.take_token, f"{user.id}:{assignment.name}", config.rate_count,
                                   config.rate_window)
    if wait:
        raise HTTPException(429, f"{config.rate_count} submissions of {assignment.name} per "
                            f"{config.rate_window:g} s: the next is allowed in {math.ceil(wait)} s, at {_when(wait)}",
                            headers=_retry_after(wait))
    submission_id = new_id()

    def write() -> SubmissionRow:
        data = as_zip(parts, max_files=config.max_files, unpacked_bytes=config.unpacked_bytes)
        stored = store(data, assignment, config.data_dir, submission_id, max_files=config.max_files,
                       unpacked_bytes=config.unpacked_bytes)
        now = datetime.now(timezone.utc)
        found = None
        if not user.staff:  # decided again at the receipt time, which the row keeps
            found = lateness.admit(_course(server), policy, user.id, now, grace_answer)
        row = server.storage.add_submission(user.id, assignment.name, stored.path, stored.sha256, stored.size,
                                            stored.files, submission_id, created=now.timestamp())
        if found is not None:
            lateness.settle(_course(server), policy, user.id, found, grace_answer, now)
        return row

    try:
        row = await run_in_threadpool(write)
    except UploadRefused as refused:  # a refused upload costs no try: the student fixes it and sends it again
        await run_in_threadpool(server.storage.give_back_token, f"{user.id}:{assignment.name}", config.rate_count)
        raise HTTPException(refused.status, str(refused)) from None
    except lateness.GraceQuestion as question:  # the due date passed while it was stored
        await run_in_threadpool(server.storage.give_back_token, f"{user.id}:{assignment.name}", config.rate_count)
        raise HTTPException(409, str(question)) from None
    except CourseError as error:
        await run_in_threadpool(server.storage.give_back_token, f"{user.id}:{assignment.name}", config.rate_count)
        raise HTTPException(403, str(error)) from None
    if server.queue is not None:
        server.queue.notify()
    return row


async def _parts(request: Request, server: Server) -> tuple[Any, list[tuple[str, bytes]]]:
    try:
        form = await request.form(max_files=server.config.max_files, max_fields=10)
    except HTTPException as refused:  # starlette's multipart parser counts the files as they stream in
        if "Too many files" in str(refused.detail):
            raise HTTPException(413, f"at most {server.config.max_files} files are taken") from None
        raise
    uploads = [value for _, value in form.multi_items() if isinstance(value, UploadFile)]
    parts = []
    for upload in uploads:
        if upload.filename:
            parts.append((upload.filename, await upload.read()))
    return form, parts


async def api_submit(server: Server, request: Request) -> Response:
    user = await api_user(server, request)
    assignment = _policy_assignment(server, request.path_params["assignment"], user)
    form, parts = await _parts(request, server)
    row = await _submit(server, user, assignment, parts, _grace_answer(form))
    return JSONResponse(_status(server, row, user), status_code=202)


def _grace_answer(form: Any) -> str | None:
    """The form's answer to "spend grace days on this late upload?" (None: not given)."""
    value = form.get("grace")
    return value.strip() if isinstance(value, str) and value.strip() else None


async def page_submit(server: Server, request: Request) -> Response:
    user = _require_page_user(server, request)
    assignment = _policy_assignment(server, request.path_params["assignment"], user)
    form, parts = await _parts(request, server)
    if not auth.csrf_ok(request.session.get("csrf"), form.get("csrf")):
        raise HTTPException(403, "the form is out of date or not from this site (CSRF check); reload the page")
    try:
        row = await _submit(server, user, assignment, parts, _grace_answer(form))
    except HTTPException as refused:
        if refused.status_code not in (400, 403, 409, 413, 429):
            raise
        context = {**_home(server, user), "error": f"{assignment.name}: {refused.detail}"}
        return _render(server, request, "home.html.j2", status=refused.status_code, headers=refused.headers or {},
                       **context)
    return RedirectResponse(f"/submissions/{row.id}", status_code=303)


# ---------------------------------------------------------------------------- results, as students see them

def _shown(server: Server, row: SubmissionRow) -> bool:
    return _shown_for(server, row.assignment, row.user_id)


def _shown_for(server: Server, assignment: str, student: str) -> bool:
    """Whether `student` sees the hidden results of `assignment` now: the staff released them, or
    the policy does at the student's own due date (an extension moves it for them)."""
    policy = server.config.assignments[assignment]
    if policy.policy.hidden_before_due:  # nothing waits: no records to read
        return True
    due = dates.extended_due(policy.policy, lateness.extension(_course(server), assignment, student))
    return policy.hidden_shown(datetime.now(timezone.utc), server.storage.hidden_released(assignment), due=due)


def _late_view(server: Server, row: SubmissionRow) -> dict | None:
    """What the receipt time of a submission costs under the policy (None: no due date, or staff's)."""
    policy = server.config.assignments[row.assignment]
    owner = server.storage.user(row.user_id)
    if policy.due is None or owner is None or owner.staff:
        return None
    decision = lateness.decision(_course(server), policy, row.user_id, datetime.fromtimestamp(row.created, timezone.utc))
    return {"on_time": decision.on_time, "days_late": decision.days_late, "grace_days": decision.grace_days,
            "penalty_percent": decision.penalty_percent, "closed": decision.closed,
            "due": decision.due.isoformat() if decision.due else None, "reasons": list(decision.reasons)}


def _visibility_note(server: Server, assignment: str, shown: bool) -> str:
    policy = server.config.assignments[assignment]
    if policy.hidden == "visible":
        return "Scores and feedback of every check are shown as soon as it is graded."
    if shown:
        return "The hidden checks' scores and feedback are released."
    due = policy.due.strftime("%Y-%m-%d %H:%M UTC") if policy.due else "the staff release them"
    return f"The hidden checks' scores and feedback are shown after the due date ({due}); until then only whether it was read and graded."


def student_result(server: Server, row: SubmissionRow, user: User) -> SubmissionResult | None:
    """The result as this user may see it: None until graded, or when the grader failed (staff see
    the failure, a student never a score from it); without hidden scores until they are released."""
    if row.status != DONE or row.result is None:
        return None
    result = SubmissionResult.from_dict(row.result)
    if not user.staff and not _shown(server, row):
        result.questions = []
    return result


def public_result(row: SubmissionRow) -> SubmissionResult | None:
    """The public checks' result, which every reader of the submission sees at once, whatever the
    hidden results' policy: the same checks `checks test` runs, so they reveal nothing hidden. None
    before the public run finished, or when it failed (staff read that failure, never a student)."""
    return None if row.public_result is None else SubmissionResult.from_dict(row.public_result)


def _settled(row: SubmissionRow, shown: bool) -> bool:
    """Whether the reader has all they may see of the submission now (what `checks submit` waits
    for): its grading is over, or its hidden results are not theirs to see yet and its public
    checks' result is there (the hidden suite may still be queued behind other students' public checks)."""
    return row.status not in (QUEUED, GRADING) or (not shown and row.public_result is not None)


def _status(server: Server, row: SubmissionRow, user: User) -> dict:
    result = student_result(server, row, user)
    shown = user.staff or _shown(server, row)
    status = row.status if user.staff or row.status != FAILED else "grader_problem"
    reply = {"id": row.id, "assignment": row.assignment, "status": status, "created": row.created,
             "settled": _settled(row, shown),
             "position": server.storage.queue_position(row), "files": row.files, "hidden_shown": shown,
             "visibility": _visibility_note(server, row.assignment, shown), "url": f"/submissions/{row.id}"}
    if result is not None:
        reply["result"] = result.to_dict()
    late = _late_view(server, row)
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


MAX_WAIT = 60.0


async def api_submission(server: Server, request: Request) -> Response:
    """A submission's status; with ?wait=SECONDS (at most 60), answered once it is settled for the
    reader (_settled) or the time is up: one request per submission instead of a poll every
    fraction of a second."""
    user = await api_user(server, request)
    try:
        wait = min(MAX_WAIT, max(0.0, float(request.query_params.get("wait", 0))))
    except ValueError:
        raise HTTPException(400, "wait is a number of seconds") from None
    submission_id = request.path_params["id"]
    deadline = time.monotonic() + wait
    while True:
        future = server.waiters.register(submission_id)  # before looking: a result recorded meanwhile wakes it
        try:
            row = owned(server, user, submission_id)
            left = deadline - time.monotonic()
            if left <= 0 or _settled(row, user.staff or _shown(server, row)):
                return JSONResponse(_status(server, row, user))
            try:
                await asyncio.wait_for(future, timeout=min(left, 1.0))
            except asyncio.TimeoutError:
                pass
        finally:
            server.waiters.forget(submission_id, future)


async def api_submissions(server: Server, request: Request) -> Response:
    user = await api_user(server, request)
    rows = server.storage.submissions(user_id=user.id, assignment=request.query_params.get("assignment"), limit=200)
    return JSONResponse([_status(server, row, user) for row in rows])


async def api_assignments(server: Server, request: Request) -> Response:
    user = await api_user(server, request)
    now = datetime.now(timezone.utc)
    listed = []
    for name, policy in server.config.assignments.items():
        if not (policy.is_open(now) or user.staff):
            continue
        entry = {"name": name, "released": policy.is_open(now), "due": policy.due.isoformat() if policy.due else None,
                 "hidden": policy.hidden}
        if not user.staff:
            entry["terms"] = _terms_view(lateness.terms(_course(server), policy, user.id, now))
        listed.append(entry)
    return JSONResponse(listed)


def _terms_view(terms: lateness.Terms) -> dict:
    """What an upload now would cost, as the page and `checks submit` say it before a late upload."""
    return {"due": terms.due.isoformat() if terms.due else None, "days_late": terms.days_late,
            "closed": terms.closed, "grace_left": terms.term_left, "grace_mode": terms.mode, "asks": terms.asks,
            "would_spend": terms.would_spend}


async def api_distribution(server: Server, request: Request) -> Response:
    """The student release of an assignment as a zip (`checks fetch`), once it is released."""
    user = await api_user(server, request)
    assignment = _policy_assignment(server, request.path_params["assignment"], user)
    return Response(await run_in_threadpool(_release_zip, assignment), media_type="application/zip",
                    headers={"Content-Disposition": f'attachment; filename="{assignment.name}.zip"'})


def _release_zip(assignment: Assignment) -> bytes:
    buffer = io.BytesIO()
    folder = assignment.release_dir
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts:
                archive.write(path, f"{assignment.name}/{path.relative_to(folder).as_posix()}")
    return buffer.getvalue()


async def healthz(server: Server, request: Request) -> Response:
    queued, grading, _ = server.storage.queue_state()
    ready = server.queue is None or server.queue.ready.is_set()
    return JSONResponse({"ok": True, "graders_ready": ready, "queued": queued, "grading": grading,
                         "version": __version__})


# ---------------------------------------------------------------------------- student pages

def _require_page_user(server: Server, request: Request) -> User:
    user = page_user(server, request)
    if user is None:
        raise HTTPException(401, "sign in first, at /login")
    return user


def _render(server: Server, request: Request, template: str, *, status: int = 200,
            headers: dict[str, str] | None = None, **context: Any) -> Response:
    user = page_user(server, request)
    page = server.templates.get_template(template)
    values = {"title": server.config.title, "user": user, "csrf": csrf_token(request), **context}
    if live.wanted(request):  # only the parts that change, for live.js
        return live.parts(page, values)
    return HTMLResponse(page.render(values), status_code=status, headers=headers)


def _home(server: Server, user: User) -> dict:
    """Each open assignment with its visibility note and, for a student, what an upload now would
    cost (their due date, grace days left, whether a late upload asks to spend them)."""
    rows = server.storage.submissions(user_id=user.id, limit=50)
    now = datetime.now(timezone.utc)
    assignments = []
    for name, policy in server.config.assignments.items():
        if not (policy.is_open(now) or user.staff):
            continue
        shown = user.staff or _shown_for(server, name, user.id)
        terms = None if user.staff else lateness.terms(_course(server), policy, user.id, now)
        assignments.append((name, policy, _visibility_note(server, name, shown), terms))
    return {"assignments": assignments, "rows": [_row_view(server, row, user) for row in rows], "error": ""}


def _row_view(server: Server, row: SubmissionRow, user: User) -> dict:
    result = student_result(server, row, user)
    return {"id": row.id, "assignment": row.assignment, "user": row.user_id, "created": _stamp(row.created),
            "status": row.status if user.staff or row.status != FAILED else "grader problem",
            "score": f"{result.score:g} / {result.max_score:g}" if result and result.questions else "",
            "error": row.error if user.staff else ""}


def _stamp(when: float | None) -> str:
    return "" if when is None else datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


async def home(server: Server, request: Request) -> Response:
    user = page_user(server, request)
    if user is None:
        return RedirectResponse("/login", status_code=303)
    if user.staff:
        return RedirectResponse("/staff", status_code=303)
    return _render(server, request, "home.html.j2", **_home(server, user))


async def submission_page(server: Server, request: Request) -> Response:
    user = _require_page_user(server, request)
    row = owned(server, user, request.path_params["id"])
    status = _status(server, row, user)
    result = student_result(server, row, user)
    body = public_body = ""
    if result is not None:
        body = _feedback_body(feedback_markdown(result, graded_at=_stamp(row.finished)))
    public = public_result(row)
    if public is not None:
        public_body = _feedback_body(feedback_markdown(public, graded_at=""))
    threads = await run_in_threadpool(regrades.threads, _course(server), assignment=row.assignment,
                                      student=row.user_id)
    return _render(server, request, "submission.html.j2", row=row, state=status, feedback=body,
                   public_feedback=public_body, threads=threads,
                   questions=questions_seen(server, row, user) if row.user_id == user.id else [],
                   refresh=row.status in (QUEUED, GRADING), created=_stamp(row.created),
                   files=_files(server, row) if user.staff else [])


def questions_seen(server: Server, row: SubmissionRow, user: User) -> list[str]:
    """The question ids a student may ask a regrade of: those of the results they can see (the
    hidden ones once released, else the public checks'), so that no form names a hidden question early."""
    result = student_result(server, row, user)
    if result is not None and result.questions:
        return [q.qid for q in result.questions]
    public = public_result(row)
    return [q.qid for q in public.questions] if public is not None else []


async def feedback_page(server: Server, request: Request) -> Response:
    """The same feedback.html `checks grade` writes, for this submission."""
    user = _require_page_user(server, request)
    row = owned(server, user, request.path_params["id"])
    result = student_result(server, row, user)
    if result is None:
        raise HTTPException(404, "no feedback yet")
    markdown = feedback_markdown(result, graded_at=_stamp(row.finished))
    return HTMLResponse(feedback_html(markdown, title=f"{result.assignment}: feedback for {result.name}"),
                        headers={"Content-Security-Policy": FEEDBACK_CSP})


def _feedback_body(page: str) -> str:
    """The body of feedback.html (markdown rendered with raw HTML off, as `checks grade` writes it),
    its headings two levels down: the submission page has its own h1, and an h2 above each feedback."""
    document = feedback_html(page, title="feedback")
    body = document.split("<body>\n", 1)[1].rsplit("</body>", 1)[0]
    return _HEADING.sub(lambda tag: f"<{tag[1]}h{min(6, int(tag[2]) + 2)}{tag[3]}", body)


_HEADING = re.compile(r"<(/?)h([1-6])([\s>])")  # markdown-it's own tags: student text in it is escaped


async def style(server: Server, request: Request) -> Response:
    return Response(STYLE, media_type="text/css")


# ---------------------------------------------------------------------------- staff pages

def _require_staff(server: Server, request: Request) -> User:
    user = _require_page_user(server, request)
    if not user.staff:
        raise HTTPException(403, "for course staff only")
    return user


def class_view(server: Server, assignment: str) -> dict:
    """The live class: submissions per minute, the queue, pass rate per question (each student's
    latest graded submission), and the grader's failures."""
    now = time.time()
    recent = server.storage.submissions(assignment=assignment, since=now - 600)
    per_minute = [sum(1 for row in recent if now - 60 * (m + 1) <= row.created < now - 60 * m) for m in range(10)]
    queued, grading, oldest = server.storage.queue_state()
    latest: dict[str, SubmissionResult] = {}
    failures = []
    rows = server.storage.submissions(assignment=assignment)
    for row in rows:
        if row.status == DONE and row.result and row.user_id not in latest:
            latest[row.user_id] = SubmissionResult.from_dict(row.result)
        if row.status == FAILED:
            failures.append(row)
    stats = question_stats(list(latest.values()))
    return {"assignment": assignment, "per_minute": per_minute, "last_minute": per_minute[0],
            "queued": queued, "grading": grading, "oldest_age": 0 if oldest is None else round(now - oldest),
            "stats": stats, "failures": failures[:50], "total": len(rows), "students": len(latest),
            "recent": rows[:20]}


async def staff_page(server: Server, request: Request) -> Response:
    user = _require_staff(server, request)
    names = list(server.config.assignments)
    assignment = request.query_params.get("assignment") or names[0]
    if assignment not in server.config.assignments:
        raise HTTPException(404, "no such assignment")
    view = class_view(server, assignment)
    view["recent"] = [_row_view(server, row, user) for row in view["recent"]]
    view["failures"] = [_row_view(server, row, user) for row in view["failures"]]
    return _render(server, request, "staff.html.j2", names=names, formats=FORMATS, refresh=True, lti=server.config.lti,
                   released=server.storage.hidden_released(assignment),
                   policy=server.config.assignments[assignment], **view)


async def staff_students(server: Server, request: Request) -> Response:
    _require_staff(server, request)
    return _render(server, request, "students.html.j2", students=server.storage.users(), lti=server.config.lti)


def _files(server: Server, row: SubmissionRow) -> list[tuple[str, str]]:
    """A submission's files, as text, for staff (capped; never run, only shown escaped)."""
    shown = []
    try:
        with zipfile.ZipFile(server.config.data_dir / row.path) as archive:
            for info in archive.infolist()[:50]:
                if info.is_dir():
                    continue
                if info.file_size > 256 * 1024:
                    shown.append((info.filename, f"({info.file_size:,} bytes, not shown)"))
                    continue
                shown.append((info.filename, archive.read(info).decode("utf-8", errors="replace")))
    except (OSError, zipfile.BadZipFile) as error:
        shown.append(("(unreadable)", str(error)))
    return shown


async def staff_regrade(server: Server, request: Request) -> Response:
    _require_staff(server, request)
    form = await checked_form(request)
    submission_id, assignment = str(form.get("submission", "")), str(form.get("assignment", ""))
    if submission_id:
        ids = [submission_id]
        back = f"/submissions/{submission_id}"
    elif assignment in server.config.assignments:
        ids = [row.id for row in server.storage.submissions(assignment=assignment)]
        back = f"/staff?assignment={assignment}"
    else:
        raise HTTPException(400, "name a submission or an assignment to grade again")
    await run_in_threadpool(server.storage.requeue, ids)
    if server.queue is not None:
        server.queue.notify()
    return RedirectResponse(back, status_code=303)


async def staff_release(server: Server, request: Request) -> Response:
    user = _require_staff(server, request)
    form = await checked_form(request)
    assignment = str(form.get("assignment", ""))
    if assignment not in server.config.assignments:
        raise HTTPException(400, "no such assignment")
    await run_in_threadpool(server.storage.release_hidden, assignment, user.id)
    return RedirectResponse(f"/staff?assignment={assignment}", status_code=303)


async def staff_gradebook(server: Server, request: Request) -> Response:
    _require_staff(server, request)
    assignment, fmt = request.path_params["assignment"], request.path_params["format"]
    if assignment not in server.config.assignments or fmt not in FORMATS:
        raise HTTPException(404, f"no such gradebook; formats: {', '.join(FORMATS)}")
    data, media = await run_in_threadpool(gradebook_file, server.storage, server.assignments[assignment], fmt,
                                          _course(server))
    return Response(data, media_type=media,
                    headers={"Content-Disposition": f'attachment; filename="{assignment}-{FORMATS[fmt]}"'})


async def api_class(server: Server, request: Request) -> Response:
    """The class view as JSON, for staff's scripts."""
    user = await api_user(server, request)
    if not user.staff:
        raise HTTPException(403, "for course staff only")
    assignment = request.query_params.get("assignment") or next(iter(server.config.assignments))
    if assignment not in server.config.assignments:
        raise HTTPException(404, "no such assignment")
    view = class_view(server, assignment)
    return JSONResponse({**{key: view[key] for key in ("assignment", "per_minute", "queued", "grading",
                                                       "oldest_age", "total", "students")},
                         "pass_rate": {s.qid: s.pass_rate for s in view["stats"]},
                         "failures": [row.id for row in view["failures"]]})


ROUTES: list[tuple[str, Callable, list[str]]] = [
    ("/", home, ["GET"]),
    ("/style.css", style, ["GET"]),
    ("/live.js", lambda server, request: live.script(request), ["GET"]),
    ("/healthz", healthz, ["GET"]),
    ("/login", login_page, ["GET"]),
    ("/login", login_post, ["POST"]),
    ("/logout", logout, ["POST"]),
    ("/assignments/{assignment}/submit", page_submit, ["POST"]),
    ("/submissions/{id}", submission_page, ["GET"]),
    ("/submissions/{id}/feedback.html", feedback_page, ["GET"]),
    ("/staff", staff_page, ["GET"]),
    ("/staff/students", staff_students, ["GET"]),
    ("/staff/regrade", staff_regrade, ["POST"]),
    ("/staff/release", staff_release, ["POST"]),
    ("/staff/gradebook/{assignment}/{format}", staff_gradebook, ["GET"]),
    ("/api/login", api_login, ["POST"]),
    ("/api/assignments", api_assignments, ["GET"]),
    ("/api/assignments/{assignment}/submissions", api_submit, ["POST"]),
    ("/api/assignments/{assignment}/distribution", api_distribution, ["GET"]),
    ("/api/submissions", api_submissions, ["GET"]),
    ("/api/submissions/{id}", api_submission, ["GET"]),
    ("/api/class", api_class, ["GET"]),
]
