"""A simulated LTI 1.3 platform (an LMS), served on 127.0.0.1 by the tests: its own RSA key and
JWKS, an OIDC authorisation endpoint that answers with a signed id_token, an OAuth2 token endpoint
that checks the tool's client assertion against the tool's registered JWKS (signature, audience,
expiry, a jti used once), Names and Role Provisioning (two pages), and Assignment and Grade
Services (line items, scores). Real HTTP, real JWT signing: nothing of the tool is mocked.

Knobs for the refusals a tool must make: `sign_with_other_key`, `expires_in`, `audience`; for
paging (RFC 8288 Link headers): `page_size` (members and line items a page), `link_style` (how
`rel` is written: quoted, unquoted, or in a list of relations), and every next page's URL has
upper-case letters the platform reads case-sensitively (a lower-cased URL is a 404); and
`single_lineitem` (a launch's AGS claim names only that `lineitem`, no container); and
`score_failures` (a user id -> an HTTP status the score of that user is refused with, or
"timeout": the score is taken but the answer comes `slow_seconds` later, after the tool gave up).
The server runs in a thread with a time limit on each request and is always shut down by the
context manager.
"""

from __future__ import annotations

import html
import json
import re
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwcrypto.jwk import JWK

CLIENT_ID = "checks-tool"
DEPLOYMENT = "deployment-1"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
AGS_SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
              "https://purl.imsglobal.org/spec/lti-ags/scope/score"]


