"""Access codes for the owner's panel: free days of a paid channel for whoever sends the code
to the bot (or opens its start link), up to a number of people and until an expiry; and who
used each. Codes are drawn here, unguessable; billing redeems them (`store.redeem_code`).
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, exports, store
from panel_api.access import (
    CREATED,
    ID,
    Caller,
    Column,
    Limit,
    Listing,
    Paged,
    Word,
    answer,
    audit,
    converted,
    given,
    path_id,
    query,
)
from panel_api.fields import Id
from shared.clock import Clock
from shared.db import Connection
from shared.errors import json_body
from shared.web import runtime

Q = store.Q

# RFC 4648's base32 alphabet: no 0/O or 1/I/L to mistake for each other.
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
# 12 symbols: 60 bits, and five wrong guesses in ten minutes per person.
LENGTH = 12
Days = Annotated[int, msgspec.Meta(ge=1, le=3660)]
MaxUses = Annotated[int, msgspec.Meta(ge=1, le=100_000)]
Label = Annotated[str, msgspec.Meta(max_length=100, pattern=r"^[^\x00-\x1f\x7f]*$")]
Expiry = Annotated[dt.datetime, msgspec.Meta(tz=True)]


def draw() -> str:
    """A new code: letters and digits both, as the bot recognises a code sent as a message."""
    while True:
        code = "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))
        if any(c.isdigit() for c in code) and any(c.isalpha() for c in code):
            return code


class NewAccessCodes(msgspec.Struct, forbid_unknown_fields=True):
    channel_id: Id
    days: Days
    # People each code admits.
    max_uses: MaxUses = 1
    expires_at: Expiry | None = None
    label: Label | None = None
    # Codes made at once, each its own.
    count: Annotated[int, msgspec.Meta(ge=1, le=500)] = 1


class AccessCodeChange(msgspec.Struct, forbid_unknown_fields=True):
    max_uses: MaxUses | msgspec.UnsetType = msgspec.UNSET
    expires_at: Expiry | msgspec.UnsetType | None = msgspec.UNSET
    label: Label | msgspec.UnsetType | None = msgspec.UNSET
    active: bool | msgspec.UnsetType = msgspec.UNSET


class AccessCode(msgspec.Struct):
    id: int
    code: str
    channel_id: int
    channel_title: str
    days: int
    max_uses: int
    expires_at: dt.datetime | None
    label: str | None
    active: bool
    created_at: dt.datetime
    updated_at: dt.datetime | None
    bot_username: str | None
    uses: int
    # The bot's start link that redeems it, once the channel has a managing bot.
    link: str | None = None

    def __post_init__(self) -> None:
        if self.bot_username:
            self.link = f"https://t.me/{self.bot_username}?start=code_{self.code}"


class Made(msgspec.Struct):
    items: list[AccessCode]


class CodeUse(msgspec.Struct):
    id: int
    code_id: int
    code: str
    telegram_user_id: int
    username: str | None
    first_name: str | None
    channel_title: str
    days: int
    used_at: dt.datetime


CodesSort = Literal["id", "-id", "uses", "-uses", "created_at", "-created_at"]
CODES = Listing(
    "access_codes_list", key=(ID,), sorts=(ID, Column("uses", int), CREATED), sort_type=CodesSort
)
UsesSort = Literal["id", "-id", "used_at", "-used_at"]
USES = Listing(
    "access_code_uses_list",
    key=(ID,),
    sorts=(ID, Column("used_at", dt.datetime)),
    sort_type=UsesSort,
)


class AccessCodeQuery(Paged, kw_only=True):
    channel: Id | None = None
    active: bool | None = None
    sort: CodesSort = "-id"


class CodeUseExport(msgspec.Struct, kw_only=True):
    code: Id | None = None
    sort: UsesSort = "-id"


class CodeUseQuery(CodeUseExport, kw_only=True):
    limit: Limit = 50
    cursor: Word | None = None


class AccessCodes:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def codes(self, request: Request, caller: Caller) -> Response:
        where = query(request, AccessCodeQuery)
        found = await CODES.page(
            request, where, {"id": None, "channel_id": where.channel, "active": where.active}
        )
        return answer(converted(found, AccessCode))

    async def code(self, request: Request, caller: Caller) -> Response:
        code_id = path_id(request, "code_id", "access code")
        async with store.connection(runtime(request).pool) as conn:
            return answer(await _one(conn, code_id))

    async def add_codes(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewAccessCodes, limit=4096)
        now = self.clock.now()
        if body.expires_at is not None and body.expires_at <= now:
            raise errors.InvalidValue(
                "the expiry is in the past", field="expires_at", code="out-of-range"
            )
        params = {
            "channel_id": body.channel_id,
            "days": body.days,
            "max_uses": body.max_uses,
            "expires_at": body.expires_at,
            "label": (body.label or "").strip() or None,
            "now": now,
        }
        ids: list[int] = []
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            if await store.row(conn, "paid_channel", {"id": body.channel_id}) is None:
                raise errors.InvalidValue(
                    "no paid channel by that id", field="channel_id", code="not-found"
                )
            # A drawn code that exists already (1 in 2^60 for each) is drawn again.
            while len(ids) < body.count:
                codes = [draw() for _ in range(body.count - len(ids))]
                cur = await conn.execute(Q["insert_access_codes"], {**params, "codes": codes})
                ids += [int(row["id"]) for row in await cur.fetchall()]
            made = [await _one(conn, code_id) for code_id in sorted(ids)]
            await audit(
                conn,
                caller,
                self.clock,
                "access_codes.add",
                f"channel:{body.channel_id}",
                None,
                {
                    **{k: v for k, v in params.items() if k != "now"},
                    "codes": [c.code for c in made],
                },
            )
        return answer(Made(made), status=201)

    async def change_code(self, request: Request, caller: Caller) -> Response:
        code_id = path_id(request, "code_id", "access code")
        body = await json_body(request, AccessCodeChange, limit=4096)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            await conn.execute(Q["lock_access_code"], {"id": code_id})
            before = await _one(conn, code_id)
            values = given(body)
            if "label" in values:
                values["label"] = (values["label"] or "").strip() or None
            after = msgspec.structs.replace(before, **values)
            if after.max_uses < before.uses:
                raise errors.InvalidValue(
                    f"the code was used {before.uses} times already",
                    field="max_uses",
                    code="out-of-range",
                )
            await conn.execute(
                Q["update_access_code"],
                {
                    "id": code_id,
                    "max_uses": after.max_uses,
                    "expires_at": after.expires_at,
                    "label": after.label,
                    "active": after.active,
                    "now": self.clock.now(),
                },
            )
            changed = await _one(conn, code_id)
            await audit(
                conn,
                caller,
                self.clock,
                "access_codes.update",
                f"access_code:{code_id}",
                _audited(before),
                _audited(changed),
            )
        return answer(changed)

    async def uses(self, request: Request, caller: Caller) -> Response:
        where = query(request, CodeUseQuery)
        found = await USES.page(request, where, {"code_id": where.code})
        return answer(converted(found, CodeUse))

    async def uses_csv(self, request: Request, caller: Caller) -> Response:
        where = query(request, CodeUseExport)
        columns: list[exports.Column] = [
            "code",
            "telegram_user_id",
            "username",
            "first_name",
            "channel_title",
            "days",
            "used_at",
        ]
        today = self.clock.now().date()
        return exports.download(
            request, USES, where.sort, {"code_id": where.code}, columns, "access-code-uses", today
        )


async def _one(conn: Connection, code_id: int) -> AccessCode:
    row = await store.row(
        conn, "access_codes_list", {"id": code_id, "channel_id": None, "active": None}
    )
    if row is None:
        raise errors.NotFound("no access code by that id")
    return msgspec.convert(dict(row), AccessCode)


def _audited(code: AccessCode) -> dict[str, Any]:
    entry: dict[str, Any] = msgspec.to_builtins(code)
    for derived in ("channel_title", "created_at", "updated_at", "bot_username", "uses", "link"):
        entry.pop(derived)
    return entry
