"""Staff grant and revoke extensions and answer regrade requests on the server's pages; students
file a regrade request per question and read the answer (issue 34). The records are the audited
lines `checks extension` and `checks regrade` keep (COURSE/records/*.jsonl). A real `checks serve`
on 127.0.0.1, real HTTP, a CSRF token on every form.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from serving import REFERENCE, add_staff, course_folder, folder_zip, import_roster, signed_in, start_server, submit, \
    wait_graded

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = course_folder(tmp_path_factory.mktemp("policy"), extra='roster = "roster.csv"\n',
                           policy='due = "2099-01-01T00:00:00+00:00"\n')
    tokens = import_roster(folder)
    staff = add_staff(folder, "tom", "instructor")
    server = start_server(folder)
    with server.client(tokens["s001"]) as http:
        graded = wait_graded(http, submit(http, folder_zip(REFERENCE)).json()["id"])
    yield server, tokens, staff, graded
    server.kill(15)


def _records(folder, name: str) -> list[dict]:
    path = folder / "records" / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_staff_grant_and_revoke_an_extension_audited(served):
    server, tokens, staff, _ = served
    ta, csrf = signed_in(server, "tom", staff, "/staff/students/s001")
    grant = {"csrf": csrf, "student": "s001", "assignment": "01_tensors", "action": "grant", "reason": "ill"}
    before = len(_records(server.folder, "extensions"))
    assert ta.post("/staff/extensions", data={**grant, "until": "2099-02-01T00:00:00+00:00", "csrf": "x"}
                   ).status_code == 403
    refused = ta.post("/staff/extensions", data={**grant, "until": "2099-02-01T00:00:00"})
    assert refused.status_code == 400 and "has no time zone" in refused.text
    assert "New due date: the date" in refused.text and "--until" not in refused.text  # the form's words (issue 44)
    assert len(_records(server.folder, "extensions")) == before  # nothing recorded
    done = ta.post("/staff/extensions", data={**grant, "until": "2099-02-01T00:00:00+00:00"})
    assert done.status_code == 303, done.text
    last = _records(server.folder, "extensions")[-1]
    assert (last["student"], last["until"], last["by"], last["reason"]) == ("s001", "2099-02-01T00:00:00+00:00",
                                                                             "tom", "ill")
    student, student_csrf = signed_in(server, "s001", tokens["s001"])
    assert "Due 2099-02-01 00:00 UTC" in student.get("/").text
    assert student.post("/staff/extensions", data={**grant, "csrf": student_csrf,
                                                   "until": "2099-03-01T00:00:00+00:00"}).status_code == 403
    assert "2099-02-01" in ta.get("/staff/students/s001").text
    revoked = ta.post("/staff/extensions", data={**grant, "action": "revoke", "reason": "recovered"})
    assert revoked.status_code == 303
    assert _records(server.folder, "extensions")[-1]["until"] is None
    assert "Due 2099-01-01 00:00 UTC" in student.get("/").text


def test_a_student_asks_for_a_regrade_and_reads_the_staffs_answer(served):
    server, tokens, staff, graded = served
    student, csrf = signed_in(server, "s001", tokens["s001"], graded["url"])
    assert 'action="/submissions/' in student.get(graded["url"]).text
    url = f"{graded['url']}/regrade"
    assert student.post(url, data={"csrf": "forged", "question": "strides.numel", "message": "m"}).status_code == 403
    assert student.post(url, data={"csrf": csrf, "question": "nope.q", "message": "m"}).status_code == 400
    other, other_csrf = signed_in(server, "s002", tokens["s002"])
    assert other.post(url, data={"csrf": other_csrf, "question": "strides.numel", "message": "m"}).status_code == 404
    asked = student.post(url, data={"csrf": csrf, "question": "strides.numel", "message": "my numel is right"})
    assert asked.status_code == 303, asked.text
    (request,) = [r for r in _records(server.folder, "regrades") if r["event"] == "request"]
    assert (request["student"], request["question"], request["by"]) == ("s001", "strides.numel", "s001")

    ta, ta_csrf = signed_in(server, "tom", staff, "/staff/regrades")
    listed = ta.get("/staff/regrades").text
    assert "my numel is right" in listed and request["id"] in listed
    answer = f"/staff/regrades/{request['id']}/answer"
    assert ta.post(answer, data={"csrf": ta_csrf, "reply": "fine", "points": "two"}).status_code == 400
    assert student.post(answer, data={"csrf": csrf, "reply": "self-served", "points": "9"}).status_code == 403
    over = ta.post(answer, data={"csrf": ta_csrf, "reply": "you are right", "points": "2"})  # it has full marks
    assert over.status_code == 400 and "the adjustment must be from -4 to +0" in over.text  # never 102 / 100
    assert ta.post(answer, data={"csrf": ta_csrf, "reply": "you are right, but", "points": "-2"}).status_code == 303
    answers = [r for r in _records(server.folder, "regrades") if r["event"] == "answer"]
    assert [(a["reply"], a["points"], a["by"]) for a in answers] == [("you are right, but", -2.0, "tom")]
    page = student.get(graded["url"]).text
    assert "you are right, but" in page and "adjustment -2 points" in page
    # the gradebook keeps it apart from the raw score, as `checks grade` does
    book = list(csv.DictReader(io.StringIO(ta.get("/staff/gradebook/01_tensors/csv").text)))
    row = next(r for r in book if r["student_id"] == "s001")
    assert float(row["adjustment"]) == -2 and float(row["raw"]) == 100 and float(row["total"]) == 98, row


def test_the_servers_gradebook_counts_the_submission_the_policy_says(tmp_path):
    """counts = "best": a student's full marks stand though a later upload scores less (the
    latest would count under "last", the default)."""
    from serving import STUBS, wait_graded

    folder = course_folder(tmp_path, policy='due = "2030-06-30T23:59:00+00:00"\ncounts = "best"\n')
    tokens, staff = import_roster(folder), add_staff(folder, "tom", "ta")
    server = start_server(folder)
    try:
        with server.client(tokens["s001"]) as http:
            for submission in (REFERENCE, STUBS):
                accepted = submit(http, folder_zip(submission))
                assert accepted.status_code == 202, accepted.text
                wait_graded(http, accepted.json()["id"])
        ta, _ = signed_in(server, "tom", staff, "/staff")
        book = list(csv.DictReader(io.StringIO(ta.get("/staff/gradebook/01_tensors/csv").text)))
        row = next(r for r in book if r["student_id"] == "s001")
        assert float(row["total"]) == 100, row
    finally:
        server.kill(15)
