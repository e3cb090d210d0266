"""Who is calling and what their role lets them do.

Roles, least to most: viewer (reads), editor (content, campaigns, broadcasts; reads the rest),
admin (everything but what follows), owner (also the team, the audit log and workspace
settings; alone). Each route names its least role in `panel_api.app.LEAST_ROLE`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from starlette.requests import Request
from starlette.responses import Response

from panel_api import store
from panel_api.auth import verify_token
from shared.clock import Clock
from shared.errors import Problem
from shared.settings import Secret
from shared.web import bearer_token, runtime


class Role(StrEnum):
    VIEWER = "viewer"
    """Reads everything it is shown."""
    EDITOR = "editor"
    """Also writes content, campaigns and broadcasts."""
    ADMIN = "admin"
    """Also everything else but the team, the audit log and workspace settings."""
    OWNER = "owner"
    """Everything; one per workspace."""


RANK = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2, Role.OWNER: 3}


@dataclass(frozen=True)
class Caller:
    id: int
    email: str
    role: Role


Handler = Callable[[Request, Caller], Awaitable[Response]]


class Access:
    def __init__(self, jwt_secret: Secret, clock: Clock) -> None:
        self.jwt_secret = jwt_secret
        self.clock = clock

    async def caller(self, request: Request) -> Caller:
        """The member behind the bearer token, as the database has them now."""
        claims = verify_token(self.jwt_secret, bearer_token(request), self.clock.now())
        async with store.connection(runtime(request).pool) as conn:
            row = await store.member_by_id(conn, int(claims["sub"]))
        if row is None or row.disabled:
            raise Problem(401, "invalid-token", "the member no longer exists or is disabled")
        return Caller(row.id, row.email, Role(row.role))

    def guard(self, least: Role, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            caller = await self.caller(request)
            if RANK[caller.role] < RANK[least]:
                raise Problem(403, "forbidden", f"this needs the {least.value} role or higher")
            return await handler(request, caller)

        return endpoint


# -- pages --------------------------------------------------------------------------------

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


@dataclass(frozen=True)
class Page:
    limit: int
    position: int | None


def page(request: Request) -> Page:
    """`limit` (1-200, default 50) and an opaque `cursor` from the previous answer."""
    raw_limit = request.query_params.get("limit", str(DEFAULT_LIMIT))
    if not (raw_limit.isascii() and raw_limit.isdigit()) or not 1 <= int(raw_limit) <= MAX_LIMIT:
        raise Problem(422, "invalid-values", f"limit is a whole number from 1 to {MAX_LIMIT}")
    cursor = request.query_params.get("cursor")
    return Page(int(raw_limit), None if cursor is None else _position(cursor))


def cursor_after(position: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"p": position}).encode()).decode()


def _position(cursor: str) -> int:
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        position = value["p"]
    except (ValueError, binascii.Error, KeyError, TypeError, UnicodeEncodeError):
        raise Problem(422, "invalid-values", "cursor is not one this API gave out") from None
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < 2**63:
        raise Problem(422, "invalid-values", "cursor is not one this API gave out")
    return position
