"""The student's client treats every server string as data (issue 49): a hostile server on
127.0.0.1 (http.server in a thread, canned replies) answers the real `checks login`, `submit` and
`fetch`. An id with terminal sequences or rich markup is refused and never printed raw; an id
that is a path never goes into a URL; a reply of any wrong shape is a one-line error, never a
traceback; a release is read and unpacked streamed, within caps, and nothing is left on a refusal.
"""

from __future__ import annotations

import io
import json
import resource
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from serving import REPO, checks

ESCAPES = "\x1b[2J\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://evil.example\x1b\\[link=http://evil.example]x[/link]"


class Hostile:
    """Canned replies by (method, path): (status, content type, body bytes or a callable giving
    chunks); every request's method and path is kept, in order."""

    def __init__(self) -> None:
        self.replies: dict[tuple[str, str], tuple[int, str, object]] = {}
        self.seen: list[tuple[str, str]] = []
        hostile = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                path = self.path.split("?")[0]
                hostile.seen.append((self.command, path))
                status, kind, body = hostile.replies.get((self.command, path), (404, "application/json",
                                                                                b'{"error": "no"}'))
                self.send_response(status)
                self.send_header("content-type", kind)
                if callable(body):
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    try:
                        for chunk in body():
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.write(b"0\r\n\r\n")
                    except OSError:  # the client hung up at its cap
                        pass
                    return
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def json(self, method: str, path: str, value: object, status: int = 200) -> None:
        self.replies[(method, path)] = (status, "application/json", json.dumps(value).encode())


@pytest.fixture
def hostile(tmp_path):
    server = Hostile()
    server.thread.start()
    config = tmp_path / "config" / "checks"
    config.mkdir(parents=True)
    (config / "server.json").write_text(json.dumps({"url": server.url, "token": "secret-token", "user": "ada"}))
    try:
        yield server, {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    finally:
        server.server.shutdown()
        server.server.server_close()
        server.thread.join(timeout=10)


UPLOAD = ("POST", "/api/assignments/01_tensors/submissions")
SUBMIT = ("submit", "01_tensors", str(REPO / "assignments" / "01_tensors"), "--course", str(REPO))


def acknowledged(submission_id: object) -> dict:
    return {"id": submission_id, "assignment": "01_tensors", "status": "queued", "settled": False, "position": 1,
            "url": "/submissions/x", "hidden_shown": True, "visibility": ""}


def one_line_error(done) -> str:
    shown = done.stdout + done.stderr
    assert done.returncode == 1, shown
    assert "Traceback" not in shown and "\x1b" not in shown and "\x07" not in shown, shown
    errors = [line for line in done.stdout.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, shown
    return errors[0]


def test_an_id_with_terminal_sequences_or_markup_is_refused_never_printed_raw(hostile):
    server, env = hostile
    server.json(*UPLOAD, acknowledged(ESCAPES), status=202)
    done = checks(*SUBMIT, "--no-wait", env=env)
    assert "is not one" in one_line_error(done)
    assert "evil.example" not in done.stdout.replace("\\x1b]8;;http://evil.example", "")  # no live link
    assert server.seen == [UPLOAD]


def test_an_id_that_is_a_path_never_goes_into_a_url(hostile):
    server, env = hostile
    server.json(*UPLOAD, acknowledged("../../admin/users"), status=202)
    server.json("GET", "/admin/users", {"status": "graded", "settled": True})
    assert "'../../admin/users' as a submission id" in one_line_error(checks(*SUBMIT, env=env))
    assert server.seen == [UPLOAD]
    assert "you gave" in one_line_error(checks("submit", "--status", "../../admin/users", env=env))
    assert server.seen == [UPLOAD]


@pytest.mark.parametrize("status_reply", [
    b"not json at all",
    b"[1, 2, 3]",
    b'{"id": "abc"}',
    b'{"id": "abc", "status": 3}',
    b'{"id": "abc", "status": "graded", "settled": true, "url": "//evil.example/x"}',
    b'{"id": "abc", "status": "graded", "settled": true, "result": {"questions": "x"}, "url": "/s/abc"}',
    b'{"id": "abc", "status": "graded", "settled": true, "url": "/s/abc", "result": {"name": "a", "assignment": '
    b'"01_tensors", "questions": [{"qid": "q", "score": "lots", "max_score": 1, "feedback": "", '
    b'"passed_cases": 0, "total_cases": 1}]}}',
    b"[" * 100_000,
])
def test_a_malformed_reply_is_a_one_line_error(hostile, status_reply):
    server, env = hostile
    server.json(*UPLOAD, acknowledged("abc"), status=202)
    server.replies[("GET", "/api/submissions/abc")] = (200, "application/json", status_reply)
    assert "malformed" in one_line_error(checks(*SUBMIT, env=env)) or status_reply[:1] != b"{"


def test_what_the_server_says_is_shown_as_text(hostile):
    server, env = hostile
    server.json(*UPLOAD, acknowledged("abc"), status=202)
    server.json("GET", "/api/submissions/abc", {"id": "abc", "assignment": "01_tensors", "status": "failed",
                                                "settled": True, "message": f"boom {ESCAPES}", "url": "/s/abc"})
    done = checks(*SUBMIT, env=env)
    assert done.returncode == 1 and "\x1b" not in done.stdout and "\x07" not in done.stdout, done.stdout
    assert "boom \\x1b[2J" in done.stdout
    server.replies[UPLOAD] = (403, "application/json", json.dumps({"error": f"no {ESCAPES}"}).encode())
    refused = one_line_error(checks(*SUBMIT, env=env))
    assert "the server said 403: no \\x1b[2J" in refused


def test_login_shows_the_user_name_as_text_and_refuses_a_reply_without_one(hostile, tmp_path):
    server, env = hostile
    server.json("POST", "/api/login", {"user": f"ada{ESCAPES}"})
    done = checks("login", server.url, input="secret-token\n", env=env)
    assert done.returncode == 0 and "\x1b" not in done.stdout and "as ada\\x1b[2J" in done.stdout, done.stdout
    server.json("POST", "/api/login", {"user": ["ada"]})
    assert "malformed" in one_line_error(checks("login", server.url, input="secret-token\n", env=env))


def release(entries: dict[str, int]) -> bytes:
    """A release zip: each entry `size` zero bytes (compressed: a few kB a MiB)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, size in entries.items():
            with archive.open(name, "w", force_zip64=True) as entry:
                for _ in range(size // 2**20):
                    entry.write(bytes(2**20))
                entry.write(bytes(size % 2**20))
    return buffer.getvalue()


def limited_memory(mib: int):
    """For the `checks fetch` process: at most `mib` MiB of data (heap), so a release inflated in
    memory fails where one streamed to disk does not."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (mib * 2**20, mib * 2**20))
    return limit


DISTRIBUTION = ("GET", "/api/assignments/01_tensors/distribution")


@pytest.mark.long  # 300 MiB through zlib and onto disk: `make test-long`
def test_fetch_streams_a_large_entry_to_disk_within_bounded_memory(hostile, tmp_path):
    import subprocess

    server, env = hostile
    server.replies[DISTRIBUTION] = (200, "application/zip", release({"01_tensors/README.md": 3 * 2**20,
                                                                     "01_tensors/data.bin": 300 * 2**20}))
    out = tmp_path / "mine"
    done = subprocess.run([sys.executable, "-m", "checks", "fetch", "01_tensors", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, preexec_fn=limited_memory(200),
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO / "src"), **env})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "data.bin").stat().st_size == 300 * 2**20 and (out / "README.md").stat().st_size == 3 * 2**20
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "data.bin"]


