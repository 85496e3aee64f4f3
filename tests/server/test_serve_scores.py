"""What a student sees of an upload is what counts (issue 44), over real HTTP on a real `checks
serve` (SQLite, and PostgreSQL where what is stored matters):

- a web upload is checked as `checks submit` checks a folder (grading/handin.py, one check for
  both): an upload missing a file, or with one misnamed, is refused before anything is stored, so
  it can never be graded and replace the grade that counts;
- the late penalty shows wherever the student's score shows: `checks submit`, the submission's
  page, "My submissions" and feedback.html, the number the gradebook counts.
"""

from __future__ import annotations

import csv
import io
import shutil
import zipfile
from contextlib import closing
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from serving import (REFERENCE, REPO, add_staff, checks, course_folder, folder_zip, import_roster, signed_in,
                     start_server, submit, wait_graded)

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


def _total(server, staff: str, student: str) -> float:
    ta, _ = signed_in(server, "tina", staff, "/staff")
    with closing(ta):
        book = list(csv.DictReader(io.StringIO(ta.get("/staff/gradebook/01_tensors/csv").text)))
    return float(next(row for row in book if row["student_id"] == student)["total"])


@pytest.fixture(params=["sqlite", "postgres"])
def storage_url(request) -> str:
    if request.param == "sqlite":
        return ""
    cluster = request.getfixturevalue("postgres_cluster")
    return cluster.create(f"uploads_{abs(hash(request.node.name)) % 10**8}")


def test_an_incomplete_web_upload_is_refused_before_it_is_stored_and_the_full_grade_stands(tmp_path, storage_url):
    extra = f'storage = "{storage_url}"\n' if storage_url else ""
    folder = course_folder(tmp_path, extra=extra,
                           policy='due = "2030-06-30T23:59:00+00:00"\ncounts = "last"\n')  # the latest counts
    tokens, staff = import_roster(folder), add_staff(folder)
    server = start_server(folder)
    try:
        with server.client(tokens["s001"]) as http:
            full = wait_graded(http, submit(http, folder_zip(REFERENCE)).json()["id"])
            assert full["result"]["questions"] and _total(server, staff, "s001") == 100

            page, csrf = signed_in(server, "s001", tokens["s001"])
            with closing(page):
                lone = page.post("/assignments/01_tensors/submit", data={"csrf": csrf},
                                 files=[("files", ("strides.py", (REFERENCE / "strides.py").read_bytes()))])
                assert lone.status_code == 422, lone.text
                assert "broadcasting.py is missing from the submission" in lone.text
                assert "quiz.toml is missing from the submission" in lone.text
                misnamed = page.post("/assignments/01_tensors/submit", data={"csrf": csrf}, files=[
                    ("files", ("Strides.py", (REFERENCE / "strides.py").read_bytes())),
                    ("files", ("broadcasting.py", (REFERENCE / "broadcasting.py").read_bytes())),
                    ("files", ("quiz.toml", (REFERENCE / "quiz.toml").read_bytes()))])
                assert misnamed.status_code == 422 and "found Strides.py: rename it to strides.py" in misnamed.text
            bad_quiz = folder_zip(REFERENCE, ("strides.py", "broadcasting.py"))
            refused = submit(http, bad_quiz)  # the API (`checks submit`, a zip made by hand) is checked the same
            assert refused.status_code == 422 and "quiz.toml is missing" in refused.json()["error"]
            assert [row["id"] for row in http.get("/api/submissions").json()] == [full["id"]]  # nothing stored
        assert _total(server, staff, "s001") == 100  # the complete upload still counts
    finally:
        server.kill(15)


def test_the_refusal_is_the_one_checks_pack_gives_for_the_same_files(tmp_path):
    """One check for both ways in: the same files, the same problems, word for word."""
    from checks.course.assignment import load_assignment
    from checks.course.submissions import read_submission
    from checks.grading.session import named_files
    from checks.server.uploads import UploadRefused, refuse_incomplete

    work = tmp_path / "work"
    shutil.copytree(REPO / "assignments" / "01_tensors", work)
    (work / "broadcasting.py").rename(work / "Broadcasting.py")
    (work / "quiz.toml").write_text("broadcast_numel = 'six'\n")
    packed = checks("pack", "01_tensors", str(work), "--course", str(REPO), "--out", str(tmp_path / "out.zip"),
                    env={"COLUMNS": "1000"})  # a problem on one line however long the temp path (xdist's are longer)
    assert packed.returncode == 1
    problems = [line.strip() for line in packed.stdout.splitlines()[1:] if line.strip()]
    assert any("rename it to broadcasting.py" in p for p in problems) and any("quiz.toml:" in p for p in problems)

    zipped = tmp_path / "upload.zip"
    zipped.write_bytes(folder_zip(work, ("strides.py", "Broadcasting.py", "quiz.toml")))
    assignment = load_assignment(REPO, "01_tensors")
    with pytest.raises(UploadRefused) as refused:
        refuse_incomplete(assignment, read_submission(zipped, named_files(assignment)),
                          ["strides.py", "Broadcasting.py", "quiz.toml"])
    assert str(refused.value) == "nothing was stored; fix these and upload again: " + "; ".join(problems)


