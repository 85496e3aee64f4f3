"""`checks serve` past one machine, for real: a PostgreSQL cluster (Debian's binaries, initdb in a
temp folder, 127.0.0.1), a Dask scheduler and two workers, and two `checks serve --scheduler`
processes on different ports serving one course. A burst of submissions is split across both
servers; mid-burst one server process is killed (SIGKILL) while it grades, and so is the Dask
worker that is grading. Every acknowledged submission is then graded exactly once (one recorded
result each, in the database's `gradings`) with the right score: the dead server's claim ran out
and the other server graded it, and Dask ran the dead worker's task again elsewhere.
"""

from __future__ import annotations

import contextlib
import threading
import time

import httpx
import pytest

pytest.importorskip("starlette")
pytest.importorskip("distributed")
pytest.importorskip("psycopg")

from cluster import local_dask  # noqa: E402
from test_serve_security import _csrf  # noqa: E402
from serving import REFERENCE, STUBS, course_folder, folder_zip, import_roster, start_server, submit  # noqa: E402

from checks.server.storage import DONE, GRADING, Storage, submissions  # noqa: E402

STUDENTS, EACH = 6, 4  # 24 submissions; the reference scores 100, the stubs 0
LEASE = 3  # seconds: the dead server's claim comes back this soon
EXPECTED = {"reference": 100, "stubs": 0}


def grading_by(storage: Storage, pid: int) -> str | None:
    """A submission that the server process `pid` holds a claim on now."""
    with storage.engine.connect() as conn:
        rows = conn.execute(submissions.select().where(submissions.c.status == GRADING)).mappings().all()
    return next((row["id"] for row in rows if f"-{pid}-" in (row["claimed_by"] or "")), None)


@pytest.mark.long  # PostgreSQL, a Dask cluster and two servers: `make test-long`, which CI runs
def test_two_servers_on_postgresql_grade_every_acknowledged_submission_once(postgres_cluster, tmp_path):
    url = postgres_cluster.create("fault_test")
    roster = [(f"s{n:03}", f"Student {n}", f"s{n}@example.edu") for n in range(STUDENTS)]
    folder = course_folder(tmp_path, roster=roster,
                           extra=f'storage = "{url}"\n[rate]\nsubmissions = 100\n[queue]\nlease_seconds = {LEASE}\n')
    tokens = list(import_roster(folder).values())
    storage = Storage(url)
    zips = {kind: folder_zip(path) for kind, path in (("reference", REFERENCE), ("stubs", STUBS))}
    with local_dask(tmp_path / "dask", workers=2) as dask, contextlib.ExitStack() as stopping:
        servers = []
        for _ in range(2):  # each stopped at the end, whatever fails (SIGTERM; the killed one is gone already)
            servers.append(start_server(folder, args=("--scheduler", dask.scheduler)))
            stopping.callback(servers[-1].kill, 15)
        doomed, survivor = servers
        # the web processes keep no sessions of their own: one signed in at one is signed in at the other
        with doomed.client() as http:
            csrf = _csrf(http.get("/login").text)
            assert http.post("/login", data={"user": "s000", "token": tokens[0], "csrf": csrf}).status_code == 303
            with survivor.client() as other:
                other.cookies = http.cookies
                home = other.get("/")
                assert home.status_code == 200 and "My submissions" in home.text  # not sent to /login
        acknowledged: dict[str, str] = {}  # submission id -> its kind
        refused: list[str] = []
        lock = threading.Lock()

        def student(n: int) -> None:
            """Submits EACH times through its server; once that one is gone, through the other (as a proxy would)."""
            server = servers[n % 2]
            for i in range(EACH):
                kind = "reference" if (n + i) % 2 == 0 else "stubs"
                for _ in range(3):
                    try:
                        with server.client(tokens[n]) as http:
                            reply = submit(http, zips[kind])
                    except httpx.HTTPError:  # the server died under it: never acknowledged, so sent again
                        server = survivor
                        continue
                    if reply.status_code == 202:
                        with lock:
                            acknowledged[reply.json()["id"]] = kind
                    else:
                        refused.append(f"{reply.status_code} {reply.text}")
                    break
                time.sleep(0.5)

        threads = [threading.Thread(target=student, args=(n,)) for n in range(STUDENTS)]
        victim = worker_killed = None
        try:
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + 90
            while victim is None and time.monotonic() < deadline:  # kill a server while it grades
                victim = grading_by(storage, doomed.process.pid)
                time.sleep(0.05)
            assert victim is not None, "the first server never graded anything"
            doomed.kill()  # SIGKILL; its own processes must go with it
            from distributed import Client

            with Client(dask.scheduler, timeout=10, set_as_default=False) as client:
                while worker_killed is None and time.monotonic() < deadline:  # and a Dask worker while it grades
                    busy = [address for address, keys in client.processing().items()
                            if any(str(key).startswith("checks-grade-") for key in keys)]
                    if busy:
                        worker_killed = busy[0]
                        dask.kill_worker(worker_killed)
                    time.sleep(0.05)
                assert worker_killed is not None, "no Dask worker was ever seen grading"
                for thread in threads:
                    thread.join()
                assert not refused, refused
                assert len(acknowledged) >= STUDENTS * EACH - STUDENTS  # at most one lost per student, unacknowledged

                deadline = time.monotonic() + 180
                pending = set(acknowledged)
                while pending and time.monotonic() < deadline:
                    pending = {i for i in pending if storage.submission(i).status not in (DONE, "failed")}
                    time.sleep(0.2)
                assert not pending, f"{len(pending)} acknowledged submissions not graded: {survivor.log.read_text()}"
                assert len(client.scheduler_info()["workers"]) == 1  # the killed worker did not come back
        finally:
            for thread in threads:
                thread.join(timeout=60)

    for submission_id, kind in acknowledged.items():
        row = storage.submission(submission_id)
        assert row.status == DONE, (row.status, row.error)
        assert sum(q["score"] for q in row.result["questions"]) == EXPECTED[kind], submission_id
    recorded = [submission_id for submission_id, _, _ in storage.gradings()]
    assert sorted(recorded) == sorted(set(recorded))  # no submission has two recorded results
    assert set(acknowledged) <= set(recorded)
    row = storage.submission(victim)  # the one the dead server held: taken over by the other, graded once
    (grading,) = storage.gradings(victim)
    assert row.attempts >= 2 and f"-{doomed.process.pid}-" not in grading[1]
    storage.close()
    print(f"\n{len(acknowledged)} acknowledged; server {doomed.process.pid} killed holding {victim} "
          f"(graded again: attempt {row.attempts}, by {grading[1]}); Dask worker {worker_killed} killed")
