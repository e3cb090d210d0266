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
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(REFRESH_TTL.total_seconds()),
        path=COOKIE_PATH,
        secure=True,
        httponly=True,
        samesite="strict",
    )


def clear_cookie(response: Response) -> None:
    response.delete_cookie(COOKIE, path=COOKIE_PATH, secure=True, httponly=True, samesite="strict")
