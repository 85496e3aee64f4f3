"""The course server's defences, each attacked over real HTTP on a real server: authorisation per
student (no IDOR), CSRF on every form, login backoff per address that locks no one out, bounded
uploads, zips checked as `checks grade` checks them, security headers, cookie flags, rate limits.

Each test comes from its own address (X-Forwarded-For, trusted from 127.0.0.1 with --proxy-headers)
so that one test's failed logins never slow another's.
"""

from __future__ import annotations

import io
import itertools
import zipfile
from contextlib import closing

import pytest

from serving import REFERENCE, add_staff, course_folder, folder_zip, import_roster, start_server, submit, wait_graded

pytest.importorskip("starlette")

LIMITS = """
[limits]
upload_mib = 1
unpacked_mib = 2
files = 5

[rate]
submissions = 3
window_seconds = 3600

[login]
free_failures = 3
backoff_seconds = 2
"""
_addresses = (f"10.0.0.{n}" for n in itertools.count(1))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    roster = [(f"s00{n}", f"Student {n}", f"s{n}@example.edu") for n in range(1, 8)]
    roster.append(("s666", "<script>alert(1)</script>", "x@example.edu"))
    folder = course_folder(tmp_path_factory.mktemp("security"), extra=LIMITS, roster=roster)
    tokens = import_roster(folder)
    staff = add_staff(folder)
    server = start_server(folder)
    yield server, tokens, staff
    server.kill(15)


def browser(server, user: str, token: str):
    """A signed-in browser session: (client, its CSRF token)."""
    http = server.client(address=next(_addresses))
    csrf = _csrf(http.get("/login").text)
    reply = http.post("/login", data={"user": user, "token": token, "csrf": csrf})
    assert reply.status_code == 303, reply.text
    return http, _csrf(http.get("/").text if user.startswith("s") else http.get("/staff").text)


def _csrf(page: str) -> str:
    return page.split('name="csrf" value="')[1].split('"')[0]


# ---------------------------------------------------------------- authorisation (IDOR)

def test_a_student_cannot_read_another_students_submission_or_feedback(served):
    server, tokens, _ = served
    with server.client(tokens["s001"], next(_addresses)) as ada:
        mine = wait_graded(ada, submit(ada, folder_zip(REFERENCE)).json()["id"])
    other, _ = browser(server, "s002", tokens["s002"])
    with closing(other), server.client(tokens["s002"], next(_addresses)) as ben:
        assert ben.get(f"/api/submissions/{mine['id']}").status_code == 404
        assert ben.get("/api/submissions/doesnotexist").status_code == 404  # the same answer: nothing to learn
        assert mine["id"] not in {row["id"] for row in ben.get("/api/submissions").json()}
        assert other.get(f"/submissions/{mine['id']}").status_code == 404
        assert other.get(f"/submissions/{mine['id']}/feedback.html").status_code == 404
    owner, _ = browser(server, "s001", tokens["s001"])
    with closing(owner):
        assert owner.get(f"/submissions/{mine['id']}").status_code == 200
        assert "Score: 100 / 100" in owner.get(f"/submissions/{mine['id']}/feedback.html").text


def test_students_cannot_reach_staff_pages_or_staff_data(served):
    server, tokens, _ = served
    http, csrf = browser(server, "s003", tokens["s003"])
    with closing(http):
        for path in ("/staff", "/staff/students", "/staff/students/s001", "/staff/gradebook/01_tensors/csv"):
            assert http.get(path).status_code == 403, path
        assert http.post("/staff/regrade", data={"csrf": csrf, "assignment": "01_tensors"}).status_code == 403
    with server.client(tokens["s003"], next(_addresses)) as api:
        assert api.get("/api/class").status_code == 403


def test_requests_without_credentials_are_refused(served):
    server, _, _ = served
    with server.client(address=next(_addresses)) as http:
        assert http.get("/api/submissions").status_code == 401
        assert submit(http, folder_zip(REFERENCE)).status_code == 401
        assert http.get("/staff").status_code == 401
        assert http.get("/", follow_redirects=False).headers["location"] == "/login"
    with server.client("0123456789abcdef.forged", next(_addresses)) as http:
        assert http.get("/api/submissions").status_code == 401


