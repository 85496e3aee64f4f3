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
from serving import course_folder  # noqa: E402

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
