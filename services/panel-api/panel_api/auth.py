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

from panel_api import sqlq
from shared.errors import Problem, json_body
from shared.settings import Secret
from shared.web import bearer_token, runtime

ACCESS_TOKEN_TTL = dt.timedelta(hours=1)
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


async def login(request: Request) -> Response:
    body = await json_body(request, LoginBody, limit=4096)
    state = runtime(request)
    jwt_secret: Secret = state.extra["jwt_secret"]
    async with state.pool.connection() as conn:
        cur = await conn.execute(sqlq.Q["member_by_email"], {"email": body.email.strip().lower()})
        row = await cur.fetchone()
    stored = row["password_hash"].encode() if row else _DUMMY_HASH
    # bcrypt takes ~0.2 s by design: off the event loop.
    password_ok = await run_in_threadpool(bcrypt.checkpw, body.password.encode(), stored)
    if row is None or not password_ok or row["disabled_at"] is not None:
        raise Problem(401, "bad-credentials", "email or password is wrong")
    member = Member(id=row["id"], email=row["email"], role=row["role"])
    token = issue_token(jwt_secret, member, dt.datetime.now(dt.UTC))
    return JSONResponse(
        {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": int(ACCESS_TOKEN_TTL.total_seconds()),
        }
    )


async def me(request: Request) -> Response:
    state = runtime(request)
    claims = verify_token(state.extra["jwt_secret"], bearer_token(request))
    async with state.pool.connection() as conn:
        cur = await conn.execute(sqlq.Q["member_by_id"], {"id": int(claims["sub"])})
        row = await cur.fetchone()
    if row is None or row["disabled_at"] is not None:
        raise Problem(401, "invalid-token", "the member no longer exists or is disabled")
    return JSONResponse({"id": row["id"], "email": row["email"], "role": row["role"]})