# ---------------------------------------------------------------- CSRF

def test_every_form_needs_the_sessions_csrf_token(served):
    server, tokens, staff = served
    with server.client(address=next(_addresses)) as http:  # a login form posted from elsewhere
        assert http.post("/login", data={"user": "s004", "token": tokens["s004"]}).status_code == 403
    student, csrf = browser(server, "s004", tokens["s004"])
    with closing(student):
        files = {"files": ("strides.py", b"x = 1\n")}
        assert student.post("/assignments/01_tensors/submit", files=files, data={"csrf": "forged"}).status_code == 403
        assert student.post("/assignments/01_tensors/submit", files=files).status_code == 403
        assert student.post("/logout", data={}).status_code == 403
        assert student.post("/logout", data={"csrf": csrf}).status_code == 303
    ta, csrf = browser(server, "tina", staff)
    with closing(ta):
        assert ta.post("/staff/regrade", data={"assignment": "01_tensors", "csrf": "no"}).status_code == 403
        assert ta.post("/staff/release", data={"assignment": "01_tensors"}).status_code == 403
        assert ta.post("/staff/regrade", data={"assignment": "01_tensors", "csrf": csrf}).status_code == 303


# ---------------------------------------------------------------- login backoff

def test_no_one_can_lock_another_student_out(served):
    """Failed sign-ins against a student's public id, from many addresses, never refuse their right
    token: a lockout per account would let any classmate shut them out before a deadline."""
    server, tokens, _ = served
    wrong = tokens["s005"][:-3] + "xyz"
    for _ in range(8):
        with server.client(address=next(_addresses)) as http:  # a new address each time: only the account is shared
            assert http.post("/api/login", json={"token": wrong}).status_code == 401
            csrf = _csrf(http.get("/login").text)
            assert http.post("/login", data={"user": "s005", "token": "x.y", "csrf": csrf}).status_code == 401
    with server.client(address=next(_addresses)) as http:
        assert http.post("/api/login", json={"token": tokens["s005"]}).status_code == 200
        csrf = _csrf(http.get("/login").text)
        assert http.post("/login", data={"user": "s005", "token": tokens["s005"], "csrf": csrf}).status_code == 303


def test_failed_logins_back_off_per_address_but_never_refuse_a_right_token(served):
    """Wrong tokens from one address are slowed (429, Retry-After); a classmate behind the same NAT
    signs in with their right token at once."""
    server, tokens, _ = served
    address = next(_addresses)
    with server.client(address=address) as http:
        for n in range(3):  # three different made-up accounts from one address: free
            assert http.post("/api/login", json={"token": f"{n:016x}.guess"}).status_code == 401
        slowed = http.post("/api/login", json={"token": "0000000000000009.guess"})
        assert slowed.status_code == 429 and int(slowed.headers["retry-after"]) >= 1
        assert "try again in" in slowed.json()["error"]
        csrf = _csrf(http.get("/login").text)
        page = http.post("/login", data={"user": "s006", "token": "x.y", "csrf": csrf})
        assert page.status_code == 429 and "try again in" in page.text
        assert http.post("/api/login", json={"token": tokens["s006"]}).status_code == 200  # behind the same NAT
        page = http.post("/login", data={"user": "s006", "token": tokens["s006"], "csrf": csrf})
        assert page.status_code == 303


# ---------------------------------------------------------------- uploads

def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize("upload, status, words", [
    (b"\0" * (1024 * 1024 + 10), 413, "MiB"),  # the body
    (_zip({"strides.py": b"0" * (3 * 1024 * 1024)}), 413, "unpacks to"),  # unpacked size, before inflating
    (_zip({f"m{n}.py": b"x = 1\n" for n in range(9)}), 413, "entries"),  # file count
    (_zip({"../strides.py": b"x = 1\n"}), 400, "could not read"),  # escapes its folder, as `checks grade` refuses
    (b"PK\x03\x04 not a zip at all", 400, "not a readable zip"),
], ids=["body", "unpacked", "files", "escaping", "corrupt"])
def test_uploads_are_bounded_and_checked_before_grading(served, upload, status, words):
    server, tokens, _ = served
    with server.client(tokens["s007"], next(_addresses)) as http:
        before = len(http.get("/api/submissions").json())
        reply = submit(http, upload)
        assert reply.status_code == status, reply.text
        assert words in reply.text
        assert len(http.get("/api/submissions").json()) == before  # nothing stored, nothing queued
    stored = list((server.folder / "data" / "uploads").rglob("*"))
    assert not [p for p in stored if p.name.startswith(".upload-")]


