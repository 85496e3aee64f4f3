"""Every bad input is a 4xx with a reason, never a 500 (issue 44), on a real server: zip entries
that name no file, an empty zip (refused without costing a try), and storage that fails under a
request (a database error, a full disk): 503 with Retry-After, nothing acknowledged lost.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import zipfile

import httpx
import pytest

from serving import REFERENCE, SRC, Server, course_folder, folder_zip, free_port, import_roster, start_server, submit

pytest.importorskip("starlette")

RATE = "[rate]\nsubmissions = 2\nwindow_seconds = 3600\n"
IDLE = "[limits]\nidle_seconds = 2\n"


def _zip(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(zipfile.ZipInfo(name), b"x = 1\n")
    return buffer.getvalue()


def _listed(http: httpx.Client) -> set[str]:
    return {row["id"] for row in http.get("/api/submissions").json()}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = course_folder(tmp_path_factory.mktemp("bad-input"), extra=RATE + IDLE)
    tokens = import_roster(folder)
    server = start_server(folder)
    yield server, tokens
    server.kill(15)


@pytest.mark.parametrize("names, words", [
    (["."], "names no file"), (["./."], "names no file"), ([""], "names no file"),
    ([], "holds no files"), (["folder/"], "holds no files"),
], ids=["dot", "dot-slash-dot", "empty-name", "empty-zip", "only-a-folder"])
def test_zips_that_name_no_file_are_refused_with_a_reason_and_cost_no_try(served, names, words):
    server, tokens = served
    with server.client(tokens["s001"]) as http:
        for _ in range(3):  # more than the two tries the rate allows: none is spent
            reply = submit(http, _zip(names))
            assert reply.status_code == 400, reply.text
            assert words in reply.json()["error"] and ".upload-" not in reply.json()["error"]
        assert _listed(http) == set()


def _database_error(server: Server, token: str, execute) -> None:
    """A submission whose row the database refuses (its table renamed away meanwhile) is 503 with
    Retry-After, keeps no file and costs no try; the ones acknowledged before and after are kept."""
    with server.client(token) as http:
        kept = submit(http, folder_zip(REFERENCE))
        assert kept.status_code == 202, kept.text
        execute("ALTER TABLE submissions RENAME TO submissions_away")
        try:
            failed = submit(http, folder_zip(REFERENCE))
            assert failed.status_code == 503, failed.text
            assert int(failed.headers["retry-after"]) > 0 and "send it again" in failed.json()["error"]
        finally:
            execute("ALTER TABLE submissions_away RENAME TO submissions")
        again = submit(http, folder_zip(REFERENCE))
        assert again.status_code == 202, again.text  # the failed one cost no try (two per hour)
        assert _listed(http) == {kept.json()["id"], again.json()["id"]}
    stored = {path.stem for path in (server.folder / "data" / "uploads" / "01_tensors").glob("*.zip")}
    assert stored == {kept.json()["id"], again.json()["id"]}  # the failed one left no file


def test_a_database_error_is_503_with_retry_after_and_loses_nothing(served):
    server, tokens = served

    def execute(statement: str) -> None:
        with sqlite3.connect(server.folder / "data" / "checks.sqlite", timeout=30) as database:
            database.execute(statement)
        database.close()

    _database_error(server, tokens["s002"], execute)


@pytest.mark.long  # a PostgreSQL cluster: `make test-long`
def test_a_postgresql_error_is_503_with_retry_after_and_loses_nothing(postgres_cluster, tmp_path):
    psycopg = pytest.importorskip("psycopg")
    url = postgres_cluster.create("bad_input")
    folder = course_folder(tmp_path, extra=f'storage = "{url}"\n' + RATE)
    tokens = import_roster(folder)
    server = start_server(folder)

    def execute(statement: str) -> None:
        with psycopg.connect(url, autocommit=True) as database:
            database.execute(statement)

    try:
        _database_error(server, tokens["s001"], execute)
    finally:
        server.kill(15)


def test_a_body_that_stops_coming_times_out(served):
    """A client that sends part of a body and goes quiet is answered 408 and its connection closed."""
    server, tokens = served
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as slow:
        slow.sendall(b"POST /api/assignments/01_tensors/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Authorization: Bearer " + tokens["s001"].encode() + b"\r\n"
                     b"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 1000\r\n\r\n--b\r\n")
        started = time.monotonic()
        answer = b""
        while chunk := slow.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert time.monotonic() - started < 25  # the 2 s idle limit, not the client's patience


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="a real full disk needs a tmpfs mounted in a mount namespace (root, util-linux unshare)")
def test_a_full_disk_is_503_with_retry_after_and_loses_nothing(tmp_path):
    """The uploads folder on a tmpfs of 64 KiB, for this server only: an upload that does not fit is 503."""
    folder = course_folder(tmp_path, extra=RATE)
    tokens = import_roster(folder)
    uploads = folder / "data" / "uploads" / "01_tensors"
    uploads.mkdir(parents=True)
    port = free_port()
    log = folder / "server.log"
    command = (f"mount -t tmpfs -o size=64k tmpfs {uploads} && exec {sys.executable} -m checks serve {folder} "
               f"--port {port}")
    with open(log, "w") as out:
        process = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", command],
                                   stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(SRC)})
    server = Server(folder, port, process, log)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, log.read_text()
            try:
                httpx.get(f"{server.url}/healthz", timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        server.remember()
        big = io.BytesIO()
        with zipfile.ZipFile(big, "w", zipfile.ZIP_STORED) as archive:
            for name in ("strides.py", "broadcasting.py", "quiz.toml"):
                archive.write(REFERENCE / name, name)
            archive.writestr("padding.txt", os.urandom(200_000).hex()[:200_000])
        with server.client(tokens["s001"]) as http:
            for _ in range(3):  # more than the two tries the rate allows: none is spent
                full = submit(http, big.getvalue())
                assert full.status_code == 503, full.text
                assert int(full.headers["retry-after"]) > 0 and "disk is full" in full.json()["error"]
            small = submit(http, folder_zip(REFERENCE))
            assert small.status_code == 202, small.text
            assert _listed(http) == {small.json()["id"]}
    finally:
        server.kill(15)
    assert "Traceback" not in log.read_text()
