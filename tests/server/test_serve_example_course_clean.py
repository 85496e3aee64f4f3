"""Trying the example course never writes into the repository's tracked files (issue 44): a copy of
examples/course (its course.toml pointed at this repository), registered with the simulated LMS
(tests/lti_platform.py on 127.0.0.1) and served over real HTTP on 127.0.0.1, on SQLite and on
PostgreSQL, goes through a roster sync from the LMS (the staff page and `checks lti roster`) and a
regrade request (the submission page and `checks regrade-request`). Afterwards every file the
course had is byte for byte what it was (its roster.csv is input only: the synced learners are in
data/lms-roster.csv), and every new file is in a folder examples/course/.gitignore keeps out of git
(data/, records/, lti/), as `git check-ignore` says of the same path in the repository."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import time

import pytest

pytest.importorskip("pylti1p3", reason="the `lms` extra (PyLTI1p3) is not installed")
pytest.importorskip("uvicorn")

import httpx  # noqa: E402

from checks import cli  # noqa: E402
from checks.lti.keys import tool_key  # noqa: E402
from checks.policy.config import load_course  # noqa: E402
from checks.server.app import create_app  # noqa: E402
from checks.server.config import load_config  # noqa: E402
from checks.server.roster import add_user  # noqa: E402
from checks.server.storage import INSTRUCTOR, STUDENT, Storage, User  # noqa: E402
from lti_platform import running  # noqa: E402
from serving import REPO, csrf_of  # noqa: E402
from test_serve_lti_partial import serving  # noqa: E402

LAUNCH_URL = "http://127.0.0.1/lti/launch"
IGNORED_HERE = ("data", "records", "lti")  # what trying the course may write, all kept out of git


@pytest.fixture(params=["sqlite", "postgresql"])
def storage_extra(request) -> str:
    if request.param == "sqlite":
        return ""
    return f'storage = "{request.getfixturevalue("postgres_cluster").create(f"example_{time.monotonic_ns()}")}"\n'


def hashes(folder) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def test_trying_the_example_course_writes_only_where_git_ignores(tmp_path, storage_extra, monkeypatch, capsys):
    course = tmp_path / "course"
    shutil.copytree(REPO / "examples" / "course", course, ignore=shutil.ignore_patterns(*IGNORED_HERE))
    text = (course / "course.toml").read_text()
    text, n = re.subn(r'(?m)^course = "\.\./\.\."', f'course = "{REPO}"', text)
    assert n == 1, "examples/course/course.toml no longer names the repository as ../.."
    (course / "course.toml").write_text(storage_extra + text)
    assert cli.main(["--course", str(course), "lti", "key"]) == 0  # as docs/policy.md has the staff do
    capsys.readouterr()
    with running(tool_key(course).jwks(), LAUNCH_URL) as platform:
        (course / "course.toml").write_text(f"{(course / 'course.toml').read_text()}\n{platform.lti_table(LAUNCH_URL)}")
        before = hashes(course)  # the course as the person trying it set it up
        config = load_config(course)
        storage = Storage(config.storage_url)
        staff = add_user(storage, User("tom", "Tom", "tom@example.edu", INSTRUCTOR)).token
        ada = add_user(storage, User("s001", "Ada Lovelace", "ada@example.edu", STUDENT)).token
        row = storage.add_submission("s001", "01_tensors", "uploads/x.zip", "0" * 64, 1, ["strides.py"])
        claimed = storage.claim("w", ["01_tensors"], 60)
        assert claimed is not None
        result = {"name": "s001", "assignment": "01_tensors", "student_id": "s001", "devices": ["cpu"],
                  "sandbox": "fork", "sandbox_uid": None, "seconds": 0.1, "warnings": [], "error": "", "refused": "",
                  "questions": [{"qid": "strides.numel", "score": 5.0, "max_score": 10.0, "feedback": "",
                                 "passed_cases": 1, "total_cases": 2}]}
        # the public checks' result, which Ada reads (and may ask about) before the due date
        assert storage.record_public(row.id, "w", claimed.claim, result=result, error=None)
        assert storage.complete(row.id, "w", error=None, result=result)
        server, thread, url = serving(create_app(config, storage, None))
        try:
            with httpx.Client(base_url=url, timeout=60) as http:
                assert http.post("/login", data={"user": "tom", "token": staff,
                                                 "csrf": csrf_of(http.get("/login").text)}).status_code == 303
                synced = http.post("/staff/lti/roster", data={"csrf": csrf_of(http.get("/staff/students").text)})
                assert synced.status_code == 200 and "2 new learner(s)" in synced.text, synced.text
                assert "u-ann" in http.get("/staff/students").text
            with httpx.Client(base_url=url, timeout=60) as http:
                assert http.post("/login", data={"user": "s001", "token": ada,
                                                 "csrf": csrf_of(http.get("/login").text)}).status_code == 303
                page = http.get(f"/submissions/{row.id}").text
                asked = http.post(f"/submissions/{row.id}/regrade", data={
                    "csrf": csrf_of(page), "question": "strides.numel", "message": "my numel is right"})
                assert asked.status_code == 303, asked.text
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            storage.close()
        assert cli.main(["--course", str(course), "lti", "roster"]) == 0  # the CLI's sync: nothing new now
        assert "added 0, kept 2" in " ".join(capsys.readouterr().out.split())
        ben = tmp_path / "ben"  # a student's own folder: where `checks regrade-request` writes without --out
        ben.mkdir()
        monkeypatch.chdir(ben)
        assert cli.main(["regrade-request", "01_tensors", "strides.numel", "--student", "s002",
                         "--message", "my numel is right"]) == 0
    assert len(list(ben.glob("regrade-01_tensors-s002-*.json"))) == 1
    after = hashes(course)
    assert {name: after.get(name) for name in before} == before  # roster.csv and every other file as they were
    new = sorted(set(after) - set(before))
    assert "data/lms-roster.csv" in new and any(name.startswith("records/regrades") for name in new)
    for name in new:
        assert name.split("/")[0] in IGNORED_HERE, f"trying the course wrote {name}"
        ignored = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", "-q",
                                  f"examples/course/{name}"], capture_output=True, timeout=30)
        assert ignored.returncode == 0, f"examples/course/{name} would show in `git status`"
    assert {"u-ann", "u-bob"} <= set(load_course(course).roster.students)  # read with the course's own roster
