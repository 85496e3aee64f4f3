"""Signing out ends the session on the server (issue 44): a session cookie captured before a
sign-out, a new token or a new role is refused afterwards, on pages and on CSRF-checked forms,
on SQLite and on PostgreSQL (the session generation is the database's, shared by every process).
"""

from __future__ import annotations

import pytest

from serving import add_staff, course_folder, csrf_of, import_roster, signed_in, start_server

pytest.importorskip("starlette")


def _captured(http) -> dict[str, str]:
    """The browser's cookie, as an attacker who copied it sends it from elsewhere."""
    return {"Cookie": f"checks_session={http.cookies['checks_session']}"}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.long)])
def served(request, tmp_path):
    extra = ""
    if request.param == "postgresql":
        extra = f'storage = "{request.getfixturevalue("postgres_cluster").create("sessions")}"\n'
    folder = course_folder(tmp_path, extra=extra)
    tokens = import_roster(folder)
    staff = add_staff(folder, "tina", "ta")
    server = start_server(folder, wait_for_graders=False)
    yield server, tokens, staff
    server.kill(15)


def test_a_cookie_captured_before_sign_out_or_a_new_token_or_role_is_refused(served):
    server, tokens, staff = served
    # a student signs out: the copy of their cookie is refused on pages and on a CSRF-checked form
    student, csrf = signed_in(server, "s001", tokens["s001"])
    stolen = _captured(student)
    with server.client() as thief:
        assert thief.get("/", headers=stolen).status_code == 200  # the copy works while the session lives
        assert student.post("/logout", data={"csrf": csrf}).status_code == 303
        assert thief.get("/", headers=stolen).headers.get("location") == "/login"
        refused = thief.post("/assignments/01_tensors/submit", headers=stolen, data={"csrf": csrf},
                             files={"files": ("strides.py", b"x = 1\n")})
        assert refused.status_code == 401, refused.text
        assert thief.post("/logout", headers=stolen, data={"csrf": csrf}).status_code == 303  # harmless
    # signing in again works, with a new session the old copy does not share
    again, _ = signed_in(server, "s001", tokens["s001"])
    assert again.get("/").status_code == 200
    # staff: a new role (and so a new token) ends the sessions held with the old one
    ta, ta_csrf = signed_in(server, "tina", staff, "/staff")
    stolen = _captured(ta)
    assert add_staff(server.folder, "tina", "instructor")
    with server.client() as thief:
        assert thief.get("/staff", headers=stolen).status_code == 401
        released = thief.post("/staff/release", headers=stolen, data={"csrf": ta_csrf, "assignment": "01_tensors"})
        assert released.status_code == 401, released.text
    # one sign-out ends the user's sessions everywhere (the server keeps no session of its own)
    first, first_csrf = signed_in(server, "s002", tokens["s002"])
    second, _ = signed_in(server, "s002", tokens["s002"])
    assert first.post("/logout", data={"csrf": first_csrf}).status_code == 303
    assert second.get("/").headers.get("location") == "/login"
    assert csrf_of(second.get("/login").text)
