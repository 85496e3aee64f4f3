"""An LTI 1.3 platform on lti1p3platform (PyPI; the `lms-test` extra), an implementation
independent of the tool's PyLTI1p3, run by the tests in a process of its own on 127.0.0.1:

    python tests/lti1p3_platform.py --tool http://127.0.0.1:PORT --seconds 300

It prints one JSON line (its URL, issuer, client id, deployment id) and serves until the time is
up or it is stopped. lti1p3platform does the protocol: the OIDC login it starts at the tool, the
id_token it signs (with the NRPS and AGS claims), the platform's JWKS, the OAuth2 token endpoint
(the tool's client assertion checked against the tool's JWKS, fetched from the tool's own URL,
/lti/jwks) and the access token each service call must carry. The services' lists are what this
file adds, as the specs say a platform may write them: Names and Role Provisioning and the line
items container in pages, the next page in a `Link` header (RFC 8288) whose `rel` is unquoted on
one page, a list of relations on another, quoted on the third, at URLs with upper-case letters
read case-sensitively (a lower-cased one is a 404). A score is checked as AGS asks (the fields,
an ISO 8601 timestamp with sub-seconds) and one not newer than the last for its (line item,
user) is ignored, as AGS lets a platform do. GET /_state shows what it holds (for the test).
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request

CLIENT_ID = "Checks-Tool-7"
DEPLOYMENT = "Deployment-A"
COURSE = "/Courses/C-17"  # every service URL is under it: upper case, read as written
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
LINEITEM_SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
                   "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"]
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
RELS = ["rel=next", 'rel="prev next"', 'rel="next"']  # page 1, 2, 3 ... (then round again)
MEMBERS = [
    {"user_id": "U-Ann", "name": "Ann Lee", "email": "ann@example.edu", "roles": [LEARNER], "status": "Active"},
    {"user_id": "U-Tina", "name": "Tina TA", "email": "tina@example.edu", "roles": [INSTRUCTOR], "status": "Active"},
    {"user_id": "U-Bob", "name": "Bob Ray", "email": "bob@example.edu", "roles": [LEARNER], "status": "Active"},
    {"user_id": "U-Gone", "name": "Gone", "email": "gone@example.edu", "roles": [LEARNER], "status": "Inactive"},
    {"user_id": "U-Cy", "name": "Cy Dee", "email": "cy@example.edu", "roles": [LEARNER], "status": "Active"},
    {"user_id": "U-Dot", "name": "Dot Eve", "email": "dot@example.edu", "roles": [LEARNER], "status": "Active"},
    {"user_id": "U-Eve", "name": "Eve Fox", "email": "eve@example.edu", "roles": [LEARNER], "status": "Active"},
]
PAGE = 2  # members and line items a page: the members fill four pages


def _instant(stamp: Any) -> datetime | None:
    """An AGS timestamp: ISO 8601 with sub-second precision and a zone, else None."""
    if not isinstance(stamp, str) or not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(Z|[+-]\d\d:\d\d)", stamp):
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class State:
    """What the platform holds: line items, scores taken and ignored, the requests it answered."""

    def __init__(self, url: str, tool: str) -> None:
        self.url, self.tool = url, tool
        self.lock = threading.Lock()
        self.lineitems: dict[str, dict] = {}
        for n, tag in enumerate(("quiz-1", "quiz-2", "quiz-3"), start=1):  # the course's other columns first
            self.add_lineitem({"label": tag.title(), "tag": tag, "scoreMaximum": 5}, f"Item-{n}")
        self.single = self.add_lineitem({"label": "Tensors (its own link)", "scoreMaximum": 10}, "Own-Link-Item")
        self.scores: list[dict] = []
        self.ignored: list[dict] = []
        self.latest: dict[tuple[str, str], datetime] = {}
        self.requests: list[list[str]] = []

    def add_lineitem(self, item: dict, name: str | None = None) -> str:
        url = f"{self.url}{COURSE}/LineItems/{name or f'Made-{len(self.lineitems) + 1}'}"
        self.lineitems[url] = {**item, "id": url}
        return url


class Platform(LTI1P3PlatformConfAbstract):
    """lti1p3platform's configuration: one registration, the tool at `tool` (its login, launch
    and JWKS URLs on the course server)."""

    def init_platform_config(self, **kwargs: Any) -> None:
        url, tool, private, public = kwargs["url"], kwargs["tool"], kwargs["private"], kwargs["public"]
        self._registration = (Registration().set_iss(url).set_client_id(CLIENT_ID).set_deployment_id(DEPLOYMENT)
                              .set_launch_url(f"{tool}/lti/launch").set_oidc_login_url(f"{tool}/lti/login")
                              .set_tool_key_set_url(f"{tool}/lti/jwks").set_platform_public_key(public)
                              .set_platform_private_key(private))

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        return self._registration


class _Request(Request):
    def build_metadata(self, request: Any) -> dict:
        return request


class _Login(OIDCLoginAbstract):
    def set_lti_message_hint(self, **kwargs: Any) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str) -> str:
        return url


class _Launch(LTIAdvantageMessageLaunchAbstract):
    def render_launch_form(self, launch_data: dict, **kwargs: Any) -> str:
        fields = "".join(f'<input type="hidden" name="{name}" value="{html.escape(str(launch_data[name]))}">'
                         for name in ("id_token", "state"))
        return f'<form method="post" action="{html.escape(launch_data["launch_url"])}">{fields}</form>'


class Handler(BaseHTTPRequestHandler):
    platform: Platform
    state: State
    timeout = 10

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: Any, content_type: str = "application/json", headers: dict | None = None) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _allowed(self, scopes: list[str]) -> bool:
        token = self.headers.get("Authorization", "")
        if not token.startswith("Bearer "):
            return False
        try:
            return self.platform.validate_token(token.removeprefix("Bearer "), allowed_scopes=scopes)
        except Exception:  # noqa: BLE001 - lti1p3platform raises several kinds for a bad token
            return False

    def _page(self, items: list, query: dict[str, str], path: str) -> tuple[list, dict] | None:
        if query and (query.get("Cursor") != "XyZ" or not query.get("Page", "").isdigit()):
            return None
        page, total = int(query.get("Page", "1")), max(1, -(-len(items) // PAGE))
        rel = RELS[(page - 1) % len(RELS)]
        first = f'<{self.state.url}{path}?Page=1&Cursor=XyZ>; rel="first", ' if "prev" in rel else ""
        links = {"Link": f"{first}<{self.state.url}{path}?Page={page + 1}&Cursor=XyZ>; {rel}"} if page < total else {}
        return items[(page - 1) * PAGE:page * PAGE], links

    def do_GET(self) -> None:  # noqa: N802
        url, state = urlsplit(self.path), self.state
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        with state.lock:
            state.requests.append(["GET", self.path])
        if url.path == "/_state":
            with state.lock:
                return self._send(200, {"lineitems": state.lineitems, "scores": state.scores, "ignored": state.ignored,
                                        "requests": state.requests, "single": state.single})
        if url.path == "/jwks":
            return self._send(200, self.platform.get_jwks())
        if url.path == "/start":  # the LMS's page with the tool's link: the third-party initiated login
            login = _Login(_Request({}), self.platform)
            login.set_lti_message_hint(hint=query.get("link", "link-1"))
            return self._send(302, "", headers={"Location": login.initiate_login(query["user"])})
        if url.path == "/auth":  # the tool's authentication request: the launch, signed by lti1p3platform
            launch = _Launch(_Request({"method": "GET", "get_data": query, "form_data": {}}), self.platform)
            user = next((m for m in MEMBERS if m["user_id"] == query.get("login_hint")), None)
            if user is None:
                return self._send(400, {"error": "unknown login_hint"})
            launch.set_user_data(user["user_id"], user["roles"], user["name"], user["email"])
            launch.set_resource_link_claim(query.get("lti_message_hint", "link-1"), title="Tensors")
            launch.set_launch_context_claim("C-17", context_title="Tensors")
            launch.set_nrps(f"{state.url}{COURSE}/Memberships")
            if query.get("lti_message_hint") == "own-item":  # a link with its own line item, no container
                launch.set_ags(None, state.single, allow_creating_lineitems=False)  # type: ignore[arg-type]
            else:
                launch.set_ags(f"{state.url}{COURSE}/LineItems")
            try:
                return self._send(200, launch.lti_launch(), "text/html")
            except Exception as error:  # noqa: BLE001 - a preflight lti1p3platform refuses
                return self._send(400, {"error": f"{type(error).__name__}: {error}"})
        if url.path == f"{COURSE}/Memberships":
            if not self._allowed([NRPS_SCOPE]):
                return self._send(401, {"error": "unauthorized"})
            paged = self._page(MEMBERS, query, url.path)
            if paged is None:
                return self._send(404, {"error": f"no such page: {self.path}"})
            members, links = paged
            return self._send(200, {"id": f"{state.url}{COURSE}/Memberships", "context": {"id": "C-17"},
                                    "members": members}, "application/vnd.ims.lti-nrps.v2.membershipcontainer+json",
                              links)
        if url.path == f"{COURSE}/LineItems":
            if not self._allowed(LINEITEM_SCOPES):
                return self._send(401, {"error": "unauthorized"})
            with state.lock:
                items = [item for item in state.lineitems.values() if item["id"] != state.single]
            paged = self._page(items, query, url.path)
            if paged is None:
                return self._send(404, {"error": f"no such page: {self.path}"})
            return self._send(200, paged[0], "application/vnd.ims.lis.v2.lineitemcontainer+json", paged[1])
        if f"{state.url}{url.path}" in state.lineitems:
            if not self._allowed(LINEITEM_SCOPES):
                return self._send(401, {"error": "unauthorized"})
            return self._send(200, state.lineitems[f"{state.url}{url.path}"], "application/vnd.ims.lis.v2.lineitem+json")
        return self._send(404, {"error": f"not found: {self.path}"})

    def do_POST(self) -> None:  # noqa: N802
        url, state = urlsplit(self.path), self.state
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with state.lock:
            state.requests.append(["POST", self.path])
        if url.path == "/token":
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            try:
                return self._send(200, self.platform.get_access_token(form))
            except Exception as error:  # noqa: BLE001 - lti1p3platform's refusals are of several kinds
                return self._send(401, {"error": "invalid_client", "error_description": f"{type(error).__name__}: "
                                                                                          f"{error}"})
        if url.path == f"{COURSE}/LineItems":
            if not self._allowed(LINEITEM_SCOPES[:1]):
                return self._send(401, {"error": "unauthorized"})
            item = json.loads(body)
            if not isinstance(item.get("scoreMaximum"), (int, float)) or item["scoreMaximum"] <= 0 or not item.get("label"):
                return self._send(400, {"error": "a line item needs a label and a scoreMaximum above 0"})
            with state.lock:
                made = state.add_lineitem(item)
                return self._send(201, state.lineitems[made], "application/vnd.ims.lis.v2.lineitem+json")
        if url.path.endswith("/scores") and f"{state.url}{url.path.removesuffix('/scores')}" in state.lineitems:
            if not self._allowed([SCORE_SCOPE]):
                return self._send(401, {"error": "unauthorized"})
            if self.headers.get("Content-Type") != "application/vnd.ims.lis.v1.score+json":
                return self._send(415, {"error": "a score is application/vnd.ims.lis.v1.score+json"})
            score, item = json.loads(body), f"{state.url}{url.path.removesuffix('/scores')}"
            at = _instant(score.get("timestamp"))
            if (at is None or not score.get("userId") or score.get("activityProgress") not in
                    ("Initialized", "Started", "InProgress", "Submitted", "Completed")
                    or score.get("gradingProgress") not in ("FullyGraded", "Pending", "PendingManual", "Failed",
                                                            "NotReady")
                    or ("scoreGiven" in score and "scoreMaximum" not in score)):
                return self._send(400, {"error": f"not an AGS score: {score}"})
            with state.lock:
                last = state.latest.get((item, score["userId"]))
                if last is not None and at <= last:
                    state.ignored.append({**score, "lineitem": item})
                else:
                    state.latest[(item, score["userId"])] = at
                    state.scores.append({**score, "lineitem": item})
            return self._send(204, "")
        return self._send(404, {"error": f"not found: {self.path}"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tool", required=True, help="the course server's URL (its /lti/login, /lti/launch, /lti/jwks)")
    parser.add_argument("--seconds", type=float, default=300, help="how long to serve at most")
    args = parser.parse_args(argv)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    url = f"http://127.0.0.1:{server.server_address[1]}"
    Handler.state = State(url, args.tool)
    Handler.platform = Platform(url=url, tool=args.tool, private=private, public=public)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    print(json.dumps({"url": url, "issuer": url, "client_id": CLIENT_ID, "deployment_id": DEPLOYMENT,
                      "course": COURSE}), flush=True)
    try:
        time.sleep(args.seconds)
    except KeyboardInterrupt:
        pass
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
