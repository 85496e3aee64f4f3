"""Posting to the LMS posts every score or says exactly whose was not posted and why (issue 44):
the simulated platform (tests/lti_platform.py, on 127.0.0.1) refuses some students' scores part
way (an HTTP 500, a 403) and answers another too late; the course server's staff page, served
over real HTTP on 127.0.0.1 (uvicorn in a thread, no grader: results are recorded as the grading
threads record them) on SQLite and on PostgreSQL, names each student not posted with the reason,
records as posted only those the platform took, and a second post sends only the others."""

from __future__ import annotations

import json
import threading
import time

import pytest

pytest.importorskip("pylti1p3", reason="the `lms` extra (PyLTI1p3) is not installed")
uvicorn = pytest.importorskip("uvicorn")

import httpx  # noqa: E402

import checks.lti.launch  # noqa: E402
from checks.lti.keys import tool_key  # noqa: E402
from checks.server.app import create_app  # noqa: E402
from checks.server.config import load_config  # noqa: E402
from checks.server.roster import add_user  # noqa: E402
from checks.server.storage import INSTRUCTOR, STUDENT, Storage, User  # noqa: E402
from lti_platform import running  # noqa: E402
from serving import course_folder, csrf_of, free_port  # noqa: E402
from test_serve_lti_services import POLICY, graded  # noqa: E402

ROSTER = ("student_id,name,email,lms_id\ns001,Ann Lee,ann@example.edu,u-ann\ns002,Cy Dee,cy@example.edu,u-cy\n"
          "s003,Dot Eve,dot@example.edu,\ns004,Fay Gee,fay@example.edu,u-fay\ns005,Gus Hay,gus@example.edu,u-gus\n")
LAUNCH_URL = "http://127.0.0.1/lti/launch"


@pytest.fixture(params=["sqlite", "postgresql"])
def storage_extra(request) -> str:
    if request.param == "sqlite":
        return ""
    return f'storage = "{request.getfixturevalue("postgres_cluster").create(f"lti_partial_{time.monotonic_ns()}")}"\n'


def serving(app) -> tuple[uvicorn.Server, threading.Thread, str]:
    """`app` on 127.0.0.1 (a free port) in a thread, until .should_exit."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           timeout_keep_alive=5))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{port}"


def test_staff_are_told_who_was_not_posted_and_why_and_a_second_post_sends_only_theirs(tmp_path, storage_extra,
                                                                                      monkeypatch):
    folder = course_folder(tmp_path, extra=f'roster = "roster.csv"\n{storage_extra}', policy=POLICY)
    (folder / "roster.csv").write_text(ROSTER)
    key = tool_key(folder, create=True)
    monkeypatch.setattr(checks.lti.launch, "HTTP_SECONDS", 2.0)  # the tool's wait for each answer
    with running(key.jwks(), LAUNCH_URL) as platform:
        (folder / "course.toml").write_text(f"{(folder / 'course.toml').read_text()}\n{platform.lti_table(LAUNCH_URL)}")
        config = load_config(folder)
        storage = Storage(config.storage_url)
        token = add_user(storage, User("tom", "Tom", "tom@example.edu", INSTRUCTOR)).token
        for student in ("s001", "s002", "s003", "s004", "s005"):
            add_user(storage, User(student, student, f"{student}@example.edu", STUDENT))
        for student, earned in (("s001", 9.0), ("s002", 8.0), ("s003", 7.0), ("s004", 6.0), ("s005", 5.0)):
            graded(storage, student, earned)
        platform.score_failures = {"u-cy": 500, "u-fay": "timeout", "u-gus": 403}
        server, thread, url = serving(create_app(config, storage, None))
        try:
            with httpx.Client(base_url=url, timeout=60) as http:
                signed = http.post("/login", data={"user": "tom", "token": token, "csrf": csrf_of(http.get("/login").text)})
                assert signed.status_code == 303, signed.text
                csrf = csrf_of(http.get("/staff").text)

                def post() -> tuple[int, str]:
                    done = http.post("/staff/lti/scores", data={"csrf": csrf, "assignment": "01_tensors"})
                    return done.status_code, " ".join(done.text.split())

                status, page = post()
                assert status == 502, page
                assert "Posted 1 score(s)" in page and "did not take 3 score(s)" in page
                not_posted = page.split('id="not-posted">')[1].split("</ul>")[0]
                assert "<li>s002: the LMS answered HTTP 500" in not_posted
                assert "<li>s004: the LMS gave no answer in time" in not_posted
                assert "<li>s005: the LMS answered HTTP 403" in not_posted
                assert "s001" not in not_posted and "s003: no platform user id" in page
                (line,) = [json.loads(text) for text in (folder / "records" / "lti.jsonl").read_text().splitlines()]
                assert line["posted"] == ["s001"] and list(line["sent"]) == ["s001"] and len(line["failed"]) == 3

                platform.score_failures = {}
                status, page = post()
                assert status == 200 and "Posted 3 score(s)" in page and "1 already there" in page, page
                assert 'id="not-posted"' not in page
                status, page = post()
                assert status == 200 and "Posted 0 score(s)" in page and "4 already there" in page, page
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            storage.close()
        users = sorted(score["userId"] for score in platform.scores)
        # Fay's first score was taken though its answer came too late (the tool could not know): sent again;
        # nobody else's twice
        assert users == ["u-ann", "u-cy", "u-fay", "u-fay", "u-gus"]
