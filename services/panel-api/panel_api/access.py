"""Who is calling and what their role lets them do.

Roles, least to most: viewer (reads), editor (content, campaigns, broadcasts; reads the rest),
admin (everything but what follows), owner (also the team, the audit log and workspace
settings; alone). Each route names its least role in `panel_api.contract.OPERATIONS`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any, Generic, LiteralString, Protocol, TypeVar, get_args

import httpx
import msgspec
from psycopg import sql
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, store
from panel_api.auth import Installation, verify_token
from panel_api.internal import relayed
from shared.clock import Clock
from shared.db import Connection
from shared.errors import read_query
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


class Who(msgspec.Struct):
    """A person by the name and @username Telegram last told a bot, beside their id."""

    username: str | None
    first_name: str
    last_name: str | None


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


async def relay_audited(
    request: Request,
    caller: Caller,
    clock: Clock,
    answer: httpx.Response,
    done: int,
    action: str,
    target: str | Callable[[Any], str],
    after: Callable[[Any], Any] = lambda body: body,
) -> Response:
    """billing's or botedge's answer to a write the owner asked of it, relayed as it is; when
    its status is `done` (the other service made the write), recorded in the audit log first:
    `target` and `after` read from its body."""
    if answer.status_code == done:
        body = answer.json() if answer.content else None
        named = target if isinstance(target, str) else target(body)
        async with store.connection(runtime(request).pool) as conn:
            await audit(conn, caller, clock, action, named, None, after(body))
    return relayed(answer)


Handler = Callable[[Request, Caller], Awaitable[Response]]


class Access:
    def __init__(self, jwt_secret: Secret, installation: Installation, clock: Clock) -> None:
        self.jwt_secret = jwt_secret
        self.installation = installation
        self.clock = clock

    async def caller(self, request: Request) -> Caller:
        """The member behind the bearer token, as the database has them now."""
        token = bearer_token(request)
        async with store.connection(runtime(request).pool) as conn:
            name = await self.installation.name(conn)
            claims = verify_token(self.jwt_secret, name, token, self.clock.now())
            row = await store.member_by_id(conn, int(claims["sub"]))
        if row is None or row.disabled:
            raise errors.InvalidToken("the member no longer exists or is disabled")
        return Caller(row.id, row.email, Role(row.role))

    def guard(self, least: Role, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            caller = await self.caller(request)
            if RANK[caller.role] < RANK[least]:
                raise errors.Forbidden(f"this needs the {least.value} role or higher")
            return await handler(request, caller)

        return endpoint


# -- query strings, pages and answers -----------------------------------------------------

MAX_LIMIT = 200
T = TypeVar("T")
Q = TypeVar("Q", bound=msgspec.Struct)


# A word to filter by: printable, so never a NUL PostgreSQL's text cannot hold.
Word = Annotated[str, msgspec.Meta(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f]+$")]


# What a person is looked for by: their Telegram id, the start of their @username, or a part of
# their name.
Search = Annotated[str, msgspec.Meta(min_length=1, max_length=100, pattern=r"^[^\x00-\x1f\x7f]+$")]
_DIGITS = str.maketrans("۰۱۲۳۴۵۶۷۸۹٠١٢٣٤٥٦٧٨٩", "01234567890123456789")


def person_search(q: str | None) -> dict[str, str | None]:
    """The parameters of a person search (`q`, `q_start`, `q_any`); all None for no search.
    Persian digits are read as digits; LIKE's own characters match only themselves."""
    text = (q or "").strip().removeprefix("@").translate(_DIGITS)
    if not text:
        return {"q": None, "q_start": None, "q_any": None}
    like = re.sub(r"([\\%_])", r"\\\1", text)
    return {"q": text, "q_start": f"{like}%", "q_any": f"%{like}%"}


Limit = Annotated[int, msgspec.Meta(ge=1, le=MAX_LIMIT)]


class Paged(msgspec.Struct, kw_only=True):
    """What every list takes: `limit` (1-200), the opaque `cursor` of the previous answer and
    `sort`, a field of the items, descending when it starts with `-`. Each list's query type
    names the sorts it offers, and its default."""

    limit: Limit = 50
    cursor: Word | None = None