def new_key() -> tuple[str, str]:
    """An RSA key pair as PEM text (private, public)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


def _instant(stamp: str) -> datetime | None:
    """An AGS score timestamp: ISO 8601 with a time zone and sub-second precision, else None."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(Z|[+-]\d\d:\d\d)", stamp):
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class Platform:
    """The platform's state; `url` once started."""

    def __init__(self, tool_jwks: dict, launch_url: str) -> None:
        self.private, public = new_key()
        self.other_private, _ = new_key()  # a key that is not in the JWKS
        jwk = json.loads(JWK.from_pem(public.encode()).export_public())
        self.jwks = {"keys": [{**jwk, "kid": "platform-1", "alg": "RS256", "use": "sig"}]}
        self.tool_jwks, self.launch_urls = tool_jwks, [launch_url]
        self.url = ""
        self.members = [
            {"user_id": "u-ann", "name": "Ann Lee", "email": "ann@example.edu", "roles": [LEARNER], "status": "Active",
             "lis_person_sourcedid": "SIS-ANN"},
            {"user_id": "u-bob", "name": "Bob Ray", "email": "bob@example.edu", "roles": [LEARNER], "status": "Active"},
            {"user_id": "u-tina", "name": "Tina TA", "email": "tina@example.edu", "roles": [INSTRUCTOR],
             "status": "Active"},
            {"user_id": "u-gone", "name": "Gone", "email": "gone@example.edu", "roles": [LEARNER], "status": "Inactive"},
        ]
        self.lineitems: dict[str, dict] = {}
        self.scores: list[dict] = []
        self.tokens: dict[str, list[str]] = {}
        self.used_jti: set[str] = set()
        self.requests: list[tuple[str, str, bytes]] = []  # method, path, body: what the tool sent
        self.sign_with_other_key = False
        self.expires_in = 300
        self.audience: str | None = None
        self.page_size = 2
        self.latest: dict[tuple[str, str], datetime] = {}  # (line item, user) -> the newest score's timestamp
        self.ignored: list[dict] = []  # scores not newer than the one before (AGS lets a platform ignore them)
        self.link_style = "quoted"  # or "unquoted", "list"
        self.single_lineitem: str | None = None
        self.score_failures: dict[str, int | str] = {}
        self.slow_seconds = 4.0
        self.context = "course-1"  # the LMS course the next launch comes from: another's services are under /<it>/

    def link(self, path: str, page: int, total: int) -> dict[str, str]:
        """The Link header of page `page` of `total` (none on the last): the next page's URL has a
        query the platform reads case-sensitively."""
        if page >= total:
            return {}
        rel = {"quoted": 'rel="next"', "unquoted": "rel=next", "list": 'rel="prev next"'}[self.link_style]
        first = f'<{self.url}{path}?Page=1&Cursor=AbC>; rel="first", ' if self.link_style == "list" else ""
        return {"Link": f'{first}<{self.url}{path}?Page={page + 1}&Cursor=AbC>; {rel}'}

    def paged(self, items: list, query: dict[str, str]) -> tuple[list, int, int] | None:
        """(this page's items, its number, how many pages); None for a page URL the platform did not write."""
        if query and (query.get("Cursor") != "AbC" or not query.get("Page", "").isdigit()):
            return None
        page, total = int(query.get("Page", "1")), max(1, -(-len(items) // self.page_size))
        return items[(page - 1) * self.page_size:page * self.page_size], page, total

    @property
    def issuer(self) -> str:
        return self.url

    def lti_table(self, launch_url: str, *, endpoints: bool = True) -> str:
        """course.toml's [lti] table for a tool registered with this platform (`endpoints`: with
        the service endpoints a launch would name)."""
        table = (f'[lti]\nissuer = "{self.issuer}"\nclient_id = "{CLIENT_ID}"\ndeployment_ids = ["{DEPLOYMENT}"]\n'
                 f'auth_login_url = "{self.url}/auth"\nauth_token_url = "{self.url}/token"\n'
                 f'key_set_url = "{self.url}/jwks"\nlaunch_url = "{launch_url}"\n')
        return table + (f'memberships_url = "{self.url}/nrps"\nlineitems_url = "{self.url}/lineitems"\n'
                        if endpoints else "")

    def services_url(self) -> str:
        """Where the services of the LMS course the next launch comes from are (self.context)."""
        return self.url if self.context == "course-1" else f"{self.url}/{self.context}"

    def id_token(self, nonce: str, user: str) -> str:
        now = int(time.time())
        services = self.services_url()
        member = next((m for m in self.members if m["user_id"] == user), {"name": "", "email": "", "roles": []})
        claims = {
            "iss": self.issuer, "aud": self.audience or CLIENT_ID, "sub": user, "iat": now - 5,
            "exp": now + self.expires_in, "nonce": nonce, "name": member["name"], "email": member["email"],
            "https://purl.imsglobal.org/spec/lti/claim/deployment_id": DEPLOYMENT,
            "https://purl.imsglobal.org/spec/lti/claim/message_type": "LtiResourceLinkRequest",
            "https://purl.imsglobal.org/spec/lti/claim/version": "1.3.0",
            "https://purl.imsglobal.org/spec/lti/claim/target_link_uri": self.launch_urls[0],
            "https://purl.imsglobal.org/spec/lti/claim/resource_link": {"id": "rl-1", "title": "01_tensors"},
            "https://purl.imsglobal.org/spec/lti/claim/roles": member["roles"],
            "https://purl.imsglobal.org/spec/lti/claim/context": {"id": self.context, "title": "Tensors"},
            "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": {
                "context_memberships_url": f"{services}/nrps", "service_versions": ["2.0"]},
            "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": (
                {"scope": AGS_SCOPES, "lineitems": f"{services}/lineitems"} if self.single_lineitem is None else
                {"scope": [AGS_SCOPES[2]], "lineitem": self.single_lineitem}),
        }
        key = self.other_private if self.sign_with_other_key else self.private
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": "platform-1"})

    def check_assertion(self, assertion: str) -> None:
        """The tool's client assertion: signed by its registered key, for our token endpoint, fresh, once."""
        kid = jwt.get_unverified_header(assertion).get("kid")
        key = next((k for k in self.tool_jwks["keys"] if k.get("kid") == kid), None)
        if key is None:
            raise ValueError(f"no tool key {kid!r}")
        public = JWK(**key).export_to_pem()
        claims = jwt.decode(assertion, public, algorithms=["RS256"], audience=f"{self.url}/token", issuer=CLIENT_ID,
                            options={"require": ["exp", "iat", "jti", "sub"]})
        if claims["jti"] in self.used_jti:
            raise ValueError("jti used before")
        self.used_jti.add(claims["jti"])


class _Handler(BaseHTTPRequestHandler):
    platform: Platform
    timeout = 10  # seconds a request may take to arrive

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

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _scopes(self) -> list[str]:
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        return self.platform.tokens.get(token, [])

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        p = self.platform
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        p.requests.append(("GET", self.path, b""))
        if url.path == "/jwks":
            return self._send(200, p.jwks)
        if url.path == "/auth":
            ok = (query.get("client_id") == CLIENT_ID and query.get("redirect_uri") in p.launch_urls
                  and query.get("response_type") == "id_token" and query.get("scope") == "openid"
                  and query.get("response_mode") == "form_post" and query.get("nonce"))
            if not ok:
                return self._send(400, {"error": "invalid_request"})
            token = p.id_token(query["nonce"], query.get("login_hint", ""))
            form = (f'<form method="post" action="{html.escape(query["redirect_uri"])}">'
                    f'<input type="hidden" name="id_token" value="{token}">'
                    f'<input type="hidden" name="state" value="{html.escape(query["state"])}"></form>')
            return self._send(200, form, "text/html")
        if url.path == "/nrps":
            if NRPS_SCOPE not in self._scopes():
                return self._send(401, {"error": "unauthorized"})
            paged = p.paged(p.members, query)
            if paged is None:
                return self._send(404, {"error": f"no such page: {self.path}"})
            members, page, total = paged
            return self._send(200, {"id": f"{p.url}/nrps", "context": {"id": "course-1"}, "members": members},
                              "application/vnd.ims.lti-nrps.v2.membershipcontainer+json", p.link("/nrps", page, total))
        if url.path in p.lineitems or f"{p.url}{url.path}" in p.lineitems:
            if not set(AGS_SCOPES[:2]) & set(self._scopes()):
                return self._send(401, {"error": "unauthorized"})
            return self._send(200, p.lineitems[f"{p.url}{url.path}"], "application/vnd.ims.lis.v2.lineitem+json")
        if url.path == "/lineitems":
            if not set(AGS_SCOPES[:2]) & set(self._scopes()):
                return self._send(401, {"error": "unauthorized"})
            paged = p.paged(list(p.lineitems.values()), query)
            if paged is None:
                return self._send(404, {"error": f"no such page: {self.path}"})
            items, page, total = paged
            return self._send(200, items, "application/vnd.ims.lis.v2.lineitemcontainer+json",
                              p.link("/lineitems", page, total))
        return self._send(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        p = self.platform
        body = self._body()
        p.requests.append(("POST", self.path, body))
        url = urlsplit(self.path)
        if url.path == "/token":
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            try:
                assert form.get("grant_type") == "client_credentials"
                assert form.get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
                p.check_assertion(form.get("client_assertion", ""))
            except (AssertionError, ValueError, jwt.InvalidTokenError) as error:
                return self._send(401, {"error": "invalid_client", "error_description": str(error)})
            token = uuid.uuid4().hex
            p.tokens[token] = form.get("scope", "").split()
            return self._send(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                                    "scope": form.get("scope", "")})
        if url.path == "/lineitems":
            if AGS_SCOPES[0] not in self._scopes():
                return self._send(401, {"error": "unauthorized"})
            item = json.loads(body)
            item["id"] = f"{p.url}/lineitems/{len(p.lineitems) + 1}"
            p.lineitems[item["id"]] = item
            return self._send(201, item, "application/vnd.ims.lis.v2.lineitem+json")
        match = re.fullmatch(r"/lineitems/(\d+)/scores", url.path)
        if match:
            if AGS_SCOPES[2] not in self._scopes() or f"{p.url}/lineitems/{match[1]}" not in p.lineitems:
                return self._send(401, {"error": "unauthorized"})
            score = json.loads(body)
            failure = p.score_failures.get(score.get("userId", ""))
            if isinstance(failure, int):
                return self._send(failure, {"error": f"refused for this test: {failure}"})
            required = {"userId", "scoreGiven", "scoreMaximum", "activityProgress", "gradingProgress", "timestamp"}
            if not required <= set(score) or score["scoreGiven"] > score["scoreMaximum"]:
                return self._send(400, {"error": "bad score"})
            item, at = f"{p.url}/lineitems/{match[1]}", _instant(score["timestamp"])
            if at is None:
                return self._send(400, {"error": f"timestamp {score['timestamp']!r} is not ISO 8601 with sub-seconds"})
            last = p.latest.get((item, score["userId"]))
            if last is not None and at <= last:  # AGS: a score not newer than the last one is ignored
                p.ignored.append({**score, "lineitem": item})
                return self._send(200, {})
            p.latest[(item, score["userId"])] = at
            p.scores.append({**score, "lineitem": item})
            if failure == "timeout":
                time.sleep(p.slow_seconds)
                try:  # the tool gave up and closed the connection: nobody to answer
                    return self._send(200, {})
                except (BrokenPipeError, ConnectionResetError):
                    return None
            return self._send(200, {})
        return self._send(404, {"error": "not found"})


@contextmanager
def running(tool_jwks: dict, launch_url: str) -> Iterator[Platform]:
    """The platform, served on 127.0.0.1 (a free port) until the block ends."""
    platform = Platform(tool_jwks, launch_url)
    handler = type("Handler", (_Handler,), {"platform": platform})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    platform.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield platform
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def main(argv: list[str] | None = None) -> int:
    """Serve the simulated platform for a while, for trying `checks lti` by hand (docs/policy.md):
    its members are the course's roster (lms_id as the user id), the tool key the course's."""
    import argparse
    import csv as csv_module
    import pathlib

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--course", type=pathlib.Path, required=True, help="the course folder (course.toml, roster)")
    parser.add_argument("--seconds", type=float, default=600, help="how long to serve (default 600)")
    args = parser.parse_args(argv)
    key_file = args.course / "lti" / "tool-private.pem"
    if not key_file.is_file():
        parser.error(f"{key_file} does not exist: run `checks --course {args.course} lti key` first")
    from checks.lti.keys import tool_key

    jwks = tool_key(args.course).jwks()
    with running(jwks, "https://checks.example.edu/lti/launch") as platform:
        rows = list(csv_module.DictReader((args.course / "roster.csv").open(encoding="utf-8")))
        platform.members = [{"user_id": row["lms_id"], "name": row["name"], "email": row["email"], "roles": [LEARNER],
                             "status": "Active"} for row in rows if row.get("lms_id")]
        print(f"simulated platform on {platform.url} for {args.seconds:g} s; put this in {args.course / 'course.toml'}:"
              f"\n\n{platform.lti_table('https://checks.example.edu/lti/launch')}", flush=True)
        try:
            time.sleep(args.seconds)
        except KeyboardInterrupt:
            pass
        for score in platform.scores:
            print(f"score received: {score['userId']} {score['scoreGiven']:g} / {score['scoreMaximum']:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
