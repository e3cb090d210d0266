"""Who is calling and what their role lets them do.

Roles, least to most: viewer (reads), editor (content, campaigns, broadcasts; reads the rest),
admin (everything but what follows), owner (also the team, the audit log and workspace
settings; alone). Each route names its least role in `panel_api.contract.OPERATIONS`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Generic, TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import store
from panel_api.auth import verify_token
from shared.clock import Clock
from shared.db import Connection
from shared.errors import Problem
from shared.logging import request_id
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


class Me(msgspec.Struct):
    """A member as their token names them."""

    id: int
    email: str
    role: Role


async def audit(
    conn: Connection,
    caller: Caller,
    clock: Clock,
    action: str,
    target: str,
    before: Any,
    after: Any,
) -> None:
    """A write's audit entry, in the write's own transaction: who, what, on what, before and
    after (structs as JSON), when, and the request it came with."""
    await store.audit(
        conn,
        member_id=caller.id,
        action=action,
        target=target,
        before=msgspec.to_builtins(before),
        after=msgspec.to_builtins(after),
        now=clock.now(),
        request_id=request_id.get(),
    )


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


# -- query strings, pages and answers -----------------------------------------------------

MAX_LIMIT = 200
T = TypeVar("T")
Q = TypeVar("Q", bound=msgspec.Struct)


# A word to filter by: printable, so never a NUL PostgreSQL's text cannot hold.
Word = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]


class Paged(msgspec.Struct, kw_only=True):
    """What every list takes: `limit` (1-200) and the opaque `cursor` of the previous answer."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_LIMIT)] = 50
    cursor: Word | None = None

    @property
    def position(self) -> int | None:
        return None if self.cursor is None else _position(self.cursor)


class Page(msgspec.Struct, Generic[T]):
    items: list[T]
    next_cursor: str | None


def query(request: Request, kind: type[Q]) -> Q:
    """The query string read as `kind`, whose fields are the parameters; 422 when a value does
    not fit. Parameters it does not name are ignored, as a link's extras are."""
    params = request.query_params
    repeated = sorted({name for name, _ in params.multi_items() if len(params.getlist(name)) > 1})
    if repeated:
        raise Problem(422, "invalid-values", f"{', '.join(repeated)} given more than once")
    try:
        return msgspec.convert(dict(params), kind, strict=False)
    except msgspec.ValidationError as error:
        raise Problem(422, "invalid-values", str(error).replace("$.", "")) from None


def page_of(rows: Sequence[T], limit: int, key: Callable[[T], int]) -> Page[T]:
    """The first `limit` of `rows` (fetched one more than asked, to know whether more follow),
    with the cursor after the last one shown when they do."""
    shown = list(rows[:limit])
    more = len(rows) > limit and bool(shown)
    return Page(shown, cursor_after(key(shown[-1])) if more else None)


def answer(value: Any, status: int = 200) -> Response:
    """A JSON answer written by msgspec: times in ISO 8601, structs by their fields."""
    return Response(msgspec.json.encode(value), status_code=status, media_type="application/json")


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