class Sorted(Protocol):
    """A list's query: `Paged` and its `sort`, one of its `Listing`'s sorts."""

    @property
    def limit(self) -> int: ...
    @property
    def cursor(self) -> str | None: ...
    @property
    def sort(self) -> str: ...


class Page(msgspec.Struct, Generic[T]):
    items: list[T]
    next_cursor: str | None


def query(request: Request, kind: type[Q]) -> Q:
    """The query string read as `kind`, whose fields are the parameters; 422 when a value does
    not fit. Parameters it does not name are ignored, as a link's extras are."""
    return read_query(request.query_params, kind)


@dataclass(frozen=True)
class Column:
    """A field of a list's items, by its name in the answer; `kind` is its values' type and
    `cast` the SQL type to order by where the answer shows it as text (amounts)."""

    name: str
    kind: type
    cast: LiteralString | None = None

    def expression(self) -> sql.Composable:
        column = sql.SQL("r.{}").format(sql.Identifier(self.name))
        return column if self.cast is None else sql.SQL("{}::{}").format(column, sql.SQL(self.cast))


@dataclass(frozen=True)
class Listing:
    """A list read page by page in any of its sorts. `query` names a statement with the
    list's filters and no order; every sort ends in `key`, the fields that tell two items
    apart, so that a cursor marks one place in one order (keyset pagination: no offset, and
    no item skipped or shown twice when ties span pages)."""

    query: str
    key: tuple[Column, ...]
    sorts: tuple[Column, ...]
    sort_type: Any
    """The `Literal` a list query's `sort` field has: each sort's name, and with `-` before it
    for descending, in the order of `sorts` (the values, their check and the OpenAPI enum
    come from it; a listing whose sorts it does not name stops the service at import)."""

    def __post_init__(self) -> None:
        named = tuple(v for c in self.sorts for v in (c.name, f"-{c.name}"))
        if get_args(self.sort_type) != named:
            raise TypeError(f"{self.query}: its sort type must be Literal{list(named)}")

    async def page(
        self, request: Request, where: Sorted, params: dict[str, Any]
    ) -> Page[dict[str, Any]]:
        """One page of rows in `where.sort`, after `where.cursor`, with the cursor that
        follows."""
        async with store.connection(runtime(request).pool) as conn:
            return await self.page_on(conn, where, params)

    async def answered(
        self, request: Request, where: Sorted, params: dict[str, Any], kind: type[Any]
    ) -> Response:
        """One page, its rows as `kind`, as the answer."""
        return answer(converted(await self.page(request, where, params), kind))

    async def every_row(
        self, conn: Connection, sort: str, params: dict[str, Any], batch: int = 500
    ) -> AsyncIterator[dict[str, Any]]:
        """Every row in `sort`, read `batch` at a time through a server-side cursor, so that
        a list of any length is never held whole."""
        statement = self._statement(self._order(sort), sort.startswith("-"), after=False)
        async with conn.transaction(), conn.cursor("every_row") as cur:
            cur.itersize = batch
            await cur.execute(statement, {**params, "limit": None})
            async for row in cur:
                yield dict(row)

    def _order(self, sort: str) -> tuple[Column, ...]:
        by = next(c for c in self.sorts if c.name == sort.lstrip("-"))
        return (by, *(c for c in self.key if c != by))

    async def page_on(
        self, conn: Connection, where: Sorted, params: dict[str, Any]
    ) -> Page[dict[str, Any]]:
        sort = where.sort
        descending = sort.startswith("-")
        order = self._order(sort)
        after = None if where.cursor is None else _position(where.cursor, sort, order)
        values = {f"after_{i}": value for i, value in enumerate(after or ())}
        statement = self._statement(order, descending, after is not None)
        cur = await conn.execute(statement, {**params, **values, "limit": where.limit + 1})
        rows = [dict(row) for row in await cur.fetchall()]
        shown = rows[: where.limit]
        if len(rows) <= where.limit or not shown:
            return Page(shown, None)
        last = shown[-1]
        return Page(shown, _cursor(sort, [msgspec.to_builtins(last[c.name]) for c in order]))

    def _statement(self, order: tuple[Column, ...], descending: bool, after: bool) -> sql.Composed:
        direction = sql.SQL(" DESC" if descending else "")
        terms = sql.SQL(", ").join(c.expression() for c in order)
        places = sql.SQL(", ").join(sql.Placeholder(f"after_{i}") for i in range(len(order)))
        # One row comparison covers the sort and its tie-breakers, all one way.
        keyset = (
            sql.SQL("WHERE ({}) {} ({})").format(terms, sql.SQL("<" if descending else ">"), places)
            if after
            else sql.SQL("")
        )
        return sql.SQL("SELECT r.* FROM (\n{}\n) AS r {} ORDER BY {} LIMIT %(limit)s").format(
            sql.SQL(store.Q[self.query]),
            keyset,
            sql.SQL(", ").join(sql.Composed([c.expression(), direction]) for c in order),
        )


