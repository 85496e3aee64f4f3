"""Hidden checks' scores and feedback wait for the due date (or the staff's release) where an
course policy says `show_hidden = "after_due"`; the page and the API say which. The app is served in
process (Starlette's test client) over a real SQLite database, with results recorded as the
grading threads record them.
"""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient  # noqa: E402

from checks.server.app import create_app  # noqa: E402
from checks.server.config import load_config  # noqa: E402
from checks.server.roster import add_user  # noqa: E402
from checks.server.storage import INSTRUCTOR, STUDENT, Storage, User  # noqa: E402
from serving import course_folder, csrf_of  # noqa: E402

RESULT = {"name": "s001", "assignment": "01_tensors", "questions": [
    {"qid": "strides.numel", "score": 4.0, "max_score": 4.0, "feedback": "", "passed_cases": 1, "total_cases": 1}],
    "devices": ["cpu"], "sandbox": "fork", "sandbox_uid": None, "seconds": 0.1, "warnings": [], "error": "",
    "refused": "", "student_id": "s001"}


@pytest.mark.parametrize("due, shown", [("2099-01-01T00:00:00+00:00", False), ("2000-01-01T00:00:00+00:00", True)])
def test_hidden_results_wait_for_the_due_date(tmp_path, due, shown):
    folder = course_folder(tmp_path, policy=f'due = "{due}"\nshow_hidden = "after_due"\n')
    config = load_config(folder)
    storage = Storage(config.storage_url)
    student = add_user(storage, User("s001", "Ada", "a@x", STUDENT)).token
    staff = add_user(storage, User("ian", "Ian", "i@x", INSTRUCTOR)).token
    row = storage.add_submission("s001", "01_tensors", "uploads/x.zip", "0" * 64, 1, ["strides.py"])
    assert storage.claim("w", ["01_tensors"], 60) is not None
    assert storage.complete(row.id, "w", result=RESULT, error=None)
    with TestClient(create_app(config, storage, None)) as http:
        reply = http.get(f"/api/submissions/{row.id}", headers={"Authorization": f"Bearer {student}"}).json()
        assert reply["hidden_shown"] is shown
        assert bool(reply["result"]["questions"]) is shown
        assert ("after the due date" in reply["visibility"]) is not shown
        seen = http.get(f"/api/submissions/{row.id}", headers={"Authorization": f"Bearer {staff}"}).json()
        assert seen["result"]["questions"]  # staff always see them
        if not shown:  # the staff release them early
            storage.release_hidden("01_tensors", "ian")
            reply = http.get(f"/api/submissions/{row.id}", headers={"Authorization": f"Bearer {student}"}).json()
            assert reply["hidden_shown"] and reply["result"]["questions"]


def test_nothing_the_hidden_run_measured_reaches_a_student_before_its_results_are_released(tmp_path):
    """Found by a fresh attacker: with the hidden results held back, the API still gave the hidden
    run's duration, and student code that sleeps whenever a hidden input has some property read
    that property back from it. Before the release a student reads only that the submission was
    graded (or why the upload was unreadable): no question, score, warning, device or duration,
    in the API, on the page or in the list of submissions; after it, all of it."""
    folder = course_folder(tmp_path, policy='due = "2099-01-01T00:00:00+00:00"\nshow_hidden = "after_due"\n')
    config = load_config(folder)
    storage = Storage(config.storage_url)
    student = add_user(storage, User("s001", "Ada", "a@x", STUDENT)).token
    add_user(storage, User("ian", "Ian", "i@x", INSTRUCTOR))
    measured = {**RESULT, "seconds": 4.606, "devices": ["cuda"], "warnings": [
        "The submission used up its time budget of 1800 s (time limit): the checks not yet run when it ran out "
        "score 0."]}
    row = storage.add_submission("s001", "01_tensors", "uploads/x.zip", "0" * 64, 1, ["strides.py"])
    assert storage.claim("w", ["01_tensors"], 60) is not None
    assert storage.complete(row.id, "w", result=measured, error=None)
    secret = ("4.606", "time budget", "cuda", "strides.numel")
    with TestClient(create_app(config, storage, None)) as http:
        bearer = {"Authorization": f"Bearer {student}"}
        reply = http.get(f"/api/submissions/{row.id}", headers=bearer).json()
        assert reply["status"] == "done" and not reply["hidden_shown"]
        assert reply["result"]["seconds"] == 0 and reply["result"]["warnings"] == [] and not reply["result"]["devices"]
        listed = http.get("/api/submissions", headers=bearer).json()
        http.post("/login", data={"user": "s001", "token": student,
                                  "csrf": csrf_of(http.get("/login").text)}, follow_redirects=False)
        pages = [http.get(f"/submissions/{row.id}"), http.get("/"), http.get(f"/submissions/{row.id}/feedback.html")]
        assert [page.status_code for page in pages] == [200, 200, 200]
        for shown in (str(reply), str(listed), *(page.text for page in pages)):
            assert not [word for word in secret if word in shown], [word for word in secret if word in shown]
        storage.release_hidden("01_tensors", "ian")
        released = http.get(f"/api/submissions/{row.id}", headers=bearer).json()
        assert released["result"]["seconds"] == 4.606 and released["result"]["warnings"]


def test_the_old_key_that_said_the_opposite_is_refused_naming_the_new_one(tmp_path):
    """`hidden_before_due = true` showed the results before the due date: `checks serve` refuses it
    (and `false`) with the key to write instead; the example course makes the safe choice explicit."""
    from checks.policy.config import load_course
    from serving import REPO, checks

    folder = course_folder(tmp_path, policy='due = "2099-01-01T00:00:00+00:00"\nhidden_before_due = true\n')
    refused = checks("serve", str(folder), "--port", "9")  # refused before it binds a port
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "`hidden_before_due` in [policy] is no longer read: write show_hidden = \"after_due\"" in refused.stdout
    example = load_course(REPO / "examples" / "course")
    assert {policy.show_hidden for policy in example.policies.values()} == {"after_due"}
    assert 'show_hidden = "after_due"' in (REPO / "examples" / "course" / "course.toml").read_text()
