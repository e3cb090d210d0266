"""Signing in: bcrypt passwords, short-lived HS256 access tokens, and the bearer check."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from dataclasses import dataclass
from typing import Annotated, Any

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
from shared.settings import Networks, Secret
from shared.web import bearer_token, client_address, runtime

ACCESS_TOKEN_TTL = dt.timedelta(minutes=15)
# bcrypt reads at most this many bytes of a password (bcrypt 5 refuses longer ones).
BCRYPT_MAX_BYTES = 72
ISSUER = "gatehouse-panel"
AUDIENCE = "panel-api"
# Failed sign-ins allowed per account and per address within the window, then 429.
FAILURE_LIMIT = 10
FAILURE_WINDOW = dt.timedelta(minutes=15)
# Checked against when the email is unknown, so both paths cost one bcrypt verification.
_DUMMY_HASH = bcrypt.hashpw(b"no such member", bcrypt.gensalt(rounds=12))


# No control characters (a NUL cannot even be stored), no longer than an address can be.
Email = Annotated[str, msgspec.Meta(min_length=3, max_length=254, pattern=r"^[^\x00-\x1f\x7f]+$")]


class LoginBody(msgspec.Struct, forbid_unknown_fields=True):
    email: Email
    password: Annotated[str, msgspec.Meta(max_length=1024)]


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
        "aud": AUDIENCE,
        "jti": uuid.uuid4().hex,
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
            audience=AUDIENCE,
            options={"require": ["exp", "iat", "sub", "iss", "aud", "jti"]},
        )
    except jwt.ExpiredSignatureError:
        raise Problem(401, "token-expired", "the access token has expired") from None
    except jwt.InvalidTokenError:
        raise Problem(401, "invalid-token", "the access token is not valid") from None
    sub = claims["sub"]
    if not (isinstance(sub, str) and sub.isascii() and sub.isdigit() and len(sub) <= 18):
        raise Problem(401, "invalid-token", "the access token names no member")
    return claims


def routes(jwt_secret: Secret, clock: Clock, trusted_proxies: Networks) -> list[BaseRoute]:
    """Signing in and who am I; tokens signed with `jwt_secret`, timed by `clock`; failures
    counted by the client's address as `client_address` finds it behind `trusted_proxies`."""

    async def login_route(request: Request) -> Response:
        return await login(request, jwt_secret, clock, client_address(request, trusted_proxies))

    async def me_route(request: Request) -> Response:
        return await me(request, jwt_secret)

    return [
        Route("/v1/auth/login", login_route, methods=["POST"]),
        Route("/v1/me", me_route, methods=["GET"]),
    ]


async def login(request: Request, jwt_secret: Secret, clock: Clock, address: str) -> Response:
    body = await json_body(request, LoginBody, limit=4096)
    email = body.email.strip().lower()
    now = clock.now()
    pool = runtime(request).pool
    async with store.connection(pool) as conn:
        until = await store.throttled_until(
            conn, email, address, now, FAILURE_WINDOW, FAILURE_LIMIT
        )
        if until is not None:
            wait = max(1, math.ceil((until - now).total_seconds()))
            raise Problem(
                429,
                "too-many-requests",
                f"too many failed sign-ins; try again in {wait} s",
                headers={"Retry-After": str(wait)},
            )
        row = await store.member_by_email(conn, email)
    stored = row.password_hash.encode() if row and row.password_hash else _DUMMY_HASH
    presented = body.password.encode()
    too_long = len(presented) > BCRYPT_MAX_BYTES
    if too_long:
        # No password we set is this long; bcrypt refuses it. Same cost, same answer.
        stored, presented = _DUMMY_HASH, b"-"
    # One bcrypt check whatever the email (~0.2 s by design): off the event loop.
    password_ok = await run_in_threadpool(bcrypt.checkpw, presented, stored)
    if row is None or not password_ok or row.disabled or too_long:
        async with store.connection(pool) as conn:
            await store.record_failure(conn, email, address, now, FAILURE_WINDOW)
        raise Problem(401, "bad-credentials", "email or password is wrong")
    async with store.connection(pool) as conn:
        await store.forget_failures(conn, email)
    member = Member(id=row.id, email=row.email, role=row.role)
    token = issue_token(jwt_secret, member, now)
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
