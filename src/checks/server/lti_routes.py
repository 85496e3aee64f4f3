"""LTI 1.3 on the course server: the OIDC third-party initiated login (/lti/login) and the launch
(/lti/launch), which signs the launching user in to the server's pages.

The checking is checks.lti.launch's (`login`, `launch`: PyLTI1p3, with its state kept in the
course folder's data/lti.sqlite so that any server process may answer either step, and a nonce
that is good once). Who the launch is: the platform's user id (`sub`) matched to the course
roster's `lms_id` (or `student_id`); that roster person must have a server account (`checks roster
import`), and the account's own role decides what they may do, never the roles the LMS claims.
A course without an [lti] table in course.toml answers these routes 404.
"""

from __future__ import annotations

import html
from typing import Any, Callable

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from checks.course.assignment import CourseError
from checks.server import app, auth
from checks.server.app import Server


def _registration(server: Server) -> Any:
    """The course's LMS registration, loaded once (404 when the course has none)."""
    if not server.config.lti:
        raise HTTPException(404, "this course has no LTI registration ([lti] in course.toml, docs/policy.md)")
    cached = getattr(server, "_lti", None)
    if cached is None:
        from checks.lti.config import load_registration  # the `lms` extra, only where a course has [lti]

        try:
            cached = load_registration(server.config.folder)
        except CourseError as error:
            raise HTTPException(500, f"the course's LTI registration cannot be used: {error}") from None
        server._lti = cached  # type: ignore[attr-defined]
    return cached


async def _params(request: Request) -> dict[str, str]:
    """The step's parameters: a platform may send the login as a GET or a POST."""
    params = {key: value for key, value in request.query_params.items()}
    if request.method == "POST":
        form = await request.form(max_files=0, max_fields=20)
        params.update({key: value for key, value in form.items() if isinstance(value, str)})
    return params


async def lti_login(server: Server, request: Request) -> Response:
    """The platform's third-party initiated login: a state and nonce kept, the browser sent to the
    platform's authorisation endpoint with the state cookie set."""
    from checks.lti.launch import LtiError, login, store_for

    registration = _registration(server)
    params = await _params(request)
    try:
        redirect = await run_in_threadpool(login, registration.conf, params, store_for(server.config.folder),
                                           launch_url=registration.config.launch_url)
    except LtiError as error:
        raise HTTPException(400, str(error)) from None
    response = RedirectResponse(redirect.url, status_code=302)
    for name, value in redirect.cookies.items():
        # the launch comes back as a cross-site POST: the state cookie must travel with it
        response.set_cookie(name, value, max_age=600, httponly=True, secure=server.config.secure_cookies,
                            samesite="none" if server.config.secure_cookies else "lax", path="/lti")
    return response


async def lti_launch(server: Server, request: Request) -> Response:
    """The platform's id_token, checked; its user signed in (a fresh session) and sent on."""
    from checks.lti.launch import LtiError, launch, store_for

    registration = _registration(server)
    params = await _params(request)
    try:
        done = await run_in_threadpool(launch, registration.conf, params, dict(request.cookies),
                                       store_for(server.config.folder))
    except LtiError as error:
        raise HTTPException(403, str(error)) from None
    roster = app._course(server).roster
    person = roster.match("", done.user_id) if roster is not None else None
    user = server.storage.user(person.student_id) if person is not None else None
    if user is None:
        raise HTTPException(403, f"the LMS user {done.user_id!r} has no account on this server: the course staff "
                            "add them to the roster (lms_id) and run `checks roster import`")
    request.session.clear()
    request.session.update({"uid": user.id, "tok": user.token_hash[-16:], "csrf": auth.new_csrf_token()})
    target = "/staff" if user.staff else "/"
    # a page of our own, not a redirect: the session cookie (SameSite=Strict) is sent on the
    # same-site navigation it starts, never on a redirect that follows the platform's cross-site post
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url='
            f'{target}"><title>{html.escape(server.config.title)}</title></head><body><p>Signed in as '
            f'{html.escape(user.id)}. <a href="{target}">Continue</a></p></body></html>')
    return HTMLResponse(page)


ROUTES: list[tuple[str, Callable, list[str]]] = [
    ("/lti/login", lti_login, ["GET", "POST"]),
    ("/lti/launch", lti_launch, ["POST"]),
]
