"""Pages that update in place (issue 47): the class view and a submission page answer ?live=1
with the parts of the page that change, rendered as the page renders them, for live.js; the same
authorisation as the page; no page reloads itself any more. A real `checks serve` on 127.0.0.1.
"""

from __future__ import annotations

import re
from contextlib import closing

import pytest

from serving import REFERENCE, add_staff, course_folder, folder_zip, import_roster, signed_in, start_server, submit, \
    wait_graded

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = course_folder(tmp_path_factory.mktemp("live"))
    tokens = import_roster(folder)
    staff = add_staff(folder, "tom", "instructor")
    server = start_server(folder)
    with server.client(tokens["s001"]) as http:
        graded = wait_graded(http, submit(http, folder_zip(REFERENCE)).json()["id"])
    yield server, tokens, staff, graded
    server.kill(15)


def test_the_class_view_sends_its_changing_parts_as_the_page_shows_them(served):
    server, tokens, staff, _ = served
    ta, _ = signed_in(server, "tom", staff, "/staff")
    with closing(ta):
        page = ta.get("/staff").text
        assert 'http-equiv="refresh"' not in page and '<script src="/live.js" defer></script>' in page
        assert 'class="live-toggle" aria-pressed="false"' in page  # the pause control
        live = ta.get("/staff", params={"live": "1"})
        assert live.headers["content-type"] == "application/json"
        data = live.json()
        assert data["done"] is False  # the class view never settles
        assert set(data["parts"]) == {"live-summary", "live-cards", "live-stats", "live-failures", "live-recent"}
        assert 'id="total">1<' in data["parts"]["live-cards"] and "1 submissions of 01_tensors" in data["parts"]["live-summary"]
        assert re.search(r'<p id="live-summary" class="visually-hidden" role="status">', page)  # announced
        for part in ("live-cards", "live-stats", "live-recent"):
            assert f'id="{part}">{data["parts"][part]}</div>' in page, part
        with server.client(tokens["s002"]) as http:  # another student submits: the next poll shows it
            assert submit(http, folder_zip(REFERENCE)).status_code == 202
        assert 'id="total">2<' in ta.get("/staff?live=1").json()["parts"]["live-cards"]


def test_a_settled_submission_says_so_and_others_cannot_ask(served):
    server, tokens, staff, graded = served
    own = f"/submissions/{graded['id']}"
    student, _ = signed_in(server, "s001", tokens["s001"])
    with closing(student):
        page = student.get(own).text
        assert "live.js" not in page  # graded: nothing left to update
        data = student.get(own, params={"live": "1"}).json()
        assert data["done"] is True and set(data["parts"]) == {"live-status", "live-result"}
        assert "Status: <strong>done</strong>" in data["parts"]["live-status"]
        assert "The feedback is below." in data["parts"]["live-status"]
        assert 'id="feedback"' in data["parts"]["live-result"] and "<h1" not in data["parts"]["live-result"]
    other, _ = signed_in(server, "s002", tokens["s002"])
    with closing(other):
        assert other.get(own, params={"live": "1"}).status_code == 404
    with server.client() as anonymous:
        assert anonymous.get(own, params={"live": "1"}).status_code == 401
        script = anonymous.get("/live.js")
        assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
        assert "document.activeElement" in script.text  # focus is never taken away
