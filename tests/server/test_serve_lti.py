"""LTI 1.3 launches into the course server (issue 34): the simulated platform (tests/lti_platform.py)
on 127.0.0.1 starts the OIDC login at a real `checks serve`, the browser follows the redirects and
posts the platform's form back, and the launching user is signed in to the server's pages. Refused:
an id_token signed with another key, a replayed one, an LMS user the roster does not know.
"""

from __future__ import annotations

import html.parser

import pytest

pytest.importorskip("pylti1p3", reason="the `lms` extra (PyLTI1p3) is not installed")
pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from checks.lti.keys import tool_key  # noqa: E402
from lti_platform import CLIENT_ID, running  # noqa: E402
from serving import add_staff, course_folder, free_port, import_roster, start_server  # noqa: E402


class _Form(html.parser.HTMLParser):
    """The hidden inputs of the platform's auto-submitted form, as a browser would post them."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list) -> None:
        found = dict(attrs)
        if tag == "input":
            self.fields[found["name"]] = found["value"]


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    port = free_port()
    launch_url = f"http://127.0.0.1:{port}/lti/launch"
    roster = [("s001", "Ann Lee", "ann@example.edu"), ("s002", "Bob Ray", "bob@example.edu")]
    folder = course_folder(tmp_path_factory.mktemp("lti"), roster=roster, extra='roster = "roster.csv"\n')
    (folder / "roster.csv").write_text("student_id,name,email,lms_id\ns001,Ann Lee,ann@example.edu,u-ann\n"
                                       "tina,Tina TA,tina@example.edu,u-tina\nu-cy,Cy Dee,cy@example.edu,\n")
    tokens = import_roster(folder)
    add_staff(folder, "tina", "ta")  # tina's account is staff's: the server's role decides, not the LMS's claim
    key = tool_key(folder, create=True)
    with running(key.jwks(), launch_url) as platform:
        text = (folder / "course.toml").read_text()
        (folder / "course.toml").write_text(f"{text}\n{platform.lti_table(launch_url, endpoints=False)}")
        server = start_server(folder, port=port, wait_for_graders=False)
        try:
            yield server, platform, tokens
        finally:
            server.kill(15)


def browse(server, platform, user: str):
    """The browser: the platform's login request to the tool, the redirect, the platform's form."""
    http = server.client()
    started = http.get("/lti/login", params={"iss": platform.issuer, "login_hint": user, "client_id": CLIENT_ID,
                                             "target_link_uri": f"{server.url}/lti/launch", "lti_message_hint": "rl-1"})
    assert started.status_code == 302, started.text
    location = started.headers["location"]
    assert location.startswith(f"{platform.url}/auth?")
    form = _Form()
    form.feed(http.get(location).text)  # the platform answers with its auto-submitted form
    return http, form.fields


def test_a_student_launches_from_the_lms_and_is_signed_in(launched):
    server, platform, _ = launched
    http, fields = browse(server, platform, "u-ann")
    done = http.post("/lti/launch", data=fields)
    assert done.status_code == 200 and "Signed in as s001" in done.text, done.text
    home = http.get("/")
    assert home.status_code == 200 and "s001 (student)" in home.text
    replayed = http.post("/lti/launch", data=fields)  # the same id_token again
    assert replayed.status_code == 403


def test_an_lms_user_is_never_the_student_whose_student_id_is_their_lms_id(launched):
    """Found by a fresh attacker: an LMS user whose platform id was "s001" was signed in as s001,
    whose own lms_id is u-ann (numeric ids on both sides make such a match likely). A student with
    an lms_id is matched by it alone; one without is matched by student_id, as before."""
    server, platform, _ = launched
    http, fields = browse(server, platform, "s001")
    refused = http.post("/lti/launch", data=fields)
    assert refused.status_code == 403 and "no account on this server" in refused.text
    assert http.get("/").status_code == 303  # not signed in
    http, fields = browse(server, platform, "u-cy")  # Cy's row has no lms_id: the LMS's id is the student_id
    done = http.post("/lti/launch", data=fields)
    assert done.status_code == 200 and "Signed in as u-cy" in done.text, done.text


def test_staff_launch_to_the_class_view(launched):
    server, platform, _ = launched
    http, fields = browse(server, platform, "u-tina")
    done = http.post("/lti/launch", data=fields)
    assert done.status_code == 200 and 'url=/staff"' in done.text
    assert http.get("/staff").status_code == 200


def test_launches_the_tool_cannot_trust_are_refused(launched):
    server, platform, _ = launched
    platform.sign_with_other_key = True
    try:
        http, fields = browse(server, platform, "u-ann")
        refused = http.post("/lti/launch", data=fields)
        assert refused.status_code == 403 and "Signature verification failed" in refused.text
        assert http.get("/").status_code == 303  # not signed in: to /login
    finally:
        platform.sign_with_other_key = False
    http, fields = browse(server, platform, "u-bob")  # a member of the LMS course, not on the roster
    refused = http.post("/lti/launch", data=fields)
    assert refused.status_code == 403 and "no account on this server" in refused.text
    http = server.client()
    assert http.post("/lti/launch", data={"id_token": "x", "state": "y"}).status_code == 403


def test_an_unknown_issuer_is_a_4xx_that_names_it(launched):
    """Issue 46: PyLTI1p3 raises a bare Exception for an issuer it has no registration for (a 500)."""
    import jwt

    server, platform, _ = launched
    http = server.client()
    started = http.get("/lti/login", params={"iss": "https://lms.elsewhere.example", "login_hint": "u-ann",
                                             "target_link_uri": f"{server.url}/lti/launch", "client_id": CLIENT_ID})
    assert started.status_code == 400 and "'https://lms.elsewhere.example' is not registered" in started.text
    http, fields = browse(server, platform, "u-ann")
    claims = jwt.decode(fields["id_token"], options={"verify_signature": False})
    forged = jwt.encode({**claims, "iss": "https://lms.elsewhere.example"}, platform.private, algorithm="RS256",
                        headers={"kid": "platform-1"})
    refused = http.post("/lti/launch", data={**fields, "id_token": forged})
    assert refused.status_code == 403 and "'https://lms.elsewhere.example' is not registered" in refused.text
    assert "Traceback" not in refused.text


def test_the_tools_public_key_set_is_served_for_the_platform(launched):
    server, platform, _ = launched
    answer = server.client().get("/lti/jwks")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("application/json")
    assert answer.json() == platform.tool_jwks and all("d" not in key for key in answer.json()["keys"])
