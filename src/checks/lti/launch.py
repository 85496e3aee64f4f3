"""The LTI 1.3 launch, as library calls a web front end makes (the course server, or a test's
browser): `login` answers the platform's third-party initiated login with the redirect to its
OIDC authorisation endpoint (and the state cookie to set); `launch` checks the id_token the
platform posts back and returns who launched, from where, and the service endpoints.

PyLTI1p3 does the checking; around it, what it leaves to its host: state kept in a SQLite file
in the course folder (several processes may serve one course), a nonce that is consumed when it
is checked (PyLTI1p3's own check leaves it valid: a replayed id_token would pass), the expiry
and issue time required in every id_token, and HTTP calls with a time limit. The service
endpoints a staff member's launch names are kept in the same file (`keep_endpoints`): the roster
and grade passback use them where course.toml's [lti] names none. A student's launch never names
them (from an LMS course of their own, it would send the class's grades there), and where
course.toml names the LMS course (`context_id`), a launch from any other is refused.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import jwt
import requests
from pylti1p3.cookie import CookieService
from pylti1p3.exception import LtiException, OIDCException
from pylti1p3.launch_data_storage.base import LaunchDataStorage
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.request import Request
from pylti1p3.session import SessionService

from checks.course import inert
from checks.course.assignment import CourseError

HTTP_SECONDS = 10.0  # every call to the platform
STORE_FILE = "data/lti.sqlite"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
ENDPOINTS_KEY = "checks-service-endpoints"  # in the Store, without expiry: the latest launch's
ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
CONTEXT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/context"


class LtiError(CourseError):
    """A launch or service call the tool refused or the platform failed; str() says why."""


class TimedSession(requests.Session):
    """requests, with a time limit on every call (PyLTI1p3 sets none)."""

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        kwargs.setdefault("timeout", HTTP_SECONDS)
        return super().request(method, url, *args, **kwargs)


class Store(LaunchDataStorage[Any]):
    """PyLTI1p3's state (nonces, states, launches) in a SQLite file, with expiry."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires REAL)")

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        try:
            yield db
        finally:
            db.close()

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str) -> Any:
        with self._db() as db:
            row = db.execute("SELECT value FROM kv WHERE key = ? AND (expires IS NULL OR expires > ?)",
                             (self._prepare_key(key), time.time())).fetchone()
        return None if row is None else json.loads(row[0])

    def set_value(self, key: str, value: Any, exp: int | None = None) -> None:
        with self._db() as db:
            db.execute("DELETE FROM kv WHERE expires IS NOT NULL AND expires <= ?", (time.time(),))
            db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?, ?)",
                       (self._prepare_key(key), json.dumps(value), time.time() + exp if exp else None))

    def check_value(self, key: str) -> bool:
        return self.get_value(key) is not None

    def consume(self, key: str) -> bool:
        """True once: the key is removed as it is found (atomically, across processes)."""
        with self._db() as db:
            gone = db.execute("DELETE FROM kv WHERE key = ? AND (expires IS NULL OR expires > ?)",
                              (self._prepare_key(key), time.time())).rowcount
        return gone == 1


class _Session(SessionService):
    """A nonce is good for one launch: checking it uses it up."""

    def check_nonce(self, nonce: str) -> bool:
        return self.data_storage.consume(self._get_key("nonce", nonce))  # type: ignore[attr-defined]


class _Request(Request):
    def __init__(self, params: dict[str, str], secure: bool = True) -> None:
        self._params, self._secure = params, secure

    @property
    def session(self) -> dict:
        return {}

    def is_secure(self) -> bool:
        return self._secure

    def get_param(self, key: str) -> str:
        return self._params.get(key, "")


class _Cookies(CookieService):
    """The browser's cookies, as the request brought them; what to set, kept for the response."""

    def __init__(self, given: dict[str, str]) -> None:
        self.given, self.to_set = given, {}

    def _name(self, name: str) -> str:
        return f"{self._cookie_prefix}-{name}"

    def get_cookie(self, name: str) -> str | None:
        return self.given.get(self._name(name))

    def set_cookie(self, name: str, value: str | int, exp: int | None = 3600) -> None:
        self.to_set[self._name(name)] = str(value)


class _Redirect(Redirect[str]):
    def __init__(self, location: str) -> None:
        self.location = location

    def do_redirect(self) -> str:
        return self.location

    def do_js_redirect(self) -> str:
        return self.location

    def set_redirect_url(self, location: str) -> None:
        self.location = location

    def get_redirect_url(self) -> str:
        return self.location


class _Login(OIDCLogin):
    def get_redirect(self, url: str) -> _Redirect:
        return _Redirect(url)


class _Launch(MessageLaunch):
    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)


@dataclass(frozen=True)
class LoginRedirect:
    """Where to send the browser (the platform's authorisation endpoint), and the cookies to set."""

    url: str
    cookies: dict[str, str]


@dataclass(frozen=True)
class Launch:
    """A checked launch: who, with which roles, in which course, and the services it offers."""

    user_id: str  # the platform's id for the user (sub): the roster's lms_id
    name: str
    email: str
    roles: tuple[str, ...]
    context_id: str
    memberships_url: str  # Names and Role Provisioning ("" when not offered)
    ags: dict[str, Any] = field(default_factory=dict)  # Assignment and Grade Services claim ({} when not offered)
    claims: dict[str, Any] = field(default_factory=dict)

    @property
    def staff(self) -> bool:
        return any(role.endswith(("#Instructor", "#TeachingAssistant", "#Administrator")) for role in self.roles)