def path_id(request: Request, name: str, what: str) -> int:
    """The id a path names (`{channel_id:int}`); 404 for one no integer column holds, before
    PostgreSQL is asked about it."""
    value = int(request.path_params[name])
    if value >= 2**31:
        raise errors.NotFound(f"no {what} by that id")
    return value


def answer(value: Any, status: int = 200) -> Response:
    """A JSON answer written by msgspec: times in ISO 8601, structs by their fields."""
    return Response(msgspec.json.encode(value), status_code=status, media_type="application/json")


def _cursor(sort: str, values: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"s": sort, "v": values}).encode()).decode()


def _position(cursor: str, sort: str, order: tuple[Column, ...]) -> tuple[Any, ...]:
    """The values a cursor holds, each of its column's type. One this API did not give out for
    this sort is a value the parameter cannot take: 422 at `cursor`."""
    foreign = errors.InvalidValue(
        "cursor is not one this API gave out for this list", field="cursor", code="bad-format"
    )
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
        given, values = value["s"], value["v"]
    except (ValueError, binascii.Error, KeyError, TypeError, UnicodeEncodeError):
        raise foreign from None
    if given != sort:
        raise errors.InvalidValue(
            f"cursor belongs to sort {given!r}, not {sort!r}", field="cursor", code="bad-format"
        )
    if not isinstance(values, list) or len(values) != len(order):
        raise foreign
    try:
        return tuple(_value(v, c.kind) for v, c in zip(values, order, strict=True))
    except (msgspec.ValidationError, ValueError, ArithmeticError):
        raise foreign from None


def _value(given: Any, kind: type) -> Any:
    """A cursor's value as its column's type, and within what PostgreSQL holds of it."""
    if kind is Decimal:
        if not isinstance(given, str) or not _DECIMAL.fullmatch(given):
            raise ValueError("not an amount")
        return Decimal(given)
    value: Any = msgspec.convert(given, kind, strict=False)
    if isinstance(value, int) and not -(2**63) <= value < 2**63:
        raise ValueError("out of range")
    if isinstance(value, str):
        value.encode()  # a lone surrogate raises here, not in the driver
        if "\x00" in value:
            raise ValueError("NUL")
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        raise ValueError("no time zone")
    return value


_DECIMAL = re.compile(r"-?[0-9]{1,40}(\.[0-9]{1,40})?")


def given(change: msgspec.Struct) -> dict[str, Any]:
    """The fields a change (a PATCH body) sets: those it names, null included."""
    return {
        name: value
        for name in change.__struct_fields__
        if (value := getattr(change, name)) is not msgspec.UNSET
    }


def mapped(page: Page[dict[str, Any]], make: Callable[[dict[str, Any]], T]) -> Page[T]:
    """A page's rows made into what the answer shows."""
    return Page([make(row) for row in page.items], page.next_cursor)


def converted(page: Page[dict[str, Any]], kind: type[T]) -> Page[T]:
    """A page's rows as `kind`, field by field."""
    return Page(msgspec.convert(page.items, list[kind]), page.next_cursor)  # type: ignore[valid-type]


ID = Column("id", int)
CREATED = Column("created_at", dt.datetime)
