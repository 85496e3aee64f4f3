"""LTI 1.3 on the course server: the OIDC third-party initiated login (/lti/login) and the launch
(/lti/launch), which signs the launching user in to the server's pages; the tool's public key set
(/lti/jwks, the URL to register the tool with); and the staff's two LMS
actions, each a form on their pages: post an assignment's final scores from the server's own
gradebook (/staff/lti/scores), and sync the roster from the LMS (/staff/lti/roster).

The checking is checks.lti.launch's (`login`, `launch`: PyLTI1p3, with its state kept in the
course folder's data/lti.sqlite so that any server process may answer either step, and a nonce
that is good once). Who the launch is: the platform's user id (`sub`) matched to the course
roster's `lms_id` (or the `student_id` of a student with no `lms_id`: policy/roster.launched_by);
that roster person must have a server account (`checks roster import`), and the account's own
role decides what they may do, never the roles the LMS claims.
A course without an [lti] table in course.toml answers these routes 404.

The staff's actions call checks.lti.services, as `checks lti post|roster` do: the scores are the
server's gradebook's final scores (server/gradebook.scores: the counted submission, late penalty,
adjustments), and the roster's new learners get accounts as `checks roster import` gives them
(a token each, only its hash kept, the tokens shown once). The endpoints are course.toml's, else
the latest staff launch's (kept by /lti/launch; a student's launch keeps none, and where
course.toml names the LMS course, `context_id`, a launch from another is refused). Each action is
recorded, with who and when, in the course's records/lti.jsonl (checks.policy.records, as
extensions are); a platform that refuses
or cannot be reached before anything is sent is said so on the page (502), and then nothing is
recorded or added. A post names each student whose score the platform did not take, and why
(502), records only those it took, and the next post sends only the rest (services.posted_before).
The roster sync's learners go to the course's data folder (Course.synced_roster): the course's
own roster file is input only.
"""

from __future__ import annotations

import dataclasses
import functools
import html
from datetime import datetime, timezone
from typing import Any, Callable

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from checks.course.assignment import CourseError
from checks.policy import records
from checks.policy.roster import Roster, launched_by, read_roster, with_synced
from checks.server import gradebook, pages, roster
from checks.server.pages import Server

AUDIT = "lti"  # COURSE/records/lti.jsonl: the staff's posts and roster syncs


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


async def lti_jwks(server: Server, request: Request) -> Response:
    """The tool's public key set, for the platform's registration of the tool (its "public JWK
    URL"): the public half only, as `checks lti key` prints it; never the private key."""
    registration = _registration(server)
    jwks = getattr(server, "_lti_jwks", None)
    if jwks is None:
        from checks.lti.keys import tool_key

        jwks = server._lti_jwks = tool_key(registration.folder).jwks()  # type: ignore[attr-defined]
    return JSONResponse(jwks, headers={"Cache-Control": "public, max-age=300"})


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
    from checks.lti.launch import LtiError, keep_endpoints, launch, store_for

    registration = _registration(server)
    params = await _params(request)
    try:
        done = await run_in_threadpool(functools.partial(launch, context_id=registration.config.context_id),
                                       registration.conf, params, dict(request.cookies),
                                       store_for(server.config.folder))
    except LtiError as error:
        raise HTTPException(403, str(error)) from None
    roster = pages.course(server).roster
    person = launched_by(roster, done.user_id) if roster is not None else None
    user = server.storage.user(person.student_id) if person is not None else None
    if user is None:
        raise HTTPException(403, f"the LMS user {done.user_id!r} has no account on this server: the course staff "
                            "add them to the roster (lms_id) and run `checks roster import`")
    # a staff member's launch names the services, kept for the staff's LMS actions; a student's
    # never does (from an LMS course of their own, the class's grades would go there)
    if user.staff:
        await run_in_threadpool(functools.partial(keep_endpoints, by=user.id), store_for(server.config.folder), done)
    await pages.start_session(server, request, user)
    target = "/staff" if user.staff else "/"
    # a page of our own, not a redirect: the session cookie (SameSite=Strict) is sent on the
    # same-site navigation it starts, never on a redirect that follows the platform's cross-site post
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url='
            f'{target}"><title>{html.escape(server.config.title)}</title></head><body><p>Signed in as '
            f'{html.escape(user.id)}. <a href="{target}">Continue</a></p></body></html>')
    return HTMLResponse(page)


# ---------------------------------------------------------------------------- the staff's LMS actions

def _now() -> datetime:
    return datetime.now(timezone.utc)


def _course_roster(server: Server) -> Roster:
    """The course's roster as it is on disk now, with the learners synced from the LMS (a sync in
    another server process may have grown them)."""
    course = pages.course(server)
    return with_synced(read_roster(course.require_roster("the LMS's roster and grade passback").path),
                       course.synced_roster)


def _audit(server: Server, fields: dict[str, Any]) -> None:
    """One line of records/lti.jsonl: what was done, by whom, when."""
    with records.locked(records.records_path(pages.course(server).folder, AUDIT)) as fd:
        records.append(fd, {**fields, "at": _now().isoformat(timespec="seconds")})


def _lms_page(server: Server, request: Request, *, status: int = 200, **context: Any) -> Response:
    view = {"heading": "", "error": "", "summary": "", "left_out": [], "failed": [], "issued": [], "tokens_csv": "",
            "back": "/staff", **context}
    return pages.render(server, request, "lms.html.j2", status=status, **view)


