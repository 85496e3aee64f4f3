"""The student's side of the course server: `checks login`, `checks submit`, `checks fetch` and
`%checks submit`. Needs only httpx (the light student install), never the server's extras.

The server's URL and the token are kept in the user's config folder ($XDG_CONFIG_HOME/checks, else
~/.config/checks), in a file only its owner can read (0600).

Every reply is data (issue 49): read up to a cap, never compressed, parsed and its shape checked
here, so that a malformed one is a one-line ServerError; a submission id is checked before it goes
into a URL (`../../admin/users` would send the token elsewhere); a release is unpacked entry by
entry, streamed, within caps. The CLI shows every string of a reply escaped (reports/render.plain).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import httpx

CREDENTIALS_FILE = "server.json"
POLL_SECONDS = 0.25
LONG_POLL = 25.0  # seconds the server holds a status request until the result is there
WAIT_SECONDS = 600.0
MIB = 2**20
MAX_REPLY_BYTES = 8 * MIB  # one JSON reply: a result with its feedback is tens of kB
MAX_RELEASE_BYTES = 64 * MIB  # an assignment's release, zipped
MAX_RELEASE_UNPACKED = 512 * MIB  # and unpacked, all entries together
MAX_RELEASE_ENTRIES = 5_000
ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a submission id (the server's are 22 URL-safe characters)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")  # an assignment's name, as it goes into a URL


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


def _check(response: httpx.Response, body: bytes) -> Any:
    """The reply's JSON (None where it is not JSON), or ServerError saying what the server refused."""
    if response.status_code < 400:
        if not response.headers.get("content-type", "").startswith("application/json"):
            return None
        try:
            return json.loads(body)
        except (ValueError, RecursionError):
            raise ServerError(f"the server's reply ({response.status_code}) is not the JSON it says it is") from None
    try:
        detail = json.loads(body).get("error")
    except (ValueError, RecursionError, AttributeError):
        detail = None
    if not isinstance(detail, str):
        detail = body[:500].decode("utf-8", errors="replace").strip()
    retry = response.headers.get("retry-after")
    raise ServerError(f"the server said {response.status_code}: {detail[:500]}",
                      float(retry) if retry and retry.isdigit() and len(retry) < 7 else None)


def _read(http: httpx.Client, method: str, url: str, *, limit: int = MAX_REPLY_BYTES,
          **request: Any) -> tuple[httpx.Response, bytes]:
    """The response and at most `limit` bytes of its body, as sent (no compression, which would
    inflate past the cap); ServerError past the cap."""
    with http.stream(method, url, **request) as response:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ServerError(f"the server's reply is compressed ({encoding[:40]}), which was not asked for: refused")
        body = bytearray()
        for chunk in response.iter_raw():
            body += chunk
            if len(body) > limit:
                raise ServerError(f"the server's reply is over {limit // MIB} MiB: refused")
    return response, bytes(body)