def test_a_late_student_reads_the_penalised_score_wherever_it_shows(tmp_path):
    due = (datetime.now(timezone.utc) - timedelta(hours=1)).replace(microsecond=0)  # one day late
    folder = course_folder(tmp_path, policy=f'due = "{due.isoformat()}"\n[policy.late]\nkind = "per_day"\n'
                                            'percent = 20\n')
    tokens, staff = import_roster(folder), add_staff(folder)
    server = start_server(folder)
    try:
        env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
        assert checks("login", server.url, input=tokens["s001"] + "\n", env=env).returncode == 0
        copy = tmp_path / "01_tensors"
        shutil.copytree(REPO / "assignments" / "01_tensors", copy)
        for name in ("strides.py", "broadcasting.py", "quiz.toml"):
            shutil.copy(REFERENCE / name, copy / name)
        done = checks("submit", cwd=copy, env=env)
        assert "score: 80 / 100" in done.stdout, done.stdout + done.stderr
        assert "the checks gave 100" in done.stdout and "late policy, -20 points" in done.stdout
        assert done.returncode == 1  # not full marks, as the gradebook counts it

        with server.client(tokens["s001"]) as http:
            (row,) = http.get("/api/submissions").json()
            assert row["result"]["adjustments"][0]["points"] == -20
        page, _ = signed_in(server, "s001", tokens["s001"])
        with closing(page):
            home = page.get("/").text
            assert "80 / 100" in home and "100 / 100" not in home  # "My submissions"
            shown = page.get(row["url"]).text
            hidden = shown.split('id="feedback"', 1)[1].split("</article>", 1)[0]
            assert "80 / 100" in hidden and "100 / 100" not in hidden
            feedback = page.get(f"{row['url']}/feedback.html").text
            assert "80 / 100" in feedback and "100 / 100" not in feedback
        assert _total(server, staff, "s001") == 80
    finally:
        server.kill(15)


def test_a_regrade_adjustment_answers_its_submission_and_question_and_never_passes_the_maximum(tmp_path):
    from serving import STUBS

    folder = course_folder(tmp_path, extra='roster = "roster.csv"\n')
    tokens, staff = import_roster(folder), add_staff(folder)
    server = start_server(folder)
    work = tmp_path / "work"
    work.mkdir()
    for name, source in (("strides.py", REFERENCE), ("broadcasting.py", STUBS), ("quiz.toml", REFERENCE)):
        shutil.copy(source / name, work / name)
    try:
        with server.client(tokens["s001"]) as http:
            graded = wait_graded(http, submit(http, folder_zip(work)).json()["id"])
        questions = {q["qid"]: (q["score"], q["max_score"]) for q in graded["result"]["questions"]}
        full = next(qid for qid, (score, most) in questions.items() if score == most)
        short = next(qid for qid, (score, most) in questions.items() if most - score >= 2)
        raw = round(sum(score for score, _ in questions.values()), 2)
        student, csrf = signed_in(server, "s001", tokens["s001"], f"/submissions/{graded['id']}")
        ta, ta_csrf = signed_in(server, "tina", staff, "/staff/regrades")
        with closing(student), closing(ta):
            def ask(qid: str, message: str = "please look again") -> str:
                asked = student.post(f"/submissions/{graded['id']}/regrade",
                                     data={"csrf": csrf, "question": qid, "message": message})
                assert asked.status_code == 303, asked.text
                page = ta.get("/staff/regrades").text
                assert f'href="/submissions/{graded["id"]}"' in page  # the request links to its submission
                return page.split('id="request-')[1].split('"')[0]  # the newest open request comes first

            request = ask(full)
            over = ta.post(f"/staff/regrades/{request}/answer", data={"csrf": ta_csrf, "reply": "fine", "points": "2.62"})
            assert over.status_code == 400 and f"{full} has {questions[full][0]:g} of" in over.text
            closed = ta.post(f"/staff/regrades/{request}/answer", data={"csrf": ta_csrf, "reply": "full marks already"})
            assert closed.status_code == 303, closed.text
            for n in range(2):  # two answers on one question of one submission: the later replaces, never stacks
                answered = ta.post(f"/staff/regrades/{ask(short, f'look again, {n}')}/answer",
                                   data={"csrf": ta_csrf, "reply": "partly right", "points": "1"})
                assert answered.status_code == 303, answered.text
            shown = student.get(f"/submissions/{graded['id']}").text.split('id="feedback"', 1)[1]
            assert f"{raw + 1:g} / 100" in shown
        assert _total(server, staff, "s001") == raw + 1
    finally:
        server.kill(15)


