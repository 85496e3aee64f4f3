"""Every page of the course server, as the accessibility test (test_accessibility.py) visits it,
and the routes and templates it does not visit, each with its reason. tests/unit/test_a11y_pages.py
holds this list to the app itself: every route of the app (by method and path) and every template
in src/checks/server/templates/ is either visited here or excluded with a reason, and every
exclusion is still a route or template of the app. A page added later fails that test until it is
visited here (or excluded, saying why), so the axe run can never skip it silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[2] / "src" / "checks" / "server" / "templates"


@dataclass(frozen=True)
class Page:
    """One visit: who is signed in ("student", "staff" or None), the route it exercises, the
    template that answers, and the address ({submission}: the student's graded one). With
    `press`, the page is the answer to pressing that button on the address's page."""

    who: str | None
    route: str  # "METHOD /path", as the app's routing table has it
    template: str
    address: str
    press: str = ""


PAGES: dict[str, Page] = {
    "login": Page(None, "GET /login", "login.html.j2", "/login"),
    "student-home": Page("student", "GET /", "home.html.j2", "/"),
    "student-submission": Page("student", "GET /submissions/{id}", "submission.html.j2", "/submissions/{submission}"),
    "feedback": Page("student", "GET /submissions/{id}/feedback.html", "(the feedback document)",
                     "/submissions/{submission}/feedback.html"),
    "class-view": Page("staff", "GET /staff", "staff.html.j2", "/staff"),
    "roster": Page("staff", "GET /staff/students", "students.html.j2", "/staff/students"),
    "student-history": Page("staff", "GET /staff/students/{user}", "student.html.j2", "/staff/students/s001"),
    "regrades": Page("staff", "GET /staff/regrades", "regrades.html.j2", "/staff/regrades"),
    "staff-submission": Page("staff", "GET /submissions/{id}", "submission.html.j2", "/submissions/{submission}"),
    # last: the sync adds the LMS's learners to the roster
    "lms": Page("staff", "POST /staff/lti/roster", "lms.html.j2", "/staff/students", press="Sync the roster from the LMS"),
}

# routes no person reads as a page of their own
EXCLUDED_ROUTES: dict[str, str] = {
    "GET /style.css": "the pages' stylesheet, checked through every page that uses it",
    "GET /live.js": "the pages' script for live updates, run on the class view and a queued submission",
    "GET /healthz": "for a load balancer: plain text",
    "GET /metrics": "for Prometheus: plain text",
    "GET /staff/gradebook/{assignment}/{format}": "a gradebook download (CSV, an LMS's import file), not a page",
    "GET /api/assignments": "JSON for `checks`",
    "GET /api/assignments/{assignment}/distribution": "JSON for `checks`",
    "GET /api/submissions": "JSON for `checks`",
    "GET /api/submissions/{id}": "JSON for `checks`",
    "GET /api/class": "JSON for the class view's live updates",
    "GET /lti/jwks": "the tool's public key set, JSON for the LMS",
    "GET /lti/login": "a redirect to the LMS (the OIDC login), no page",
    "POST /lti/login": "a redirect to the LMS (the OIDC login), no page",
    "POST /lti/launch": "a hand-off that goes on to / or /staff at once (meta refresh 0) after the LMS's form post; "
                        "the pages it leads to are visited",
    "POST /login": "a sign-in: a redirect, or login.html.j2 again with its error (visited as GET /login)",
    "POST /logout": "a redirect to /login",
    "POST /assignments/{assignment}/submit": "a redirect to the submission, or home.html.j2 with the refusal "
                                              "(visited as GET /)",
    "POST /staff/regrade": "a redirect to the class view",
    "POST /staff/release": "a redirect to the class view",
    "POST /staff/extensions": "a redirect, or student.html.j2 with the refusal (visited as GET /staff/students/{user})",
    "POST /staff/regrades/{id}/answer": "a redirect, or regrades.html.j2 with the refusal (visited as GET /staff/regrades)",
    "POST /submissions/{id}/regrade": "a redirect to the submission",
    "POST /staff/lti/scores": "lms.html.j2, visited as POST /staff/lti/roster's answer",
    "POST /api/login": "JSON for `checks`",
    "POST /api/assignments/{assignment}/submissions": "JSON for `checks`",
}

# templates that are no page of their own: parts of the pages above
PARTS: dict[str, str] = {
    "base.html.j2": "the frame every page extends",
    "rows.html.j2": "the submissions table, included by home, staff",
    "live_control.html.j2": "the pause button of live updates, included by staff, submission",
}


def templates() -> set[str]:
    return {path.name for path in TEMPLATES.glob("*.html.j2")}
