"""The tool's key pair: made once in the course folder, readable by its owner only.

lti/tool-private.pem is written with O_EXCL and mode 0600 (never over a file, never through a
link); a key file anyone else may read is refused rather than used. The public half, as a JWKS,
is what the LMS is told (`checks lti key` prints it; the course server serves it).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from checks.course.assignment import CourseError

KEY_DIR = "lti"
PRIVATE_KEY = "tool-private.pem"


@dataclass(frozen=True)
class ToolKey:
    """The tool's key pair, in memory (PEM text); `path` is where the private half lives."""

    path: Path
    private_pem: str
    public_pem: str

    def __repr__(self) -> str:  # never the private key in a log or a traceback
        return f"ToolKey(path={str(self.path)!r})"

    def jwks(self) -> dict:
        """The public key as a JSON Web Key Set, with the key id the tool's assertions carry: what
        the platform verifies them with. Never the private key."""
        from pylti1p3.registration import Registration

        return {"keys": [dict(Registration.get_jwk(self.public_pem))]}


def key_path(folder: Path) -> Path:
    return folder / KEY_DIR / PRIVATE_KEY


def tool_key(folder: Path, *, create: bool = False) -> ToolKey:
    """The course's tool key (made when `create` and there is none yet)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = key_path(folder)
    if not path.exists() and not path.is_symlink():
        if not create:
            raise CourseError(f"{path} does not exist: `checks lti key` makes the tool's key pair")
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
            out.flush()
            os.fsync(out.fileno())
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise CourseError(f"{path} is not a regular file: the tool's key is read only from a file checks made")
    if info.st_mode & 0o077:
        raise CourseError(f"{path} may be read by others (mode {stat.S_IMODE(info.st_mode):o}): `chmod 600 {path}`, "
                          "and make a new key (and register it again) if it may have been copied")
    private_pem = path.read_text(encoding="ascii")
    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    public_pem = key.public_key().public_bytes(serialization.Encoding.PEM,
                                               serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return ToolKey(path, private_pem, public_pem)
