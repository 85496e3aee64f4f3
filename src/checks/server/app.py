"""The course server's routes: a JSON API for `checks login/submit/fetch` (Bearer tokens) and HTML
pages for students and staff (a signed session cookie, a CSRF token on every form).

Every student request is authorised for that student: a submission another student owns is
answered 404, as one that does not exist. Nothing here runs student code: an upload is checked,
stored, queued (server/queue.py grades it) and acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import logging
import math
import re
import time
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Awaitable, Callable

from sqlalchemy.exc import SQLAlchemyError
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
from checks.policy import regrades
from checks.server import auth, lateness, live, lti_routes, policy_routes
from checks.server.config import ServerConfig
from checks.server.gradebook import FORMATS, gradebook_file
from checks.server.pages import (Server, Waiters, api_user, checked_form, course, hidden_shown, hidden_shown_for,
                                 owned, page_templates, page_user, policy_assignment, public_result,
                                 questions_seen, render, require_page_user, require_staff, row_view, settled,
                                 stamp, start_session, status_view, student_result, visibility_note, zone)
from checks.server.queue import GradingQueue
from checks.server.storage import DONE, FAILED, GRADING, QUEUED, Storage, SubmissionRow, User, new_id
from checks.server.uploads import UploadRefused, as_zip, store
from checks.server.web import BodyLimit, SecurityHeaders, client_address, session_secret
from checks.suites.scoring import SubmissionResult

log = logging.getLogger("checks.server")
STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG}  # the disk refused a write
TEMPLATES = Path(__file__).parent / "templates"
STYLE = (TEMPLATES / "style.css").read_text()
FEEDBACK_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"
SESSION_SECONDS = 12 * 3600


def create_app(config: ServerConfig, storage: Storage, queue: GradingQueue | None) -> Starlette:
    """The ASGI app of one course; `queue` is None where another process grades."""
    assignments = {name: load_assignment(config.course_root, name) for name in config.assignments}
    zone = config.course.zone if config.course is not None else timezone.utc
    templates = page_templates(TEMPLATES, zone)  # dates shown in the course's time zone
    server = Server(config, storage, queue, assignments, auth.Authenticator(storage), templates, Waiters())
    if queue is not None:
        queue.finished.append(server.waiters.finished)
        queue.hidden_shown = lambda row: hidden_shown(server, row)  # then its public checks add nothing to see
    routes = [Route(path, _bind(server, handler), methods=methods)
              for path, handler, methods in policy_routes.ROUTES + lti_routes.ROUTES + ROUTES]
    middleware = [
        Middleware(SecurityHeaders, hsts=config.secure_cookies),
        Middleware(BodyLimit, limit=config.upload_bytes, idle=config.idle_seconds),
        Middleware(SessionMiddleware, secret_key=session_secret(config.data_dir), session_cookie="checks_session",
                   max_age=SESSION_SECONDS, same_site="strict", https_only=config.secure_cookies),
    ]
    app = Starlette(routes=routes, middleware=middleware, exception_handlers={
        HTTPException: _http_error, SQLAlchemyError: _unavailable, OSError: _unavailable})
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


UNAVAILABLE_SECONDS = 30  # Retry-After of a 503: the disk or the database refused a request


async def _unavailable(request: Request, error: Exception) -> Response:
    """The disk is full or the database failed: 503 with Retry-After, never a 500. Nothing was
    acknowledged (a submission is acknowledged once its row is committed), so nothing is lost:
    the client sends it again."""
    if isinstance(error, OSError) and error.errno not in STORAGE_ERRNOS:
        log.exception("%s %s failed", request.method, request.url.path)
        return PlainTextResponse("500: the server failed on this request; the staff can read why in its log\n",
                                 status_code=500)
    log.error("%s %s: storage unavailable: %s", request.method, request.url.path, error)
    why = "the server's disk is full" if isinstance(error, OSError) else "the course's database is not answering"
    return await _http_error(request, HTTPException(
        503, f"{why}: nothing of this request was kept, and it cost no try; send it again in "
             f"{UNAVAILABLE_SECONDS} s", headers={"Retry-After": str(UNAVAILABLE_SECONDS)}))


# ---------------------------------------------------------------------------- logins

async def _login(server: Server, token: str, address: str, expected: str | None = None) -> tuple[User | None, float]:
    """(the user, 0) when the token is right, always: no one's failures (against a public account
    id, or from an address a whole class shares behind one NAT) ever refuse a right token. A wrong
    one is counted against its address: (None, seconds before the address should try again) once
    it is past its free failures, else (None, 0). Guessing needs no lockout to be hopeless: a
    token's secret is 192 random bits (auth.new_token). `expected`: the user the token must be
    (the web form's id)."""
    user = await run_in_threadpool(server.auth.user_for, token)
    if user is not None and (expected is None or user.id == expected):
        return user, 0.0
    key = auth.address_key(address)
    await run_in_threadpool(server.storage.count_login_failure, key)
    config = server.config
    return None, await run_in_threadpool(auth.backoff_left, server.storage, [key], config.login_free_failures,
                                         config.login_backoff)


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
    user, wait = await _login(server, token, client_address(request.scope))
    if wait:
        raise HTTPException(429, f"that token is not valid here, and this address has failed too often: try again "
                            f"in {math.ceil(wait)} s, at {_when(wait)}", headers=_retry_after(wait))
    if user is None:
        raise HTTPException(401, "that token is not valid here")
    return JSONResponse({"user": user.id, "name": user.name, "role": user.role})


async def login_page(server: Server, request: Request) -> Response:
    return render(server, request, "login.html.j2", error="", status=200)


async def login_post(server: Server, request: Request) -> Response:
    form = await checked_form(request)
    account, token = str(form.get("user", "")).strip(), str(form.get("token", "")).strip()
    user, wait = await _login(server, token, client_address(request.scope), expected=account)
    if wait:
        return render(server, request, "login.html.j2", status=429, headers=_retry_after(wait),
                      error=f"That id and token do not match, and too many sign-ins from this address failed: try "
                            f"again in {math.ceil(wait)} s (at {_when(wait)}).")
    if user is None:
        return render(server, request, "login.html.j2", status=401, error="That id and token do not match.")
    await start_session(server, request, user)
    return RedirectResponse("/staff" if user.staff else "/", status_code=303)


async def logout(server: Server, request: Request) -> Response:
    """Ends the user's sessions on the server, so that a copy of this cookie is refused from now on."""
    await checked_form(request)
    user = page_user(server, request)
    if user is not None:
        await run_in_threadpool(server.storage.end_sessions, user.id)
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
            await run_in_threadpool(lateness.admit, course(server), policy, user.id, datetime.now(timezone.utc),
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
        try:
            if not user.staff:  # decided again at the receipt time, which the row keeps
                found = lateness.admit(course(server), policy, user.id, now, grace_answer)
            row = server.storage.add_submission(user.id, assignment.name, stored.path, stored.sha256, stored.size,
                                                stored.files, submission_id, created=now.timestamp())
        except BaseException:  # never acknowledged: its stored file is no one's
            (config.data_dir / stored.path).unlink(missing_ok=True)
            raise
        if found is not None:
            lateness.settle(course(server), policy, user.id, found, grace_answer, now)
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
    except (OSError, SQLAlchemyError):  # the disk or the database failed it (503): nothing kept, no try spent
        with contextlib.suppress(OSError, SQLAlchemyError):  # the database may be what is down
            await run_in_threadpool(server.storage.give_back_token, f"{user.id}:{assignment.name}", config.rate_count)
        raise
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
    assignment = policy_assignment(server, request.path_params["assignment"], user)
    form, parts = await _parts(request, server)
    row = await _submit(server, user, assignment, parts, _grace_answer(form))
    return JSONResponse(status_view(server, row, user), status_code=202)


def _grace_answer(form: Any) -> str | None:
    """The form's answer to "spend grace days on this late upload?" (None: not given)."""
    value = form.get("grace")
    return value.strip() if isinstance(value, str) and value.strip() else None


async def page_submit(server: Server, request: Request) -> Response:
    user = require_page_user(server, request)
    assignment = policy_assignment(server, request.path_params["assignment"], user)
    form, parts = await _parts(request, server)
    if not auth.csrf_ok(request.session.get("csrf"), form.get("csrf")):
        raise HTTPException(403, "the form is out of date or not from this site (CSRF check); reload the page")
    try:
        row = await _submit(server, user, assignment, parts, _grace_answer(form))
    except HTTPException as refused:
        if refused.status_code not in (400, 403, 409, 413, 422, 429):
            raise
        context = {**_home(server, user), "error": f"{assignment.name}: {refused.detail}"}
        return render(server, request, "home.html.j2", status=refused.status_code, headers=refused.headers or {},
                       **context)
    return RedirectResponse(f"/submissions/{row.id}", status_code=303)


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
            if left <= 0 or settled(row, user.staff or hidden_shown(server, row)):
                return JSONResponse(status_view(server, row, user))
            try:
                await asyncio.wait_for(future, timeout=min(left, 1.0))
            except asyncio.TimeoutError:
                pass
        finally:
            server.waiters.forget(submission_id, future)


async def api_submissions(server: Server, request: Request) -> Response:
    user = await api_user(server, request)
    rows = server.storage.submissions(user_id=user.id, assignment=request.query_params.get("assignment"), limit=200)
    return JSONResponse([status_view(server, row, user) for row in rows])


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
            entry["terms"] = _terms_view(lateness.terms(course(server), policy, user.id, now))
        listed.append(entry)
    return JSONResponse(listed)


def _terms_view(terms: lateness.Terms) -> dict:
    """What an upload now would cost, as the page and `checks submit` say it before a late upload."""
    return {"due": terms.due.isoformat() if terms.due else None, "days_late": terms.days_late,
            "closed": terms.closed, "grace_left": terms.term_left, "grace_mode": terms.mode, "asks": terms.asks,
            "would_spend": terms.spends_more}


async def api_distribution(server: Server, request: Request) -> Response:
    """The student release of an assignment as a zip (`checks fetch`), once it is released."""
    user = await api_user(server, request)
    assignment = policy_assignment(server, request.path_params["assignment"], user)
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


async def metrics(server: Server, request: Request) -> Response:
    """Prometheus's scrape (server/metrics.py): for course staff, with a staff Bearer token."""
    user = await api_user(server, request)
    if not user.staff:
        raise HTTPException(403, "for course staff only")
    from checks.server.metrics import CONTENT_TYPE, exposition, registry_for  # prometheus-client: the serve extra

    body = await run_in_threadpool(exposition, registry_for(server.storage))
    return Response(body, media_type=CONTENT_TYPE)


async def healthz(server: Server, request: Request) -> Response:
    queued, grading, _ = server.storage.queue_state()
    ready = server.queue is None or server.queue.ready.is_set()
    return JSONResponse({"ok": True, "graders_ready": ready, "queued": queued, "grading": grading,
                         "version": __version__})


# ---------------------------------------------------------------------------- student pages

def _home(server: Server, user: User) -> dict:
    """Each open assignment with its visibility note and, for a student, what an upload now would
    cost (their due date, grace days left, whether a late upload asks to spend them)."""
    rows = server.storage.submissions(user_id=user.id, limit=50)
    now = datetime.now(timezone.utc)
    assignments = []
    for name, policy in server.config.assignments.items():
        if not (policy.is_open(now) or user.staff):
            continue
        shown = user.staff or hidden_shown_for(server, name, user.id)
        terms = None if user.staff else lateness.terms(course(server), policy, user.id, now)
        assignments.append((name, policy, visibility_note(server, name, shown), terms))
    return {"assignments": assignments, "rows": [row_view(server, row, user) for row in rows], "error": ""}


async def home(server: Server, request: Request) -> Response:
    user = page_user(server, request)
    if user is None:
        return RedirectResponse("/login", status_code=303)
    if user.staff:
        return RedirectResponse("/staff", status_code=303)
    return render(server, request, "home.html.j2", **_home(server, user))


async def submission_page(server: Server, request: Request) -> Response:
    user = require_page_user(server, request)
    row = owned(server, user, request.path_params["id"])
    status = status_view(server, row, user)
    result = student_result(server, row, user)
    body = public_body = ""
    if result is not None:
        body = _feedback_body(feedback_markdown(result, graded_at=stamp(row.finished, zone(server))))
    public = public_result(row)
    if public is not None:
        public_body = _feedback_body(feedback_markdown(public, graded_at=""))
    public_max = public.max_score if public is not None else 0
    threads = await run_in_threadpool(regrades.threads, course(server), assignment=row.assignment,
                                      student=row.user_id)
    return render(server, request, "submission.html.j2", row=row, state=status, feedback=body,
                  public_feedback=public_body, public_max=public_max, threads=threads,
                  questions=questions_seen(server, row, user) if row.user_id == user.id else [],
                  refresh=row.status in (QUEUED, GRADING), created=stamp(row.created, zone(server)),
                   files=_files(server, row) if user.staff else [])


async def feedback_page(server: Server, request: Request) -> Response:
    """The same feedback.html `checks grade` writes, for this submission."""
    user = require_page_user(server, request)
    row = owned(server, user, request.path_params["id"])
    result = student_result(server, row, user)
    if result is None:
        raise HTTPException(404, "no feedback yet")
    markdown = feedback_markdown(result, graded_at=stamp(row.finished, zone(server)))
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
    user = require_staff(server, request)
    names = list(server.config.assignments)
    assignment = request.query_params.get("assignment") or names[0]
    if assignment not in server.config.assignments:
        raise HTTPException(404, "no such assignment")
    view = class_view(server, assignment)
    view["recent"] = [row_view(server, row, user) for row in view["recent"]]
    view["failures"] = [row_view(server, row, user) for row in view["failures"]]
    return render(server, request, "staff.html.j2", names=names, formats=FORMATS, refresh=True, lti=server.config.lti,
                   released=server.storage.hidden_released(assignment),
                   policy=server.config.assignments[assignment], **view)


async def staff_students(server: Server, request: Request) -> Response:
    require_staff(server, request)
    return render(server, request, "students.html.j2", students=server.storage.users(), lti=server.config.lti)


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
    require_staff(server, request)
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
    user = require_staff(server, request)
    form = await checked_form(request)
    assignment = str(form.get("assignment", ""))
    if assignment not in server.config.assignments:
        raise HTTPException(400, "no such assignment")
    if form.get("confirm") != "yes":  # no script on the pages: the form's checkbox is the confirmation
        raise HTTPException(400, "releasing shows every student the hidden results before the due date: tick the "
                                 "box that confirms it, then release")
    await run_in_threadpool(server.storage.release_hidden, assignment, user.id)
    return RedirectResponse(f"/staff?assignment={assignment}", status_code=303)


async def staff_gradebook(server: Server, request: Request) -> Response:
    require_staff(server, request)
    assignment, fmt = request.path_params["assignment"], request.path_params["format"]
    if assignment not in server.config.assignments or fmt not in FORMATS:
        raise HTTPException(404, f"no such gradebook; formats: {', '.join(FORMATS)}")
    data, media = await run_in_threadpool(gradebook_file, server.storage, server.assignments[assignment], fmt,
                                          course(server))
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
    ("/metrics", metrics, ["GET"]),
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
