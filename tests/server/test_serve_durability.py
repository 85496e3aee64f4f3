"""A course server killed with SIGKILL at any moment loses no acknowledged submission and records
none twice; on restart, pending work resumes. The server is real, and so is the kill.
"""

from __future__ import annotations

import sqlite3
import threading
import time

import httpx
import pytest

from serving import REFERENCE, course_folder, folder_zip, import_roster, start_server, submit, wait_graded

pytest.importorskip("starlette")

from checks.server.storage import DONE, GRADING, QUEUED, Storage  # noqa: E402


@pytest.mark.long  # `make test-long`, which CI runs
def test_a_killed_server_loses_no_acknowledged_submission_and_resumes(tmp_path):
    folder = course_folder(tmp_path, extra="[rate]\nsubmissions = 100\n",
                           roster=[(f"s{n:03}", f"S {n}", f"s{n}@x") for n in range(4)])
    tokens = import_roster(folder)
    server = start_server(folder)
    acknowledged: list[str] = []
    lock = threading.Lock()
    data = folder_zip(REFERENCE)

    def student(token: str) -> None:
        with server.client(token) as http:
            for _ in range(8):
                try:
                    reply = submit(http, data)
                except httpx.HTTPError:
                    return  # the server is gone: this one was never acknowledged
                if reply.status_code == 202:
                    with lock:
                        acknowledged.append(reply.json()["id"])

    threads = [threading.Thread(target=student, args=(token,)) for token in tokens.values()]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # kill it while it grades one and more are arriving
            health = httpx.get(f"{server.url}/healthz").json()
            if health["grading"] and len(acknowledged) >= 6:
                break
            time.sleep(0.02)
        server.kill()  # SIGKILL; every process it started must go with it
        for thread in threads:
            thread.join()
        assert acknowledged
        with sqlite3.connect(folder / "data" / "checks.sqlite") as db:
            states = dict(db.execute("SELECT id, status FROM submissions"))
        assert set(acknowledged) <= set(states)  # every acknowledged upload is in the queue
        assert GRADING in states.values() or QUEUED in states.values()

        server = start_server(folder)  # resumes
        graded = {}
        with server.client(tokens["s000"]) as http:
            for submission_id in acknowledged:
                row = Storage(f"sqlite:///{folder / 'data' / 'checks.sqlite'}").submission(submission_id)
                assert row is not None and (folder / "data" / row.path).is_file()
        for token in tokens.values():
            with server.client(token) as http:
                for row in http.get("/api/submissions").json():
                    graded[row["id"]] = wait_graded(http, row["id"])
        assert set(acknowledged) <= set(graded)
        assert all(reply["status"] == DONE and sum(q["score"] for q in reply["result"]["questions"]) == 100
                   for reply in graded.values())
        with sqlite3.connect(folder / "data" / "checks.sqlite") as db:
            tries = [n for (n,) in db.execute("SELECT attempts FROM submissions")]
        if GRADING in states.values():  # the one being graded at the kill was graded again, once
            assert max(tries) == 2
        assert max(tries) <= 2
    finally:
        server.kill(15)


def test_only_the_claims_holder_records_a_result(tmp_path):
    """A grader whose claim was taken over (its server died and the work was queued again) cannot
    write its result over the new grader's: the submission is recorded once."""
    storage = Storage(f"sqlite:///{tmp_path / 'checks.sqlite'}")
    row = storage.add_submission("s001", "01_tensors", "uploads/x.zip", "0" * 64, 10, ["strides.py"])
    first = storage.claim("old", ["01_tensors"], 600)
    assert first is not None and first.id == row.id
    assert storage.claim("other", ["01_tensors"], 600) is None  # held: nobody else takes it
    assert storage.requeue_orphans() == 1  # the restart
    second = storage.claim("new", ["01_tensors"], 600)
    assert second is not None and second.attempts == 2
    assert storage.complete(row.id, "old", result={"late": True}, error=None) is False
    assert storage.complete(row.id, "new", result={"score": 1}, error=None) is True
    assert storage.complete(row.id, "new", result={"again": True}, error=None) is False
    assert storage.submission(row.id).result == {"score": 1}


def test_an_expired_lease_is_claimed_again(tmp_path):
    storage = Storage(f"sqlite:///{tmp_path / 'checks.sqlite'}")
    row = storage.add_submission("s001", "01_tensors", "uploads/x.zip", "0" * 64, 10, [])
    assert storage.claim("a", ["01_tensors"], 0.05) is not None
    time.sleep(0.1)
    again = storage.claim("b", ["01_tensors"], 600)
    assert again is not None and again.id == row.id