def test_too_many_files_in_a_form_are_refused(served):
    server, tokens, _ = served
    with server.client(tokens["s007"], next(_addresses)) as http:
        files = [("files", (f"m{n}.py", b"x = 1\n")) for n in range(7)]
        assert http.post("/api/assignments/01_tensors/submissions", files=files).status_code == 413


# ---------------------------------------------------------------- headers and cookies

def test_every_response_carries_the_security_headers(served):
    server, tokens, _ = served
    http, _ = browser(server, "s001", tokens["s001"])
    with closing(http):
        for path in ("/", "/login", "/healthz", "/api/submissions", "/style.css", "/nope"):
            headers = http.get(path).headers
            assert "frame-ancestors 'none'" in headers["content-security-policy"], path
            policy = headers["content-security-policy"]  # no script but the server's own live.js: none inline
            assert "script-src 'self';" in policy and "unsafe-inline" not in policy and "unsafe-eval" not in policy
            assert headers["x-content-type-options"] == "nosniff"
            assert headers["x-frame-options"] == "DENY"
            assert headers["referrer-policy"] == "no-referrer"


def test_the_session_cookie_is_httponly_and_samesite(served):
    server, tokens, _ = served
    with server.client(address=next(_addresses)) as http:
        http.get("/login")
        csrf = _csrf(http.get("/login").text)
        reply = http.post("/login", data={"user": "s001", "token": tokens["s001"], "csrf": csrf})
    cookie = reply.headers["set-cookie"].lower()
    assert "checks_session=" in cookie and "httponly" in cookie and "samesite=strict" in cookie
    assert "secure" not in cookie  # plain HTTP on 127.0.0.1; secure_cookies = true behind TLS (next test)


def test_behind_tls_the_cookie_is_secure(tmp_path):
    folder = course_folder(tmp_path, extra="secure_cookies = true\n")
    tokens = import_roster(folder)
    server = start_server(folder, wait_for_graders=False)
    try:
        with server.client(address="10.1.0.1") as http:
            reply = http.get("/login")  # the session (its CSRF token) starts here
            assert "; secure" in reply.headers["set-cookie"].lower()
            assert "max-age=31536000" in reply.headers["strict-transport-security"]
            # over plain HTTP the browser sends no secure cookie back: the form's CSRF check fails
            assert http.post("/login", data={"user": "s001", "token": tokens["s001"],
                                             "csrf": _csrf(reply.text)}).status_code == 403
    finally:
        server.kill(15)


def test_student_text_is_inert_on_staff_pages(served):
    server, _, staff = served
    http, _ = browser(server, "tina", staff)
    with closing(http):
        page = http.get("/staff/students").text
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


# ---------------------------------------------------------------- rate limits

def test_submissions_are_rate_limited_with_retry_after(served):
    server, tokens, _ = served
    with server.client(tokens["s003"], next(_addresses)) as http:
        for _ in range(3):
            assert submit(http, folder_zip(REFERENCE)).status_code == 202
        refused = submit(http, folder_zip(REFERENCE))
    assert refused.status_code == 429
    retry = int(refused.headers["retry-after"])
    assert 1000 < retry <= 1200  # 3 per hour: the next token in 20 minutes
    assert "the next is allowed in" in refused.json()["error"]
    page, csrf = browser(server, "s003", tokens["s003"])
    with closing(page):
        reply = page.post("/assignments/01_tensors/submit", data={"csrf": csrf},
                          files={"files": ("01_tensors.zip", folder_zip(REFERENCE))})
        assert reply.status_code == 429 and "the next is allowed in" in reply.text
