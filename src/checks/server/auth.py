"""Who is asking: tokens (argon2-hashed, only the hash stored), login backoff per address (for
wrong tokens only), and the CSRF token of a signed-in browser session.

A token is `<id>.<secret>`: the id finds the user's row, the secret is checked against its argon2
hash. A verified token is remembered (by its SHA-256, in this process only) so that the CLI's
polling does not pay argon2's cost on every request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from checks.server.storage import Storage, User

# A token's secret is 192 random bits: no hashing speed lets anyone guess it, so argon2's work
# factor (there against guessing passwords from a stolen hash) is kept small: the library's default
# costs 0.18 CPU-seconds a verification, which a class's first requests at a deadline would pay at
# once. Hashes made with other parameters still verify (argon2 writes them into each hash).
_hasher = PasswordHasher(time_cost=1, memory_cost=8 * 1024, parallelism=1)
MAX_BACKOFF = 900.0
_CACHE_SIZE = 4096


def new_token() -> tuple[str, str, str]:
    """(token to hand out, its public id, the hash to store)."""
    token_id = secrets.token_hex(8)
    token = f"{token_id}.{secrets.token_urlsafe(24)}"
    return token, token_id, _hasher.hash(token)


class Authenticator:
    """Checks tokens against the storage, remembering the ones it verified."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._verified: dict[bytes, tuple[str, str]] = {}  # sha256(token) -> (user id, hash it matched)
        self._lock = threading.Lock()

    def user_for(self, token: str) -> User | None:
        """The user whose token this is, or None (unknown, wrong, or replaced by a newer token)."""
        token_id, dot, _ = token.partition(".")
        if not dot or len(token) > 200:
            return None
        user = self.storage.user_by_token_id(token_id)
        if user is None:
            return None
        digest = hashlib.sha256(token.encode()).digest()
        with self._lock:
            known = self._verified.get(digest)
        if known is not None and hmac.compare_digest(known[1], user.token_hash) and known[0] == user.id:
            return user
        try:
            _hasher.verify(user.token_hash, token)
        except (VerificationError, InvalidHashError):
            return None
        with self._lock:
            if len(self._verified) >= _CACHE_SIZE:
                self._verified.clear()
            self._verified[digest] = (user.id, user.token_hash)
        return user


def backoff_left(storage: Storage, keys: list[str], free_failures: int, base: float) -> float:
    """Seconds before another wrong token should be tried from `keys` (an address): none for the
    first `free_failures` failures, then `base` seconds doubling with each, at most 15 min. It
    asks a script to slow down; it never refuses a right token (app._login)."""
    now = time.time()
    wait = 0.0
    for key in keys:
        failures, last = storage.login_failures(key)
        if failures > free_failures:
            delay = min(MAX_BACKOFF, base * 2 ** (failures - free_failures - 1))
            wait = max(wait, last + delay - now)
    return max(0.0, wait)


def address_key(address: str) -> str:
    """What failed sign-ins count against: the address, never an account (whose id is public:
    counting against it would let anyone lock its owner out)."""
    return f"address:{address}"


def new_csrf_token() -> str:
    return secrets.token_urlsafe(24)


def csrf_ok(expected: object, given: object) -> bool:
    """The form's CSRF field matches the session's (compared in constant time)."""
    return isinstance(expected, str) and isinstance(given, str) and bool(expected) and \
        hmac.compare_digest(expected.encode(), given.encode())
