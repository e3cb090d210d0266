"""Signing in: bcrypt passwords, short-lived HS256 access tokens, and the bearer check."""

from __future__ import annotations

import datetime as dt
import math
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

import jwt
import msgspec
from prometheus_client import Counter
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, sessions, store
from panel_api.passwords import MIN_PASSWORD, Passwords, refuse_if_too_long
from shared.clock import Clock
from shared.db import Connection
from shared.errors import Problem, json_body, problem_response
from shared.logging import request_id
from shared.settings import Networks, Secret
from shared.web import client_address, runtime

ACCESS_TOKEN_TTL = dt.timedelta(minutes=15)
# How far a token's `iat` may be ahead of our clock (another panel process's clock may lead).
CLOCK_SKEW = dt.timedelta(seconds=60)
# Failed sign-ins allowed within the window, then 429: a stranger's from one address and
# naming one account from it, strangers' naming one account from anywhere, one known
# browser's (store.Limits). No count a stranger fills keeps the owner's known browser out.
FAILURE_WINDOW = dt.timedelta(minutes=15)
SIGN_IN_LIMITS = store.Limits(address=30, pair=10, account=100, device=10)
PASSWORD_CHECKS = Counter(
    "panel_password_checks_total", "bcrypt verifications made by sign-ins (one per attempt)"
)


# Something, an @, something (as the column's check has it); no control characters (a NUL
# cannot even be stored), no space or C1 control at either end (spelled out: `\s` means more
# in Python's regex, U+0085, than in JSON Schema's), no longer than an address can be.
Email = Annotated[
    str,
    msgspec.Meta(
        min_length=3,
        max_length=254,
        pattern=r"^[^\x00-\x20\x7f-\xa0][^\x00-\x1f\x7f]*@[^\x00-\x1f\x7f]*[^\x00-\x20\x7f-\xa0]$",
    ),
]


class LoginBody(msgspec.Struct, forbid_unknown_fields=True):
    email: Email
    password: Annotated[str, msgspec.Meta(max_length=1024)]


class PasswordChange(msgspec.Struct, forbid_unknown_fields=True):
    current_password: Annotated[str, msgspec.Meta(max_length=1024)]
    new_password: Annotated[str, msgspec.Meta(min_length=MIN_PASSWORD, max_length=1024)]


class Tokens(msgspec.Struct):
    """A new access token; the refresh token rides in the `gatehouse_refresh` cookie."""

    access_token: str
    token_type: Literal["Bearer"]
    expires_in: int


class Signed(Protocol):
    """Whoever a checked access token names (access.Caller, which imports this module)."""

    @property
    def id(self) -> int: ...
    @property
    def email(self) -> str: ...
    @property
    def role(self) -> str: ...


@dataclass(frozen=True)
class Member:
    id: int
    email: str
    role: str


def issuer(installation: str) -> str:
    return f"gatehouse:{installation}"


def audience(installation: str) -> str:
    return f"gatehouse-panel:{installation}"


class Installation:
    """This installation's name (migration 0035), read once per process: tokens name it as
    issuer and audience."""

    def __init__(self) -> None:
        self._name: str | None = None

    async def name(self, conn: Connection) -> str:
        if self._name is None:
            self._name = await store.installation_name(conn)
        return self._name


def issue_token(secret: Secret, installation: str, member: Member, now: dt.datetime) -> str:
    claims: dict[str, Any] = {
        "sub": str(member.id),
        "email": member.email,
        "role": member.role,
        "iss": issuer(installation),
        "aud": audience(installation),
        "jti": uuid.uuid4().hex,
        "iat": now,
        "exp": now + ACCESS_TOKEN_TTL,
    }
    return jwt.encode(claims, secret.reveal(), algorithm="HS256")


