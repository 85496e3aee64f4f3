"""The public checks run on every upload and are shown at once, while the hidden checks' scores and
feedback wait for the due date or the staff's release (issue 32): a real `checks serve` on
127.0.0.1, the real `checks submit`, real HTTP.
"""

from __future__ import annotations

import shutil

import pytest

from serving import (REFERENCE, REPO, add_staff, checks, course_folder, folder_zip, import_roster,
                     signed_in, start_server, submit, wait_graded)

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from checks.server.storage import Storage  # noqa: E402

LATER = 'due = "2099-01-01T00:00:00+00:00"\nshow_hidden = "after_due"\n'


def test_before_the_due_date_students_see_the_public_checks_and_no_hidden_score(tmp_path):
    folder = course_folder(tmp_path, policy=LATER)
    tokens = import_roster(folder)
    staff = add_staff(folder, "tom", "instructor")
    server = start_server(folder)
    try:
        env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
        assert checks("login", server.url, input=tokens["s001"] + "\n", env=env).returncode == 0
        copy = tmp_path / "01_tensors"
        shutil.copytree(REPO / "assignments" / "01_tensors", copy)  # the stubs: public checks fail
        done = checks("submit", cwd=copy, env=env)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "public checks (the ones `checks test` runs)" in done.stdout and "strides.numel" in done.stdout
        assert "after the due date" in done.stdout and "score:" not in done.stdout

        with server.client(tokens["s002"]) as http:
            reply = wait_graded(http, submit(http, folder_zip(REFERENCE)).json()["id"])
        assert reply["status"] == "done" and reply["hidden_shown"] is False
        assert reply["result"]["questions"] == []  # no hidden score before the due date
        public = reply["public"]
        assert public["questions"] and all(q["score"] == q["max_score"] for q in public["questions"])
        assert "public_error" not in reply

        page, _ = signed_in(server, "s002", tokens["s002"])
        html = page.get(reply["url"]).text
        assert 'id="public"' in html and "Public checks" in html
        public_total = sum(q["max_score"] for q in public["questions"])
        assert f"Score: {public_total:g} / {public_total:g}" in html
        assert "Score: 100 / 100" not in html  # the hidden score
        out_of = html.split('id="public-out-of"', 1)[1].split("</p>", 1)[0]
        assert f"out of the public checks' own {public_total:g} points: it is not your grade" in out_of

        ta, csrf = signed_in(server, "tom", staff, "/staff")
        unconfirmed = ta.post("/staff/release", data={"assignment": "01_tensors", "csrf": csrf})
        assert unconfirmed.status_code == 400 and "tick the box" in unconfirmed.text  # it asks first (issue 44)
        assert 'name="confirm" value="yes" required' in ta.get("/staff?assignment=01_tensors").text
        assert ta.post("/staff/release", data={"assignment": "01_tensors", "csrf": csrf, "confirm": "yes"}
                       ).status_code == 303
        with server.client(tokens["s002"]) as http:
            released = http.get(f"/api/submissions/{reply['id']}").json()
        assert released["hidden_shown"] is True
        assert sum(q["score"] for q in released["result"]["questions"]) == 100
        assert "Score: 100 / 100" in page.get(reply["url"]).text
    finally:
        server.kill(15)


def test_under_a_burst_every_student_gets_the_public_checks_before_any_hidden_suite_runs(tmp_path):
    """Three uploads queued while the one grading slot warms: each one's public checks run, and
    each student's long poll answers with them, before any hidden suite; the last one's hidden
    suite runs at once (nobody waits for public checks then), the two others' after it."""
    roster = [(f"s00{i}", f"Student {i}", f"s{i}@example.edu") for i in (1, 2, 3)]
    folder = course_folder(tmp_path, policy=LATER, roster=roster)
    tokens = import_roster(folder)
    server = start_server(folder, wait_for_graders=False)
    try:
        ids = []
        for student in ("s001", "s002", "s003"):
            with server.client(tokens[student]) as http:
                ids.append(submit(http, folder_zip(REFERENCE)).json()["id"])
        with server.client(tokens["s001"]) as http:  # as `checks submit` waits
            first = http.get(f"/api/submissions/{ids[0]}", params={"wait": 60}).json()
        assert first["settled"] is True and first["hidden_shown"] is False, first
        assert first["public"]["questions"] and first["status"] in ("queued", "grading")
        for student, submission_id in zip(("s001", "s002", "s003"), ids):
            with server.client(tokens[student]) as http:
                assert wait_graded(http, submission_id)["status"] == "done"
        storage = Storage(f"sqlite:///{folder / 'data' / 'checks.sqlite'}")
        assert [graded for graded, _, _ in storage.gradings()] == [ids[2], ids[0], ids[1]]
        assert all(storage.submission(one).attempts == 1 for one in ids)  # a deferral is no try
        storage.close()
    finally:
        server.kill(15)


def test_a_failure_of_the_public_run_is_shown_to_staff_only(tmp_path):
    """Public tests that run no checks: the grader's failure, for staff; the hidden run goes on."""
    course = tmp_path / "broken"
    shutil.copytree(REPO / "assignments" / "01_tensors", course / "assignments" / "01_tensors")
    shutil.copytree(REPO / "autograder" / "01_tensors", course / "autograder" / "01_tensors")
    tests = course / "assignments" / "01_tensors" / "tests"
    (tests / "test_public.py").unlink()  # the rest of the public tests folder stays
    (tests / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    folder = course_folder(tmp_path, course=course, policy=LATER)
    tokens = import_roster(folder)
    staff = add_staff(folder, "tom", "instructor")
    server = start_server(folder)
    try:
        with server.client(tokens["s001"]) as http:
            reply = wait_graded(http, submit(http, folder_zip(REFERENCE)).json()["id"])
        with server.client(staff) as http:
            seen = http.get(f"/api/submissions/{reply['id']}").json()
        assert reply["status"] == "done", seen.get("error")
        assert sum(q["score"] for q in seen["result"]["questions"]) == 100
        assert "public" not in reply and "public_error" not in reply
        page, _ = signed_in(server, "s001", tokens["s001"])
        assert "grader error" not in page.get(reply["url"]).text.lower()
        with server.client(staff) as http:
            seen = http.get(f"/api/submissions/{reply['id']}").json()
        assert "ran no checks" in seen["public_error"]
        ta, _ = signed_in(server, "tom", staff, "/staff")
        assert 'id="public-error"' in ta.get(reply["url"]).text
    finally:
        server.kill(15)