@pytest.mark.parametrize("name", ["01_tensors/../../escape.txt", "01_tensors/../escape.txt", "/01_tensors/escape.txt",
                                  "01_tensors/..\\escape.txt", "elsewhere.txt", "01_tensorsX/escape.txt",
                                  "01_tensors//etc/escape.txt", "01_tensors/a/../../escape.txt"])
def test_fetch_refuses_a_release_with_an_entry_outside_its_folder_and_writes_nothing(hostile, tmp_path, name):
    server, env = hostile
    server.replies[DISTRIBUTION] = (200, "application/zip", release({"01_tensors/README.md": 10, name: 10}))
    out = tmp_path / "work" / "mine"
    error = one_line_error(checks("fetch", "01_tensors", "--out", str(out), env=env))
    assert "outside 01_tensors/" in error and "nothing written" in error, error
    assert not out.exists() and not list(tmp_path.rglob("escape.txt"))


@pytest.mark.parametrize("reply, says", [
    (("application/zip", lambda: (bytes(2**20) for _ in range(70))), "over 64 MiB"),
    (("application/zip", b"PK\x03\x04 not a zip"), "not a zip"),
    pytest.param(("application/zip", None), "unpacks to over 512 MiB", marks=pytest.mark.long),  # 600 MiB inflated
])
def test_fetch_refuses_what_is_over_its_caps_or_not_a_zip_and_leaves_nothing(hostile, tmp_path, reply, says):
    server, env = hostile
    kind, body = reply
    if body is None:
        body = release({"01_tensors/a.bin": 300 * 2**20, "01_tensors/b.bin": 300 * 2**20})
    server.replies[DISTRIBUTION] = (200, kind, body)
    out = tmp_path / "mine"
    assert says in one_line_error(checks("fetch", "01_tensors", "--out", str(out), env=env))
    assert not out.exists()


def test_unpacking_a_release_onto_a_folder_that_is_there_leaves_the_folder_alone(tmp_path):
    """The command checks first; the library refuses too, and never removes what it did not make,
    whether the release is good or refused."""
    from checks.server.client import ServerError, unpack_release

    out = tmp_path / "mine"
    out.mkdir()
    (out / "work.py").write_text("mine")
    for data in (release({"01_tensors/README.md": 10}), release({"01_tensors/../escape.txt": 10}), b"not a zip"):
        with pytest.raises(ServerError):
            unpack_release(data, "01_tensors", out)
        assert (out / "work.py").read_text() == "mine"