def verify_token(secret: Secret, installation: str, token: str, now: dt.datetime) -> dict[str, Any]:
    """The claims of a token this installation signed, unexpired at `now` (the service's
    clock, not PyJWT's own reading of the system time) and lasting no longer than we issue
    them for: a token signed with the key but a 30-year `exp` is refused."""
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            secret.reveal(),
            algorithms=["HS256"],
            issuer=issuer(installation),
            audience=audience(installation),
            options={
                "require": ["exp", "iat", "sub", "iss", "aud", "jti"],
                "verify_exp": False,
                "verify_iat": False,
            },
        )
    except jwt.InvalidTokenError:
        raise errors.InvalidToken("the access token is not valid") from None
    exp, iat = claims["exp"], claims["iat"]
    if any(isinstance(t, bool) or not isinstance(t, int | float) for t in (exp, iat)):
        raise errors.InvalidToken("the access token is not valid")
    if exp - iat > ACCESS_TOKEN_TTL.total_seconds() or iat > (now + CLOCK_SKEW).timestamp():
        raise errors.InvalidToken("the access token claims a lifetime we never issue")
    if now.timestamp() >= exp:
        raise errors.TokenExpired("the access token has expired")
    sub = claims["sub"]
    if not (isinstance(sub, str) and sub.isascii() and sub.isdigit() and len(sub) <= 18):
        raise errors.InvalidToken("the access token names no member")
    return claims


async def refuse_if_throttled(
    conn: Connection,
    attempt: store.Attempt,
    now: dt.datetime,
    what: str,
    limits: store.Limits = SIGN_IN_LIMITS,
) -> None:
    """429 with `Retry-After` while a count the caller is judged by has its fill of recent
    failures."""
    until = await store.throttled_until(conn, attempt, now, FAILURE_WINDOW, limits)
    if until is not None:
        wait = max(1, math.ceil((until - now).total_seconds()))
        raise errors.TooManyRequests(f"too many {what}; try again in {wait} s", retry_after=wait)


