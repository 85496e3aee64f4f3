"""`checks serve` end to end: a real server on 127.0.0.1, the real `checks` commands a student and
a TA type (roster import, login, submit, fetch), the JSON API over real HTTP, and the gradebook.
"""

from __future__ import annotations

import csv
import io
import json

import shutil
import sqlite3
import zipfile


import pytest

from serving import (REFERENCE, REPO, add_staff, checks, course_folder, folder_zip, import_roster,
                     start_server, submit, wait_graded)

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = course_folder(tmp_path_factory.mktemp("serve"))
    tokens = import_roster(folder)
    staff = add_staff(folder)
    server = start_server(folder)
    yield server, tokens, staff
    server.kill(15)


@pytest.fixture
def student_env(tmp_path):
    return {"XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_a_student_logs_in_submits_and_reads_the_feedback_in_the_terminal(served, student_env, tmp_path):
    server, tokens, _ = served
    login = checks("login", server.url, input=tokens["s001"] + "\n", env=student_env)
    assert login.returncode == 0, login.stdout + login.stderr
    kept = tmp_path / "config" / "checks" / "server.json"
    assert kept.stat().st_mode & 0o777 == 0o600
    assert json.loads(kept.read_text())["user"] == "s001"

    copy = tmp_path / "01_tensors"
    shutil.copytree(REPO / "assignments" / "01_tensors", copy)
    for name in ("strides.py", "broadcasting.py", "quiz.toml"):
        shutil.copy(REFERENCE / name, copy / name)
    done = checks("submit", cwd=copy, env=student_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "score: 100 / 100" in done.stdout
    assert "strides.view" in done.stdout and "passed" in done.stdout
    assert f"{server.url}/submissions/" in done.stdout

    stubs = checks("submit", "01_tensors", str(REPO / "assignments" / "01_tensors"), "--course", str(REPO),
                   env=student_env)
    assert stubs.returncode == 1
    assert "score: 0 / 100" in stubs.stdout and "not started" in stubs.stdout

    no_wait = checks("submit", "--no-wait", cwd=copy, env=student_env)
    assert no_wait.returncode == 0
    submission_id = no_wait.stdout.strip().splitlines()[-1]
    with server.client(tokens["s001"]) as http:
        assert wait_graded(http, submission_id)["result"]["questions"]


def test_percent_checks_submit_submits_the_notebooks_folder(served, student_env, tmp_path, monkeypatch):
    from checks.notebooks.magic import run_submit

    server, tokens, _ = served
    assert checks("login", server.url, input=tokens["s002"] + "\n", env=student_env).returncode == 0
    copy = tmp_path / "01_tensors"
    shutil.copytree(REPO / "assignments" / "01_tensors", copy)
    for name in ("strides.py", "broadcasting.py", "quiz.toml"):
        shutil.copy(REFERENCE / name, copy / name)
    monkeypatch.setenv("XDG_CONFIG_HOME", student_env["XDG_CONFIG_HOME"])
    monkeypatch.setenv("PYTHONPATH", str(REPO / "src"))
    output = run_submit(copy)
    assert "score: 100 / 100" in output and "\x1b[" not in output
    assert "submitted 01_tensors" in output


def test_a_wrong_token_is_refused_and_nothing_is_kept(served, student_env, tmp_path):
    server, tokens, _ = served
    wrong = tokens["s002"][:-4] + "AAAA"
    login = checks("login", server.url, input=wrong + "\n", env=student_env)
    assert login.returncode == 1 and "not valid" in login.stdout
    assert not (tmp_path / "config" / "checks" / "server.json").exists()
    orphan = checks("submit", "01_tensors", str(REFERENCE), "--course", str(REPO), env=student_env)
    assert orphan.returncode == 1 and "checks login URL" in orphan.stdout


def test_fetch_writes_the_student_release(served, student_env, tmp_path):
    server, tokens, _ = served
    assert checks("login", server.url, input=tokens["s002"] + "\n", env=student_env).returncode == 0
    done = checks("fetch", "01_tensors", "--out", str(tmp_path / "mine"), env=student_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "mine" / "strides.py").read_bytes() == (REPO / "assignments" / "01_tensors" / "strides.py").read_bytes()
    assert (tmp_path / "mine" / "tests").is_dir()
    assert not list((tmp_path / "mine").rglob("*solution*"))
    again = checks("fetch", "01_tensors", "--out", str(tmp_path / "mine"), env=student_env)
    assert again.returncode == 2 and "exists" in again.stdout


def test_the_api_queues_then_grades_and_lists_only_ones_own(served):
    server, tokens, _ = served
    with server.client(tokens["s002"]) as http:
        reply = submit(http, folder_zip(REFERENCE))
        assert reply.status_code == 202
        acknowledged = reply.json()
        assert acknowledged["status"] in ("queued", "grading", "done")
        graded = wait_graded(http, acknowledged["id"])
        assert graded["status"] == "done" and graded["result"]["name"] == "s002"
        assert sum(q["score"] for q in graded["result"]["questions"]) == 100
        # its hidden results are shown at once (the default policy): they are the feedback, and
        # the public checks, which would show nothing more, do not run
        assert graded["hidden_shown"] is True and "public" not in graded
        mine = http.get("/api/submissions").json()
    assert mine and {row["id"] for row in mine} >= {acknowledged["id"]}
    with server.client(tokens["s001"]) as http:
        theirs = {row["id"] for row in http.get("/api/submissions").json()}
    assert acknowledged["id"] not in theirs


def test_an_unknown_or_closed_assignment_is_404(served):
    server, tokens, _ = served
    with server.client(tokens["s001"]) as http:
        assert submit(http, folder_zip(REFERENCE), "03_mlp").status_code == 404
        assert http.get("/api/assignments/nope/distribution").status_code == 404
        assert [a["name"] for a in http.get("/api/assignments").json()] == ["01_tensors"]


def test_staff_download_the_gradebook_in_every_format(served):
    server, tokens, staff = served
    with server.client(tokens["s001"]) as http:
        wait_graded(http, submit(http, folder_zip(REFERENCE)).json()["id"])
    with server.client() as http:
        page = http.get("/login")
        csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
        signed_in = http.post("/login", data={"user": "tina", "token": staff, "csrf": csrf})
        assert signed_in.status_code == 303 and signed_in.headers["location"] == "/staff"
        rows = list(csv.reader(io.StringIO(http.get("/staff/gradebook/01_tensors/csv").text)))
        assert rows[0][:2] == ["submission", "student_id"] and "s001" in {row[0] for row in rows}
        report = http.get("/staff/gradebook/01_tensors/html")
        assert report.status_code == 200 and "<html" in report.text
        database = http.get("/staff/gradebook/01_tensors/sqlite").content
        assert database.startswith(b"SQLite format 3")
        archive = zipfile.ZipFile(io.BytesIO(http.get("/staff/gradebook/01_tensors/zip").content))
        names = set(archive.namelist())
        assert {"01_tensors/gradebook.csv", "01_tensors/report.html", "01_tensors/s001/results.json",
                "01_tensors/s001/feedback.html"} <= names
        results = json.loads(archive.read("01_tensors/s001/results.json"))
        assert results["score"] == 100
        assert http.get("/staff/gradebook/01_tensors/xls").status_code == 404


def test_the_roster_keeps_tokens_on_a_second_import(served, tmp_path):
    server, tokens, _ = served
    again = checks("roster", "import", str(server.folder / "roster.csv"), "--tokens", str(tmp_path / "t.csv"))
    assert again.returncode == 0 and "0 token(s) issued, 2 account(s) already there" in again.stdout
    assert not (tmp_path / "t.csv").exists()
    with server.client() as http:
        assert http.post("/api/login", json={"token": tokens["s001"]}).status_code == 200


def test_only_hashes_of_tokens_are_stored(served):
    server, tokens, _ = served
    database = (server.folder / "data" / "checks.sqlite").read_bytes()
    for token in tokens.values():
        assert token.encode() not in database and token.split(".")[1].encode() not in database
    with sqlite3.connect(server.folder / "data" / "checks.sqlite") as db:
        assert all(h.startswith("$argon2") for (h,) in db.execute("SELECT token_hash FROM users"))


def test_a_bad_roster_is_refused_with_its_line(tmp_path):
    folder = course_folder(tmp_path, roster=[("s001", "A", "a@x"), ("s001", "B", "b@x")])
    done = checks("roster", "import", str(folder / "roster.csv"))
    assert done.returncode == 2 and "line 3" in done.stdout and "twice" in done.stdout


def test_a_grader_failure_is_shown_to_staff_never_to_the_student_as_a_score(tmp_path):
    """A hidden suite that runs no checks is the grader's failure: the student reads that it is
    not their mistake, with no score; staff read the error."""
    course = tmp_path / "broken"
    shutil.copytree(REPO / "assignments" / "01_tensors", course / "assignments" / "01_tensors")
    (course / "autograder" / "01_tensors").mkdir(parents=True)
    shutil.copy(REPO / "autograder" / "01_tensors" / "assignment.toml", course / "autograder" / "01_tensors")
    (course / "autograder" / "01_tensors" / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    folder = course_folder(tmp_path, course=course)
    tokens = import_roster(folder)
    staff = add_staff(folder, "tom", "instructor")
    server = start_server(folder)
    try:
        with server.client(tokens["s001"]) as http:
            reply = wait_graded(http, submit(http, folder_zip(REFERENCE)).json()["id"])
        assert reply["status"] == "grader_problem" and "not your mistake" in reply["message"]
        assert "result" not in reply and "error" not in reply
        with server.client(staff) as http:
            seen = http.get(f"/api/submissions/{reply['id']}").json()
            assert seen["status"] == "failed" and "ran no checks" in seen["error"]
            assert http.get("/api/class").json()["failures"] == [reply["id"]]
    finally:
        server.kill(15)


def test_course_toml_mistakes_are_named(tmp_path):
    folder = course_folder(tmp_path, extra="colour = 1\n")
    done = checks("serve", str(folder))
    assert done.returncode == 2 and "unknown key colour" in done.stdout
    (folder / "course.toml").write_text(f'course = "{REPO}"\n[assignment.99_nope]\n')
    done = checks("serve", str(folder))
    assert done.returncode == 2 and "99_nope" in done.stdout


def test_a_second_server_on_the_same_course_is_refused(served):
    server, _, _ = served
    done = checks("serve", str(server.folder), "--port", "1")
    assert done.returncode == 2 and "another `checks serve`" in done.stdout





def test_the_server_reads_a_roster_as_the_course_policy_does_and_refuses_a_role_it_does_not_know(tmp_path):
    from checks.course.assignment import CourseError
    from checks.server.roster import read_roster

    roster = tmp_path / "roster.csv"
    roster.write_text("student_id,name,email,role\ns1,Ann,a@x.org,\ns2,Bo,b@x.org,ta\n", encoding="utf-8")
    assert [(user.id, user.role) for user in read_roster(roster)] == [("s1", "student"), ("s2", "ta")]
    roster.write_text("student_id,name,email,role\ns1,Ann,a@x.org,dean\n", encoding="utf-8")
    with pytest.raises(CourseError, match="the role of s1 must be one of student, ta, instructor, not 'dean'"):
        read_roster(roster)
    roster.write_text("student_id,name,email\ns1,Ann,a@x.org\ns1,Ann,a@x.org\n", encoding="utf-8")
    with pytest.raises(CourseError, match="line 3: student_id s1 is there twice"):  # the policy's own check
        read_roster(roster)
