"""Refresh tokens: the long half of a session, in an `HttpOnly` cookie scoped to `/v1/auth`.

Random, stored only as a SHA-256 hash, rotated on every use. A rotated token presented again
revokes its whole family, except within `REUSE_GRACE` of its rotation: then it gets the same
new pair, so two tabs refreshing at once both stay signed in. The pair is kept sealed for that
window only.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import json
import secrets
import uuid
from dataclasses import dataclass

from starlette.responses import Response

from shared.secretbox import SecretBox
from shared.settings import Secret

COOKIE = "gatehouse_refresh"
COOKIE_PATH = "/v1/auth"
REFRESH_TTL = dt.timedelta(days=14)
REUSE_GRACE = dt.timedelta(seconds=10)
# A browser that signed in to an account keeps this for a year: its sign-ins are throttled by
# its own failures, not by a stranger's (OWASP's device cookies).
DEVICE_COOKIE = "gatehouse_device"
DEVICE_COOKIE_PATH = "/v1/auth/login"
DEVICE_TTL = dt.timedelta(days=365)
# Sent by the panel's own page; a cross-site form or image cannot set it.
CSRF_HEADER = "x-requested-with"
CSRF_VALUE = "gatehouse"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def new_family() -> uuid.UUID:
    return uuid.uuid4()


def grace_box(jwt_secret: Secret) -> SecretBox:
    """Seals pairs kept through the grace window, under a key derived from the JWT secret."""
    digest = hashlib.sha256(b"gatehouse refresh grace\0" + jwt_secret.reveal().encode()).digest()
    return SecretBox(Secret(base64.urlsafe_b64encode(digest).decode()))


@dataclass(frozen=True)
class Pair:
    """What a sign-in or a refresh hands out."""

    access_token: str
    refresh_token: str

    def seal(self, box: SecretBox) -> str:
        return box.seal(json.dumps([self.access_token, self.refresh_token]))

    @classmethod
    def unseal(cls, box: SecretBox, sealed: str) -> Pair:
        access, refresh = json.loads(box.open(sealed))
        return cls(str(access), str(refresh))


def set_cookie(response: Response, token: str) -> None:
    _set(response, COOKIE, token, REFRESH_TTL, COOKIE_PATH)


def _set(response: Response, name: str, value: str, ttl: dt.timedelta, path: str) -> None:
    """A cookie no script reads, sent back over HTTPS alone, to this site alone."""
    response.set_cookie(
        name,
        value,
        max_age=int(ttl.total_seconds()),
        path=path,
        secure=True,
        httponly=True,
        samesite="strict",
    )


def clear_cookie(response: Response) -> None:
    response.delete_cookie(COOKIE, path=COOKIE_PATH, secure=True, httponly=True, samesite="strict")


class Devices:
    """Device cookies: `<member id>.<nonce>.<HMAC of both>`, signed under a key derived from
    the JWT secret. Nothing is stored: a cookie only ever decides which failures a sign-in is
    throttled by, never whether it is let in."""

    def __init__(self, jwt_secret: Secret) -> None:
        self._key = hashlib.sha256(b"gatehouse device cookie\0" + jwt_secret.reveal().encode())

    def _signature(self, member_id: int, nonce: str) -> str:
        mac = hmac.new(self._key.digest(), f"{member_id}.{nonce}".encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")

    def issue(self, member_id: int, nonce: str | None = None) -> str:
        nonce = nonce or secrets.token_urlsafe(16)
        return f"{member_id}.{nonce}.{self._signature(member_id, nonce)}"

    def device(self, cookie: str | None, member_id: int | None) -> str | None:
        """The device a cookie names, when it is one we gave for `member_id`; else None."""
        if cookie is None or member_id is None or cookie.count(".") != 2:
            return None
        member, nonce, signature = cookie.split(".")
        if member != str(member_id) or not 16 <= len(nonce) <= 64:
            return None
        expected = self._signature(member_id, nonce)
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            return None
        return nonce


def set_device_cookie(response: Response, cookie: str) -> None:
    _set(response, DEVICE_COOKIE, cookie, DEVICE_TTL, DEVICE_COOKIE_PATH)