def _fields(reply: Any, what: str, **types: type | tuple[type, ...]) -> dict:
    """`reply` as a dict whose keys in `types` (those present, or all for a required `what`) have
    those types; ServerError saying which is wrong."""
    if not isinstance(reply, dict):
        raise ServerError(f"the server's reply to {what} is malformed: not a JSON object")
    for key, kinds in types.items():
        if key not in reply:
            continue
        value, kinds = reply[key], kinds if isinstance(kinds, tuple) else (kinds,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise ServerError(f"the server's reply to {what} is malformed: {key!r} is a {type(value).__name__}")
    return reply


def checked_id(submission_id: Any, where: str = "the server") -> str:
    """A submission id fit for a URL; ServerError for anything else (say a path: `../../admin`)."""
    if not isinstance(submission_id, str) or not ID.fullmatch(submission_id):
        shown = repr(submission_id)[:80].encode("ascii", "backslashreplace").decode()
        raise ServerError(f"{where} gave {shown} as a submission id, which is not one (letters, digits, - and _)")
    return submission_id


def _checked_name(assignment: str) -> str:
    if not NAME.fullmatch(assignment):
        raise ServerError(f"{assignment!r} is not an assignment's name")
    return assignment


def _submission(reply: Any, what: str = "a status request") -> dict:
    """A submission's status as the server sent it, its fields' types checked."""
    reply = _fields(reply, what, id=str, status=str, assignment=str, message=(str, type(None)), url=str,
                    visibility=str, hidden_shown=bool, settled=bool, result=(dict, type(None)),
                    public=(dict, type(None)), position=(int, type(None)))
    if "status" not in reply:
        raise ServerError(f"the server's reply to {what} is malformed: it has no status")
    checked_id(reply.get("id", "x"))
    url = reply.get("url", "/")
    if not url.startswith("/") or url.startswith("//"):
        raise ServerError(f"the server's reply to {what} is malformed: its page is not a path on the server")
    return reply


def _client(credentials: Credentials | None = None, timeout: float = 30.0) -> httpx.Client:
    headers = {"Accept-Encoding": "identity"}  # a reply read as sent: capped as it arrives (_read)
    if credentials:
        headers["Authorization"] = f"Bearer {credentials.token}"
    return httpx.Client(headers=headers, timeout=timeout)


def login(url: str, token: str) -> tuple[Credentials, Path]:
    """Check the token with the server, then keep it; (the credentials, where they are kept)."""
    base = _url(url)
    try:
        with _client() as http:
            reply = _check(*_read(http, "POST", f"{base}/api/login", json={"token": token.strip()}))
    except httpx.HTTPError as error:
        raise ServerError(f"cannot reach {base}: {error}") from None
    user = _fields(reply, "the login", user=str).get("user")
    if not isinstance(user, str) or not user or len(user) > 200:
        raise ServerError("the server's reply to the login is malformed: no user name")
    credentials = Credentials(base, token.strip(), user)
    return credentials, save_credentials(credentials)


def submit(assignment: str, zip_bytes: bytes, credentials: Credentials | None = None, *,
           grace: str | None = None) -> dict:
    """Upload a zip; the server's acknowledgement (id, status, queue position), its id checked.
    `grace`: "use" or "none", the answer to a late upload's question whether to spend grace days
    (the server asks, with a 409 saying how many are left, where the course spends them only on request)."""
    credentials = credentials or load_credentials()
    try:
        with _client(credentials, timeout=120) as http:
            reply = _check(*_read(http, "POST", f"{credentials.url}/api/assignments/{_checked_name(assignment)}/"
                                  "submissions", files={"files": (f"{assignment}.zip", zip_bytes, "application/zip")},
                                  data={"grace": grace} if grace else None))
    except httpx.HTTPError as error:
        raise ServerError(f"cannot reach {credentials.url}: {error}") from None
    reply = _submission(reply, "the upload")
    checked_id(reply.get("id"))
    return reply


def status(submission_id: str, credentials: Credentials | None = None) -> dict:
    credentials = credentials or load_credentials()
    checked_id(submission_id, "you")
    try:
        with _client(credentials) as http:
            return _submission(_check(*_read(http, "GET", f"{credentials.url}/api/submissions/{submission_id}")))
    except httpx.HTTPError as error:
        raise ServerError(f"cannot reach {credentials.url}: {error}") from None


def wait(submission_id: str, credentials: Credentials | None = None, timeout: float = WAIT_SECONDS) -> dict:
    """Ask (long polls) until the submission is settled for this student: graded (or the grader
    failed on it), or, while its hidden results are not shown, its public checks have run; ServerError after `timeout`."""
    credentials = credentials or load_credentials()
    checked_id(submission_id)
    deadline = time.monotonic() + timeout
    with _client(credentials, timeout=LONG_POLL + 30) as http:
        while True:
            try:
                reply = _submission(_check(*_read(http, "GET", f"{credentials.url}/api/submissions/{submission_id}",
                                                  params={"wait": LONG_POLL})))
            except httpx.HTTPError as error:
                raise ServerError(f"cannot reach {credentials.url}: {error}") from None
            if reply.get("settled") or reply["status"] not in ("queued", "grading"):
                return reply
            if time.monotonic() > deadline:
                raise ServerError(f"not graded after {timeout:g} s; `checks submit --status {submission_id}` "
                                  "asks again later")
            time.sleep(POLL_SECONDS)  # only after a long poll that ended early (a server going away)


def fetch(assignment: str, credentials: Credentials | None = None) -> bytes:
    """The student release of an assignment, as a zip (at most MAX_RELEASE_BYTES), once the server has it open."""
    credentials = credentials or load_credentials()
    try:
        with _client(credentials, timeout=120) as http:
            response, body = _read(http, "GET", f"{credentials.url}/api/assignments/{_checked_name(assignment)}/"
                                   "distribution", limit=MAX_RELEASE_BYTES)
    except httpx.HTTPError as error:
        raise ServerError(f"cannot reach {credentials.url}: {error}") from None
    _check(response, body)
    return body


def unpack_release(data: bytes, assignment: str, out: Path) -> int:
    """Write the entries of a release zip under `assignment/` into the new folder `out`, each
    streamed, within MAX_RELEASE_ENTRIES and MAX_RELEASE_UNPACKED (counted as inflated, whatever
    the zip's directory says). The number of files written; ServerError (and `out` removed, or
    never made) for a zip that is not one, breaks a cap, or holds an entry that would land
    outside `out`: a release is taken whole or not at all. A folder already at `out` is refused
    and left as it was."""
    prefix = f"{assignment}/"
    written = total = 0
    made = False  # only a folder made here is removed on a refusal, never one that was there
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
            if len(entries) > MAX_RELEASE_ENTRIES:
                raise ServerError(f"the release has {len(entries)} entries, over {MAX_RELEASE_ENTRIES}: refused")
            files = [(info, _release_path(info.filename, prefix)) for info in entries if not info.is_dir()]
            if out.exists():
                raise ServerError(f"{out} exists: a release is unpacked into a new folder only")
            out.mkdir(parents=True)
            made = True
            for info, relative in files:
                target = out.joinpath(*relative.parts)
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, open(target, "xb") as sink:
                    while chunk := source.read(MIB):
                        total += len(chunk)
                        if total > MAX_RELEASE_UNPACKED:
                            raise ServerError(f"the release unpacks to over {MAX_RELEASE_UNPACKED // MIB} MiB: refused")
                        sink.write(chunk)
                written += 1
    except ServerError:
        if made:
            shutil.rmtree(out, ignore_errors=True)
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError, ValueError) as error:
        if made:
            shutil.rmtree(out, ignore_errors=True)
        raise ServerError(f"the release the server sent is not a zip that can be unpacked "
                          f"({type(error).__name__}: {str(error)[:200]})") from None
    return written


def _release_path(name: str, prefix: str) -> PurePosixPath:
    """Where a release entry goes below the assignment's folder; ServerError for one that is not
    under `prefix` or would climb out of it (absolute, `..`, a backslash): nothing is written."""
    relative = PurePosixPath(name.removeprefix(prefix))
    if (not name.startswith(prefix) or relative.is_absolute() or ".." in relative.parts or "\\" in name
            or not relative.parts):
        raise ServerError(f"the release holds an entry outside {prefix}: {name[:200]!r}: refused, "
                          "nothing written")
    return relative
