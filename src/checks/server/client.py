"""The student's side of the course server: `checks login`, `checks submit`, `checks fetch` and
`%checks submit`. Needs only httpx (the light student install), never the server's extras.

The server's URL and the token are kept in the user's config folder ($XDG_CONFIG_HOME/checks, else
~/.config/checks), in a file only its owner can read (0600).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

CREDENTIALS_FILE = "server.json"
POLL_SECONDS = 0.25
LONG_POLL = 25.0  # seconds the server holds a status request until the result is there
WAIT_SECONDS = 600.0


class ServerError(Exception):
    """The server refused or could not be reached; str() says why. `retry_after`: seconds, for a 429."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Credentials:
    url: str
    token: str
    user: str


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "checks"


def save_credentials(credentials: Credentials) -> Path:
    """Written to a new file with 0600 and renamed over the old one: never readable by others."""
    folder = config_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / CREDENTIALS_FILE
    temp = folder / f".{CREDENTIALS_FILE}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump({"url": credentials.url, "token": credentials.token, "user": credentials.user}, out)
    os.chmod(temp, 0o600)
    os.replace(temp, path)
    return path


def load_credentials() -> Credentials:
    path = config_dir() / CREDENTIALS_FILE
    try:
        data = json.loads(path.read_text())
        return Credentials(str(data["url"]), str(data["token"]), str(data.get("user", "")))
    except (OSError, ValueError, KeyError, TypeError):
        raise ServerError(f"not signed in to a course server ({path} is missing or unreadable): "
                          "run `checks login URL` with the token the course staff gave you") from None


def _url(base: str) -> str:
    base = base.strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ServerError(f"{base!r} is not a server URL: give it as http(s)://HOST[:PORT]")
    return base


def _check(response: httpx.Response) -> Any:
    if response.status_code < 400:
        return response.json() if response.headers.get("content-type", "").startswith("application/json") else None
    try:
        detail = response.json().get("error", response.text)
    except ValueError:
        detail = response.text.strip()
    retry = response.headers.get("retry-after")
    raise ServerError(f"the server said {response.status_code}: {detail}",
                      float(retry) if retry and retry.isdigit() else None)


def _client(credentials: Credentials | None = None, timeout: float = 30.0) -> httpx.Client:
    headers = {"Authorization": f"Bearer {credentials.token}"} if credentials else {}
    return httpx.Client(headers=headers, timeout=timeout)


def login(url: str, token: str) -> tuple[Credentials, Path]:
    """Check the token with the server, then keep it; (the credentials, where they are kept)."""
    base = _url(url)
    try:
        with _client() as http:
            reply = _check(http.post(f"{base}/api/login", json={"token": token.strip()}))
    except httpx.HTTPError as error:
        raise ServerError(f"cannot reach {base}: {error}") from None
    credentials = Credentials(base, token.strip(), reply["user"])
    return credentials, save_credentials(credentials)


def submit(assignment: str, zip_bytes: bytes, credentials: Credentials | None = None, *,
           grace: str | None = None) -> dict:
    """Upload a zip; the server's acknowledgement (id, status, queue position). `grace`: "use" or
    "none", the answer to a late upload's question whether to spend grace days (the server asks,
    with a 409 saying how many are left, where the course spends them only on request)."""
    credentials = credentials or load_credentials()
    try:
        with _client(credentials, timeout=120) as http:
            return _check(http.post(f"{credentials.url}/api/assignments/{assignment}/submissions",
                                    files={"files": (f"{assignment}.zip", zip_bytes, "application/zip")},
                                    data={"grace": grace} if grace else None))
    except httpx.HTTPError as error:
        raise ServerError(f"cannot reach {credentials.url}: {error}") from None


def status(submission_id: str, credentials: Credentials | None = None) -> dict:
    credentials = credentials or load_credentials()
    try:
        with _client(credentials) as http:
            return _check(http.get(f"{credentials.url}/api/submissions/{submission_id}"))
    except httpx.HTTPError as error:
        raise ServerError(f"cannot reach {credentials.url}: {error}") from None


def wait(submission_id: str, credentials: Credentials | None = None, timeout: float = WAIT_SECONDS) -> dict:
    """Ask (long polls) until the submission is settled for this student: graded (or the grader
    failed on it), or, while its hidden results are not shown, its public checks have run; ServerError after `timeout`."""
    credentials = credentials or load_credentials()
    deadline = time.monotonic() + timeout
    with _client(credentials, timeout=LONG_POLL + 30) as http:
        while True:
            try:
                reply = _check(http.get(f"{credentials.url}/api/submissions/{submission_id}",
                                        params={"wait": LONG_POLL}))
            except httpx.HTTPError as error:
                raise ServerError(f"cannot reach {credentials.url}: {error}") from None
            if reply.get("settled") or reply["status"] not in ("queued", "grading"):
                return reply
            if time.monotonic() > deadline:
                raise ServerError(f"not graded after {timeout:g} s; `checks submit --status {submission_id}` "
                                  "asks again later")
            time.sleep(POLL_SECONDS)  # only after a long poll that ended early (a server going away)


def fetch(assignment: str, credentials: Credentials | None = None) -> bytes:
    """The student release of an assignment, as a zip, once the server has it open."""
    credentials = credentials or load_credentials()
    try:
        with _client(credentials, timeout=120) as http:
            response = http.get(f"{credentials.url}/api/assignments/{assignment}/distribution")
    except httpx.HTTPError as error:
        raise ServerError(f"cannot reach {credentials.url}: {error}") from None
    _check(response)
    return response.content
