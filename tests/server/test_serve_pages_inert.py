"""Control characters a student writes are mended in every page (issue 44): a regrade message
with a raw ESC (a terminal sequence) and a bidirectional override reaches the staff's and the
student's pages as visible escapes, never as the characters themselves, through the one place
where student text enters pages (pages.page_templates).
"""

from __future__ import annotations

import pytest

from serving import REFERENCE, add_staff, course_folder, folder_zip, import_roster, signed_in, start_server, submit
from serving import wait_graded

pytest.importorskip("starlette")

MESSAGE = "numel \x1b[31mis right\x1b]8;;http://evil.example\x07 \u202eevil\u202c \x00end"
RAW = ("\x1b", "\x07", "\u202e", "\u202c", "\x00")


def test_a_regrade_messages_control_characters_are_mended_on_every_page(tmp_path):
    folder = course_folder(tmp_path, extra='roster = "roster.csv"\n', policy='due = "2099-01-01T00:00:00+00:00"\n')
    tokens = import_roster(folder)
    staff = add_staff(folder, "tom", "instructor")
    server = start_server(folder)
    try:
        with server.client(tokens["s001"]) as http:
            graded = wait_graded(http, submit(http, folder_zip(REFERENCE)).json()["id"])
        student, csrf = signed_in(server, "s001", tokens["s001"], graded["url"])
        asked = student.post(f"{graded['url']}/regrade",
                             data={"csrf": csrf, "question": "strides.numel", "message": MESSAGE})
        assert asked.status_code == 303, asked.text
        ta, _ = signed_in(server, "tom", staff, "/staff/regrades")
        pages = {"staff regrades": ta.get("/staff/regrades").text,
                 "staff student": ta.get("/staff/students/s001").text,
                 "student submission": student.get(graded["url"]).text,
                 "staff submission": ta.get(graded["url"]).text}
    finally:
        server.kill(15)
    shown = [name for name, page in pages.items() if "is right" in page]
    assert "staff regrades" in shown and "student submission" in shown, shown
    for name, page in pages.items():
        assert not [c for c in RAW if c in page], f"{name}: a raw control character reached the page"
    assert "\\x1b[31mis right" in pages["staff regrades"] and "\\u202eevil" in pages["staff regrades"]