def post_outcome(server: Server, assignment: str, by: str) -> dict[str, Any]:
    """Post `assignment`'s final scores from the server's gradebook, all but those the course's
    records say were posted with the same score already; the post, with what each student was
    sent, recorded (under the records' lock: two posts at once never send one score twice).
    LtiError or CourseError when nothing could be sent."""
    from checks.lti.services import ags_endpoint, post_scores, posted_before, records_file

    registration = _registration(server)
    ags = ags_endpoint(registration)
    course = pages.course(server)
    people = _course_roster(server)
    label = server.assignments[assignment].title or assignment
    with records.locked(records_file(course.folder)) as fd:
        done = post_scores(registration.conf, registration.issuer, ags,
                           gradebook.scores(server.storage, assignment, course), people,
                           assignment=assignment, label=label, now=_now(),
                           before=posted_before(course.folder, assignment))
        if done.lineitem:
            records.append(fd, {"event": "post", "assignment": assignment, "lineitem": done.lineitem,
                                "posted": done.posted, "sent": done.sent, "failed": done.failed,
                                "unchanged": done.unchanged, "left_out": done.left_out, "by": by,
                                "at": _now().isoformat(timespec="seconds")})
    return {"lineitem": done.lineitem, "posted": done.posted, "left_out": done.left_out, "failed": done.failed,
            "unchanged": done.unchanged}


async def staff_post_scores(server: Server, request: Request) -> Response:
    """Staff post an assignment's final scores to the LMS (Assignment and Grade Services): the
    page names each student whose score the LMS did not take, and why (502 then)."""
    from checks.lti.launch import LtiError

    user = pages.require_staff(server, request)
    _registration(server)
    form = await pages.checked_form(request, max_files=0, max_fields=5)
    assignment = str(form.get("assignment", ""))
    if assignment not in server.config.assignments:
        raise HTTPException(400, "no such assignment")
    heading = f"Post the final scores of {assignment} to the LMS"
    try:
        done = await run_in_threadpool(post_outcome, server, assignment, user.id)
    except LtiError as error:
        return _lms_page(server, request, status=502, heading=heading, back=f"/staff?assignment={assignment}",
                         error=f"The LMS did not take the scores: {error}")
    except CourseError as error:
        return _lms_page(server, request, status=400, heading=heading, back=f"/staff?assignment={assignment}",
                         error=str(error))
    if not done["lineitem"]:
        summary = (f"Nothing to post: no graded submission of {assignment} belongs to a student with an LMS user id. "
                   "The LMS was not called.")
    else:
        summary = (f"Posted {len(done['posted'])} score(s) to the LMS's line item {done['lineitem']}; "
                   f"{len(done['unchanged'])} already there (posted before with the same score, not sent again); "
                   f"{len(done['left_out'])} left out.")
    error = (f"The LMS did not take {len(done['failed'])} score(s): those students are not posted. Post again to "
             "send only theirs." if done["failed"] else "")
    return _lms_page(server, request, status=502 if done["failed"] else 200, heading=heading, summary=summary,
                     left_out=done["left_out"], failed=done["failed"], error=error,
                     back=f"/staff?assignment={assignment}")


def sync_roster(server: Server, by: str) -> tuple[Any, list[roster.Issued], int]:
    """The LMS's active learners added to the course's synced roster (in its data folder: the
    course's own roster file is input only), then an account for everyone on either who has none
    (as `checks roster import`); nobody's account or token is changed (audited)."""
    from checks.lti.services import endpoint, import_roster

    registration = _registration(server)
    memberships = endpoint(registration, "memberships_url")
    course = pages.course(server)
    own = read_roster(course.require_roster("the LMS's roster and grade passback").path)
    done = import_roster(registration.conf, registration.issuer, memberships, course.synced_roster, known=own)
    people = with_synced(own, course.synced_roster)
    issued, kept = roster.import_roster(server.storage, roster.accounts(people))
    # this process reads the grown roster at once (launches, gradebook)
    server.config = dataclasses.replace(server.config, course=dataclasses.replace(course, roster=people))
    _audit(server, {"event": "roster", "added": done.added, "kept": done.kept, "skipped": done.skipped,
                    "refused": done.refused, "accounts": [one.user.id for one in issued], "by": by})
    return done, issued, kept


async def staff_sync_roster(server: Server, request: Request) -> Response:
    """Staff sync the roster from the LMS (Names and Role Provisioning): the new learners' tokens
    are shown on this page once, never stored."""
    from checks.lti.launch import LtiError

    user = pages.require_staff(server, request)
    _registration(server)
    await pages.checked_form(request, max_files=0, max_fields=5)
    heading = "Sync the roster from the LMS"
    try:
        done, issued, kept = await run_in_threadpool(sync_roster, server, user.id)
    except LtiError as error:
        return _lms_page(server, request, status=502, heading=heading, back="/staff/students",
                         error=f"The LMS's roster could not be read: {error}. Nothing was changed.")
    except CourseError as error:
        return _lms_page(server, request, status=400, heading=heading, back="/staff/students", error=str(error))
    summary = (f"The LMS lists {len(done.added)} new learner(s), added to the roster; {done.kept} already there; "
               f"{len(done.skipped)} skipped (not active learners). {len(issued)} new account(s), {kept} account(s) "
               "already there kept theirs.")
    if done.refused:
        summary += (f" {len(done.refused)} not added: the LMS gave them an id a roster cannot hold ("
                    + "; ".join(done.refused) + ").")
    return _lms_page(server, request, heading=heading, summary=summary, issued=issued,
                     tokens_csv=roster.tokens_csv(issued), back="/staff/students")


ROUTES: list[tuple[str, Callable, list[str]]] = [
    ("/lti/jwks", lti_jwks, ["GET"]),
    ("/lti/login", lti_login, ["GET", "POST"]),
    ("/lti/launch", lti_launch, ["POST"]),
    ("/staff/lti/scores", staff_post_scores, ["POST"]),
    ("/staff/lti/roster", staff_sync_roster, ["POST"]),
]
