"""The LMS registration: course.toml's [lti] table, checked, and the PyLTI1p3 tool configuration
made from it with the course's key.

```toml
[lti]
issuer = "https://canvas.instructure.com"           # the platform's iss
client_id = "10000000000042"                        # the tool's client id there (the id_token's aud)
deployment_ids = ["42:8865aa05b4b79b64a91a86042e43af5ea8ae79eb"]
auth_login_url = "https://sso.canvaslms.com/api/lti/authorize_redirect"   # OIDC authorisation
auth_token_url = "https://sso.canvaslms.com/login/oauth2/token"           # service access tokens
key_set_url = "https://sso.canvaslms.com/api/lti/security/jwks"           # the platform's JWKS
launch_url = "https://checks.example.edu/lti/launch"                      # the tool's redirect_uri
# memberships_url = "..."   # NRPS and AGS endpoints, for `checks lti roster|post` from the command
# lineitems_url = "..."     # line (a staff member's launch carries them; the course server keeps them)
# context_id = "..."        # the LMS course (the launch's context id): a launch from any other is refused
```

Every URL is https, but on 127.0.0.1 or localhost (a platform on this machine, as the tests run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from checks.course.assignment import CourseError

REQUIRED = ("issuer", "client_id", "deployment_ids", "auth_login_url", "auth_token_url", "key_set_url", "launch_url")
OPTIONAL = ("auth_audience", "memberships_url", "lineitems_url", "context_id")
URLS = ("auth_login_url", "auth_token_url", "key_set_url", "launch_url", "memberships_url", "lineitems_url")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class LtiConfig:
    issuer: str
    client_id: str
    deployment_ids: tuple[str, ...]
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    launch_url: str
    auth_audience: str = ""
    memberships_url: str = ""
    lineitems_url: str = ""
    context_id: str = ""  # the LMS course the tool serves ("": any of the registration's deployments)


def read_lti(table: Any, path: Path) -> LtiConfig:
    """course.toml's [lti] table (`path` names the file in every message)."""
    if not isinstance(table, dict) or not table:
        raise CourseError(f"{path} has no [lti] table: it names the LMS registration (docs/policy.md)")
    unknown = sorted(set(table) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise CourseError(f"{path}: unknown key {', '.join(f'`{k}`' for k in unknown)} in [lti] "
                          f"(known: {', '.join(REQUIRED + OPTIONAL)})")
    missing = [key for key in REQUIRED if key not in table]
    if missing:
        raise CourseError(f"{path}: [lti] has no {', '.join(f'`{k}`' for k in missing)}")
    for key, value in table.items():
        if key == "deployment_ids":
            if type(value) is not list or not value or not all(type(v) is str and v for v in value):
                raise CourseError(f"{path}: `deployment_ids` in [lti] must be a list of strings")
        elif type(value) is not str or (key in REQUIRED and not value):
            raise CourseError(f"{path}: `{key}` in [lti] must be a non-empty string")
        elif key in URLS and value:
            url = urlsplit(value)
            if url.scheme != "https" and not (url.scheme == "http" and url.hostname in LOCAL_HOSTS):
                raise CourseError(f"{path}: `{key}` in [lti] must be an https URL (http only on 127.0.0.1), "
                                  f"not {value!r}")
    return LtiConfig(**{**table, "deployment_ids": tuple(table["deployment_ids"])})


def tool_conf(config: LtiConfig, private_pem: str, public_pem: str):
    """PyLTI1p3's tool configuration: one registration, the course's key pair set in memory."""
    from pylti1p3.tool_config import ToolConfDict

    # one client per issuer: an id_token for another audience is then refused as such
    conf = ToolConfDict({config.issuer: {
        "default": True, "client_id": config.client_id, "auth_login_url": config.auth_login_url,
        "auth_token_url": config.auth_token_url, "auth_audience": config.auth_audience or None,
        "key_set_url": config.key_set_url, "key_set": None, "deployment_ids": list(config.deployment_ids)}})
    conf.set_private_key(config.issuer, private_pem)
    conf.set_public_key(config.issuer, public_pem)
    return conf


@dataclass(frozen=True)
class Registration:
    """The course's LMS registration, ready to use: its [lti] table and PyLTI1p3's configuration."""

    config: LtiConfig
    conf: Any  # pylti1p3.tool_config.ToolConfDict
    folder: Path

    @property
    def issuer(self) -> str:
        return self.config.issuer


def load_registration(folder: Path) -> Registration:
    """course.toml's [lti] in `folder`, with the course's tool key (which must exist already)."""
    import tomllib

    from checks.lti.keys import tool_key
    from checks.policy.config import COURSE_FILE

    path = folder / COURSE_FILE
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("lti") if path.is_file() else None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise CourseError(f"{path}: not valid TOML ({error})") from None
    config = read_lti(table, path)
    key = tool_key(folder)
    return Registration(config, tool_conf(config, key.private_pem, key.public_pem), folder)