class SignIn:
    """The sign-in routes, their secret, clock and the proxies they trust."""

    def __init__(
        self,
        jwt_secret: Secret,
        installation: Installation,
        clock: Clock,
        trusted_proxies: Networks,
        passwords: Passwords,
    ) -> None:
        self.jwt_secret = jwt_secret
        self.installation = installation
        self.passwords = passwords
        self.clock = clock
        self.trusted_proxies = trusted_proxies
        self.box = sessions.grace_box(jwt_secret)
        self.devices = sessions.Devices(jwt_secret)

    async def login(self, request: Request) -> Response:
        body = await json_body(request, LoginBody, limit=4096)
        email = body.email.strip().lower()
        address = client_address(request, self.trusted_proxies)
        now = self.clock.now()
        pool = runtime(request).pool
        async with store.connection(pool) as conn:
            row = await store.member_by_email(conn, email)
            cookie = request.cookies.get(sessions.DEVICE_COOKIE)
            device = self.devices.device(cookie, None if row is None else row.id)
            attempt = store.Attempt(email, address, device)
            await refuse_if_throttled(conn, attempt, now, "failed sign-ins")
        # One bcrypt check whatever the email, so an unknown one answers no sooner.
        password_ok = await self.passwords.check(
            body.password, row.password_hash if row is not None else None
        )
        PASSWORD_CHECKS.inc()
        if row is None or not password_ok or row.disabled:
            async with store.connection(pool) as conn:
                await store.record_failure(conn, attempt, now, FAILURE_WINDOW)
            raise errors.BadCredentials("email or password is wrong")
        member = Member(id=row.id, email=row.email, role=row.role)
        async with store.connection(pool) as conn, conn.transaction():
            await store.forget_failures(conn, attempt)
            pair = await self._new_session(conn, member, now)
        response = self._answer(pair)
        sessions.set_device_cookie(response, self.devices.issue(member.id, attempt.device))
        return response

    async def change_password(self, request: Request, caller: Signed) -> Response:
        """A member sets their own password, giving the current one: every session they had
        ends, and this one goes on with a new pair."""
        body = await json_body(request, PasswordChange, limit=4096)
        refuse_if_too_long(body.new_password, "new_password")
        address = client_address(request, self.trusted_proxies)
        now = self.clock.now()
        pool = runtime(request).pool
        # Counted apart from sign-ins: a stranger's guesses at the email do not stop the
        # signed-in member, and a stolen token gets no more guesses than a stranger.
        attempt = store.Attempt(f"password-change:{caller.id}", address)
        async with store.connection(pool) as conn:
            await refuse_if_throttled(conn, attempt, now, "wrong passwords")
            row = await store.member_by_email(conn, caller.email)
        stored = row.password_hash if row is not None and row.id == caller.id else None
        if not await self.passwords.check(body.current_password, stored):
            async with store.connection(pool) as conn:
                await store.record_failure(conn, attempt, now, FAILURE_WINDOW)
            raise errors.InvalidValue(
                "the current password is wrong", field="current_password", code="wrong"
            )
        password_hash = await self.passwords.hash_off_loop(body.new_password)
        member = Member(id=caller.id, email=caller.email, role=caller.role)
        async with store.connection(pool) as conn, conn.transaction():
            await store.set_password(conn, caller.id, password_hash)
            await store.revoke_member_sessions(conn, caller.id, now)
            pair = await self._new_session(conn, member, now)
            await store.audit(
                conn,
                member_id=caller.id,
                action="team.password",
                target=f"team_member:{caller.id}",
                before=None,
                after=None,
                now=now,
                request_id=request_id.get(),
            )
        return self._answer(pair)

    async def _new_session(
        self, conn: Connection, member: Member, now: dt.datetime
    ) -> sessions.Pair:
        """A new refresh-token family for `member` and its first pair."""
        refresh = sessions.new_token()
        await store.insert_refresh_token(
            conn,
            sessions.new_family(),
            member.id,
            sessions.token_hash(refresh),
            now,
            now + sessions.REFRESH_TTL,
        )
        name = await self.installation.name(conn)
        return sessions.Pair(issue_token(self.jwt_secret, name, member, now), refresh)

    async def refresh(self, request: Request) -> Response:
        self._require_csrf_header(request)
        presented = request.cookies.get(sessions.COOKIE)
        if not presented:
            raise errors.MissingCredentials("no refresh token")
        now = self.clock.now()
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            row = await store.refresh_token_for_update(conn, sessions.token_hash(presented))
            if row is None or row.revoked or row.expires_at <= now:
                raise errors.InvalidToken("the refresh token is not valid")
            if row.member.disabled:
                await store.revoke_family(conn, row.family, now)
                # Answered, not raised: raising would roll the revocation back.
                return _refused("the member is disabled")
            if row.rotated_at is not None:
                if row.successor_sealed and now - row.rotated_at <= sessions.REUSE_GRACE:
                    # A second tab with the same token, a moment later: the same new pair.
                    return self._answer(sessions.Pair.unseal(self.box, row.successor_sealed))
                # Used again after it was exchanged: whoever holds the family, it is over.
                await store.revoke_family(conn, row.family, now)
                return _refused("the refresh token was used again; its session is revoked")
            member = Member(id=row.member.id, email=row.member.email, role=row.member.role)
            name = await self.installation.name(conn)
            access_token = issue_token(self.jwt_secret, name, member, now)
            pair = sessions.Pair(access_token, sessions.new_token())
            successor = await store.insert_refresh_token(
                conn,
                row.family,
                member.id,
                sessions.token_hash(pair.refresh_token),
                now,
                now + sessions.REFRESH_TTL,
            )
            await store.mark_rotated(conn, row.id, successor, pair.seal(self.box), now)
            await store.forget_sealed_pairs(conn, now - sessions.REUSE_GRACE)
        return self._answer(pair)

    async def logout(self, request: Request) -> Response:
        self._require_csrf_header(request)
        presented = request.cookies.get(sessions.COOKIE)
        if presented:
            now = self.clock.now()
            async with store.connection(runtime(request).pool) as conn, conn.transaction():
                row = await store.refresh_token_for_update(conn, sessions.token_hash(presented))
                if row is not None:
                    await store.revoke_family(conn, row.family, now)
        response = Response(status_code=204)
        sessions.clear_cookie(response)
        return response

    @staticmethod
    def _require_csrf_header(request: Request) -> None:
        if request.headers.get(sessions.CSRF_HEADER) != sessions.CSRF_VALUE:
            raise errors.Forbidden(f"send {sessions.CSRF_HEADER}: {sessions.CSRF_VALUE}")

    @staticmethod
    def _answer(pair: sessions.Pair) -> Response:
        tokens = Tokens(pair.access_token, "Bearer", int(ACCESS_TOKEN_TTL.total_seconds()))
        response = Response(msgspec.json.encode(tokens), media_type="application/json")
        sessions.set_cookie(response, pair.refresh_token)
        return response


def _refused(detail: str) -> Response:
    response = problem_response(Problem(401, "invalid-token", detail))
    sessions.clear_cookie(response)
    return response