def test_grace_days_left_agree_on_the_page_in_the_refusal_and_in_checks_grace_show(tmp_path):
    """After a late upload spent a grace day, a second late upload of the same assignment asks
    again: the page, the refusal and `checks grace show` all say 1 left (the refusal said 2). The
    page shows the due date in the course's time zone."""
    due = (datetime.now(timezone.utc) - timedelta(hours=1)).replace(microsecond=0)
    folder = course_folder(tmp_path, extra='roster = "roster.csv"\n[grace]\ndays = 2\nmode = "request"\n',
                           policy=f'time_zone = "Asia/Tokyo"\ndue = "{due.isoformat()}"\n'
                                  '[policy.late]\nkind = "per_day"\npercent = 10\n')
    tokens = import_roster(folder)
    server = start_server(folder)
    try:
        with server.client(tokens["s001"]) as http:
            used = http.post("/api/assignments/01_tensors/submissions", data={"grace": "use"},
                             files={"files": ("01_tensors.zip", folder_zip(REFERENCE), "application/zip")})
            assert used.status_code == 202, used.text
            asked = submit(http, folder_zip(REFERENCE))
            assert asked.status_code == 409, asked.text
            assert "you have 1 grace day left: it would spend 0 more (1 already spent on 01_tensors)" in \
                asked.json()["error"]
        page, _ = signed_in(server, "s001", tokens["s001"])
        with closing(page):
            home = page.get("/").text
        assert "Grace days left: <strong>1</strong>" in home
        assert f"Due {due.astimezone(ZoneInfo('Asia/Tokyo')):%Y-%m-%d %H:%M} JST" in home  # the course's zone
        shown = checks("--course", str(folder), "grace", "show", "s001")
        assert shown.returncode == 0 and "s001: 1 of 2 grace days left" in shown.stdout, shown.stdout + shown.stderr
    finally:
        server.kill(15)


def test_a_zip_wrapped_twice_is_taken_on_the_page_and_the_api_and_graded_as_the_zip_inside(tmp_path):
    """It scored 0 with "No quiz.toml" though the file was there (issue 44): the page and the API
    read the zip inside as `checks grade` does, with its full grade; a zip in a zip in a zip is
    refused before anything is stored, saying what to do."""
    def wrapped(data: bytes, times: int) -> bytes:
        for level in range(times):
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                archive.writestr(f"level{level}.zip", data)
            data = buffer.getvalue()
        return data

    folder = course_folder(tmp_path)
    tokens = import_roster(folder)
    twice = wrapped(folder_zip(REFERENCE), 1)
    server = start_server(folder)
    try:
        page, csrf = signed_in(server, "s001", tokens["s001"])
        with closing(page):
            taken = page.post("/assignments/01_tensors/submit", data={"csrf": csrf},
                              files=[("files", ("mine.zip", twice, "application/zip"))])
            assert taken.status_code == 303, taken.text
            refused = page.post("/assignments/01_tensors/submit", data={"csrf": csrf},
                                files=[("files", ("mine.zip", wrapped(folder_zip(REFERENCE), 2), "application/zip"))])
            assert refused.status_code == 400 and "holds only another zip (level0.zip)" in refused.text, refused.text
        with server.client(tokens["s002"]) as http:
            api = submit(http, twice)
            assert api.status_code == 202, api.text
            done = wait_graded(http, api.json()["id"])
            assert done["status"] == "done", done
            questions = done["result"]["questions"]
            assert questions and all(q["score"] == q["max_score"] for q in questions), questions
            assert any("holds only level0.zip" in warning for warning in done["result"]["warnings"])
            assert submit(http, wrapped(folder_zip(REFERENCE), 2)).status_code == 400
            assert [row["id"] for row in http.get("/api/submissions").json()] == [api.json()["id"]]
        with server.client(tokens["s001"]) as http:
            (row,) = http.get("/api/submissions").json()  # the page's upload, stored once; the refused one not
    finally:
        server.kill(15)