def store_for(folder: Path) -> Store:
    return Store(folder / STORE_FILE)


def keep_endpoints(store: Store, done: Launch, *, by: str, now: float | None = None) -> None:
    """Keep the service endpoints a staff member's checked launch names (those it names; the others
    stay as they were), so that staff can sync the roster and post grades without writing them in
    course.toml. `by`: the staff member, as the tool knows them (never the LMS's claimed roles):
    the caller keeps no student's launch."""
    kept = kept_endpoints(store)
    found = {"memberships_url": done.memberships_url, "lineitems_url": str(done.ags.get("lineitems") or ""),
             "lineitem": str(done.ags.get("lineitem") or "")}
    if not any(found.values()):
        return
    kept.update({key: value for key, value in found.items() if value})
    if found["lineitem"]:  # a link's own line item, with the scopes the platform gave for it
        kept["ags_scope"] = [str(scope) for scope in done.ags.get("scope") or []]
    kept.update({"context_id": done.context_id, "by": by, "at": time.time() if now is None else now})
    store.set_value(ENDPOINTS_KEY, kept)


def kept_endpoints(store: Store) -> dict[str, Any]:
    """The endpoints the latest staff launch named: memberships_url, lineitems_url, lineitem (and
    its ags_scope), context_id, by, at ({}: none yet, or only those kept before a launch had to be
    staff's to name them, which anyone on the roster's could: a staff launch names them again)."""
    value = store.get_value(ENDPOINTS_KEY)
    return dict(value) if isinstance(value, dict) and value.get("by") else {}


def _registered(conf: Any, issuer: Any, step: str) -> None:
    """LtiError naming the issuer, unless the course registered it (PyLTI1p3 raises a bare
    Exception for an unknown one: a 500 to the browser)."""
    try:
        known = bool(issuer) and isinstance(issuer, str) and conf.find_registration_by_issuer(issuer) is not None
    except Exception:  # noqa: BLE001 - PyLTI1p3's "iss ... not found in settings" is a bare Exception
        known = False
    if not known:
        shown = inert.visible(str(issuer), keep="")[:200] if issuer else "(none)"
        raise LtiError(f"LTI {step} refused: the issuer {shown!r} is not registered with this tool "
                       "(course.toml's [lti] issuer names the one platform it takes)")


def _claimed_issuer(id_token: str) -> Any:
    """The `iss` an id_token claims, unverified: only to find whose keys verify it."""
    try:
        return jwt.decode(id_token, options={"verify_signature": False}).get("iss")
    except jwt.InvalidTokenError:
        return None


def login(conf: Any, params: dict[str, str], store: Store, *, launch_url: str) -> LoginRedirect:
    """Answer a third-party initiated login (iss, login_hint, target_link_uri, client_id,
    lti_message_hint): a state and a nonce are made and kept, and the browser is sent on."""
    _registered(conf, params.get("iss"), "login")
    request, cookies = _Request(params), _Cookies({})
    session = _Session(request)
    session.set_data_storage(store)
    try:
        url = _Login(request, conf, session, cookies).redirect(launch_url)
    except (OIDCException, LtiException) as error:
        raise LtiError(f"LTI login refused: {error}") from None
    return LoginRedirect(url, cookies.to_set)


def launch(conf: Any, params: dict[str, str], cookies: dict[str, str], store: Store, *,
           context_id: str = "") -> Launch:
    """Check the platform's post (id_token, state) with the browser's cookies: signature, expiry,
    issuer, audience, deployment, message type, the state, a nonce not used before, and, where
    `context_id` names the course's LMS course, that the launch came from it."""
    if params.get("id_token"):
        _registered(conf, _claimed_issuer(params["id_token"]), "launch")
    request = _Request(params)
    session = _Session(request)
    session.set_data_storage(store)
    message = _Launch(request, conf, session, _Cookies(cookies), requests_session=TimedSession())
    message.set_jwt_verify_options({"verify_aud": False,  # the audience is checked as the client id, below
                                    "require": ["exp", "iat", "iss", "aud", "sub", "nonce"]})
    try:
        data = message.get_launch_data()
    except LtiException as error:
        raise LtiError(f"LTI launch refused: {error}") from None
    client_id = conf.find_registration_by_issuer(data["iss"]).get_client_id()
    audience = data["aud"] if isinstance(data["aud"], list) else [data["aud"]]
    if client_id not in audience or (len(audience) > 1 and data.get("azp") != client_id):
        raise LtiError(f"LTI launch refused: the id_token is for {audience}, not this tool ({client_id})")
    context = data.get(CONTEXT_CLAIM)
    came_from = str(context.get("id", "")) if isinstance(context, dict) else ""
    if context_id and came_from != context_id:
        shown = inert.visible(came_from, keep="")[:200] or "(none)"
        raise LtiError(f"LTI launch refused: it came from the LMS course {shown!r}, and this tool serves "
                       f"{context_id!r} only (course.toml's [lti] context_id)")
    return Launch(str(data["sub"]), str(data.get("name", "")), str(data.get("email", "")),
                  tuple(data.get(ROLES_CLAIM, [])), came_from,
                  str(data.get(NRPS_CLAIM, {}).get("context_memberships_url", "")), dict(data.get(AGS_CLAIM, {})),
                  dict(data))
