"""Signing in: bcrypt passwords, short-lived HS256 access tokens, and the bearer check."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import bcrypt
import jwt
import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from panel_api import store
from shared.clock import Clock
from shared.errors import Problem, json_body
from shared.settings import Secret
from shared.web import bearer_token, runtime

ACCESS_TOKEN_TTL = dt.timedelta(hours=1)
# bcrypt reads at most this many bytes of a password (bcrypt 5 refuses longer ones).
BCRYPT_MAX_BYTES = 72
ISSUER = "gatehouse-panel"
# Checked against when the email is unknown, so both paths cost one bcrypt verification.
_DUMMY_HASH = bcrypt.hashpw(b"no such member", bcrypt.gensalt(rounds=12))


class LoginBody(msgspec.Struct, forbid_unknown_fields=True):
    email: str
    password: str


@dataclass(frozen=True)
class Member:
    id: int
    email: str
    role: str


def issue_token(secret: Secret, member: Member, now: dt.datetime) -> str:
    claims: dict[str, Any] = {
        "sub": str(member.id),
        "email": member.email,
        "role": member.role,
        "iss": ISSUER,
        "iat": now,
        "exp": now + ACCESS_TOKEN_TTL,
    }
    return jwt.encode(claims, secret.reveal(), algorithm="HS256")


def verify_token(secret: Secret, token: str) -> dict[str, Any]:
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            secret.reveal(),
            algorithms=["HS256"],
            issuer=ISSUER,
            options={"require": ["exp", "iat", "sub", "iss"]},
        )
    except jwt.ExpiredSignatureError:
        raise Problem(401, "token-expired", "the access token has expired") from None
    except jwt.InvalidTokenError:
        raise Problem(401, "invalid-token", "the access token is not valid") from None
    return claims


def routes(jwt_secret: Secret, clock: Clock) -> list[BaseRoute]:
    """Signing in and who am I; tokens signed with `jwt_secret`, timed by `clock`."""

    async def login_route(request: Request) -> Response:
        return await login(request, jwt_secret, clock)

    async def me_route(request: Request) -> Response:
        return await me(request, jwt_secret)

    return [
        Route("/v1/auth/login", login_route, methods=["POST"]),
        Route("/v1/me", me_route, methods=["GET"]),
    ]


async def login(request: Request, jwt_secret: Secret, clock: Clock) -> Response:
    body = await json_body(request, LoginBody, limit=4096)
    async with store.connection(runtime(request).pool) as conn:
        row = await store.member_by_email(conn, body.email.strip().lower())
    stored = row.password_hash.encode() if row and row.password_hash else _DUMMY_HASH
    presented = body.password.encode()
    if len(presented) > BCRYPT_MAX_BYTES:
        # No password we set is this long; bcrypt refuses it. Same cost, same answer.
        stored, presented = _DUMMY_HASH, b"-"
    # bcrypt takes ~0.2 s by design: off the event loop.
    password_ok = await run_in_threadpool(bcrypt.checkpw, presented, stored)
    if (
        row is None
        or not password_ok
        or row.disabled
        or len(body.password.encode()) > BCRYPT_MAX_BYTES
    ):
        raise Problem(401, "bad-credentials", "email or password is wrong")
    member = Member(id=row.id, email=row.email, role=row.role)
    token = issue_token(jwt_secret, member, clock.now())
    return JSONResponse(
        {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": int(ACCESS_TOKEN_TTL.total_seconds()),
        }
    )


async def me(request: Request, jwt_secret: Secret) -> Response:
    claims = verify_token(jwt_secret, bearer_token(request))
    async with store.connection(runtime(request).pool) as conn:
        row = await store.member_by_id(conn, int(claims["sub"]))
    if row is None or row.disabled:
        raise Problem(401, "invalid-token", "the member no longer exists or is disabled")
    return JSONResponse({"id": row.id, "email": row.email, "role": row.role})
