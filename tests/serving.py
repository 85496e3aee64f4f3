"""Helpers for the course server's tests: a course folder in tmp_path, a real `checks serve` in a
subprocess on 127.0.0.1 (a free port), stopped with every process it started.
"""

from __future__ import annotations

import csv
import io
import os
import signal
import socket
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
REFERENCE = REPO / "examples" / "01_tensors" / "reference"
STUBS = REPO / "examples" / "01_tensors" / "stubs"


def course_folder(tmp: Path, *, extra: str = "", course: Path = REPO, roster: list[tuple[str, str, str]] | None = None,
                  assignments: str = '[assignment.01_tensors]\n', policy: str = 'due = "2030-06-30T23:59:00+00:00"\n'
                  ) -> Path:
    """A served course folder: course.toml (01_tensors only, one grading slot; its course policy's
    [policy] keys `policy`) and roster.csv."""
    folder = tmp / "course"
    folder.mkdir()
    (folder / "course.toml").write_text(f'title = "test course"\ncourse = "{course}"\njobs = 1\n{extra}\n{assignments}\n'
                                        f'[policy]\n{policy}')
    rows = roster or [("s001", "Ada Lovelace", "ada@example.edu"), ("s002", "Ben Bitdiddle", "ben@example.edu")]
    with open(folder / "roster.csv", "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["student_id", "name", "email"])
        writer.writerows(rows)
    return folder


def checks(*args: str, env: dict | None = None, input: str | None = None, cwd: Path | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess:
    """The `checks` command, as a user runs it, with this tree's package."""
    environment = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "120", **(env or {})}
    return subprocess.run([sys.executable, "-m", "checks", *args], capture_output=True, text=True, env=environment,
                          input=input, cwd=cwd, timeout=timeout)


def import_roster(folder: Path) -> dict[str, str]:
    """`checks roster import`; the tokens it handed out, by student id."""
    tokens = folder / "tokens.csv"
    done = checks("roster", "import", str(folder / "roster.csv"), "--tokens", str(tokens))
    assert done.returncode == 0, done.stdout + done.stderr
    assert tokens.stat().st_mode & 0o777 == 0o600
    return {row["student_id"]: row["token"] for row in csv.DictReader(tokens.open())}


def add_staff(folder: Path, login: str = "tina", role: str = "ta") -> str:
    done = checks("staff", "add", login, "--role", role, "--server", str(folder))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.split("(shown once): ")[1].split()[0]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def descendants(pid: int) -> set[int]:
    """Every process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@dataclass
class Server:
    """A running `checks serve`."""

    folder: Path
    port: int
    process: subprocess.Popen
    log: Path
    seen: set[int] = field(default_factory=set)  # every process of its tree seen so far

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self, token: str | None = None, address: str | None = None) -> httpx.Client:
        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if address:
            headers["X-Forwarded-For"] = address
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, follow_redirects=False)

    def remember(self) -> None:
        self.seen |= descendants(self.process.pid)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Stop it (SIGKILL: as a crash would); wait until every process of its tree is gone."""
        self.remember()
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        deadline = time.monotonic() + 20
        while any(alive(pid) for pid in self.seen) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [pid for pid in self.seen if alive(pid)]
        for pid in left:  # the test fails below; nothing is left behind either way
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert not left, f"processes of the server outlived it: {left}"


def start_server(folder: Path, *, wait_for_graders: bool = True, timeout: float = 120,
                 args: tuple[str, ...] = (), port: int | None = None) -> Server:
    """`checks serve FOLDER [ARGS]` on a free port of 127.0.0.1 (or `port`), ready to grade."""
    port = port or free_port()
    log = folder / f"server-{port}.log"
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    with open(log, "w") as out:
        process = subprocess.Popen([sys.executable, "-m", "checks", "serve", str(folder), "--port", str(port),
                                    "--proxy-headers", *args], stdout=out, stderr=subprocess.STDOUT, env=environment)
    server = Server(folder, port, process, log)
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the server exited ({process.returncode}): {log.read_text()}")
        try:
            health = httpx.get(f"{server.url}/healthz", timeout=2).json()
            if health["graders_ready"] or not wait_for_graders:
                server.remember()
                return server
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            server.kill()
            raise AssertionError(f"the server was not ready in {timeout} s: {log.read_text()}")
        time.sleep(0.2)


def folder_zip(folder: Path, names: tuple[str, ...] = ("strides.py", "broadcasting.py", "quiz.toml")) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.write(folder / name, name)
    return buffer.getvalue()


def submit(http: httpx.Client, data: bytes, assignment: str = "01_tensors") -> httpx.Response:
    return http.post(f"/api/assignments/{assignment}/submissions",
                     files={"files": (f"{assignment}.zip", data, "application/zip")})


def wait_graded(http: httpx.Client, submission_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        reply = http.get(f"/api/submissions/{submission_id}").json()
        if reply["status"] not in ("queued", "grading"):
            return reply
        assert time.monotonic() < deadline, f"not graded in {timeout} s: {reply}"
        time.sleep(0.1)


def csrf_of(page: str) -> str:
    """The CSRF field of the first form on a page."""
    return page.split('name="csrf" value="')[1].split('"')[0]


def signed_in(server: Server, user: str, token: str, page: str = "/") -> tuple[httpx.Client, str]:
    """A browser session of `user` (signed in through the login form) and the CSRF token of `page`."""
    http = server.client()
    reply = http.post("/login", data={"user": user, "token": token, "csrf": csrf_of(http.get("/login").text)})
    assert reply.status_code == 303, reply.text
    return http, csrf_of(http.get(page).text)
