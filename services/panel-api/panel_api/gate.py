"""The gate's configuration for the owner's panel: channels and the bots' rights there, each
bot's default gate set, and contents with their links.

Finding a channel is botedge's (only botedge calls Telegram): the panel forwards it to
`POST /internal/channels/check` and relays the answer. Whether a channel is paid, its manager
bot and its default plan, the default gate set and the contents are the panel's to write.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from panel_api import errors, store
from panel_api.access import (
    CREATED,
    ID,
    Caller,
    Column,
    Listing,
    Page,
    Paged,
    answer,
    audit,
    mapped,
    path_id,
    query,
)
from panel_api.fields import Currency, GraceDays, Id, PeriodDays, Price, price_minor
from panel_api.internal import Internal, relayed
from shared.clock import Clock
from shared.currencies import major_text
from shared.db import Connection
from shared.errors import json_body
from shared.telegram_shapes import CHAT_PATTERN
from shared.telegram_text import CAPTION_LIMIT, TEXT_LIMIT, utf16_units
from shared.web import runtime

Q = store.Q
# Telegram's deep-link payload; `ads` and `pay_...` belong to the ad shop and to paying.
CODE = re.compile(r"[A-Za-z0-9_-]{1,64}", re.ASCII)
RESERVED = re.compile(r"ads|pay_.*", re.ASCII)
Url = Annotated[str, msgspec.Meta(max_length=300, pattern=r"^https://t\.me/\S+$")]


class NewChannel(msgspec.Struct, forbid_unknown_fields=True):
    bot_id: Id
    chat: Annotated[str, msgspec.Meta(min_length=1, max_length=300, pattern=CHAT_PATTERN)]


class ChannelFound(msgspec.Struct):
    """botedge's answer to a channel check, relayed."""

    chat: dict[str, Any]
    rights: dict[str, Any]


class DefaultPrice(msgspec.Struct, forbid_unknown_fields=True):
    """The channel page's price: its default plan."""

    # In the currency's major units ("12.50" USD, "500" JPY), as a person types it.
    price: Price
    currency: Currency
    period_days: PeriodDays
    grace_days: GraceDays

    def price_minor(self) -> int:
        return price_minor(self.price, self.currency, "plan.")


class DefaultPlan(msgspec.Struct):
    price_minor: int
    currency: str
    period_days: int
    grace_days: int
    # The price as text in the currency's major units, for people.
    price: str = ""

    def __post_init__(self) -> None:
        self.price = major_text(self.price_minor, self.currency)


# Hours before expiry at which members are reminded: up to 10, each within a year.
ReminderHours = Annotated[
    list[Annotated[int, msgspec.Meta(ge=1, le=8760)]], msgspec.Meta(max_length=10)
]


class ChannelChange(msgspec.Struct, forbid_unknown_fields=True):
    is_paid: bool | msgspec.UnsetType = msgspec.UNSET
    manager_bot_id: Id | msgspec.UnsetType | None = msgspec.UNSET
    plan: DefaultPrice | msgspec.UnsetType = msgspec.UNSET
    reminder_hours: ReminderHours | msgspec.UnsetType = msgspec.UNSET
    admission: Literal["single_use_link", "join_request"] | msgspec.UnsetType = msgspec.UNSET


class BotStanding(msgspec.Struct):
    bot_id: int
    status: str
    is_admin: bool
    can_invite_users: bool
    can_restrict_members: bool
    default_gate: bool
    join_url: str | None
    checked_at: dt.datetime | None
    last_error: str | None
    # Not an admin there, or Telegram could not tell: the gate and access cannot rely on it.
    flagged: bool = False


class Channel(msgspec.Struct):
    id: int
    telegram_chat_id: int
    title: str
    username: str | None
    chat_type: str | None
    is_paid: bool
    manager_bot_id: int | None
    plan: DefaultPlan | None
    bots: list[BotStanding]
    reminder_hours: list[int] = msgspec.field(default_factory=list)
    admission: str = "single_use_link"
    # The join-request link the manager bot made (join_request admission), once it has.
    join_request_link: str | None = None
    # t.me/<manager bot>?start=pay_<id>, for a paid channel with a manager bot.
    pay_link: str | None = None


class GateChoice(msgspec.Struct, forbid_unknown_fields=True):
    channel_id: Id
    # Where visitors join a private channel; a public one's t.me/<username> is used otherwise.
    join_url: Url | None = None


class DefaultGate(msgspec.Struct, forbid_unknown_fields=True):
    channels: Annotated[list[GateChoice], msgspec.Meta(max_length=20)]


class ContentBody(msgspec.Struct, forbid_unknown_fields=True):
    bot_id: Id
    code: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
    kind: Literal["text", "file", "post"]
    body: Annotated[str, msgspec.Meta(max_length=4096)] = ""
    file_kind: Literal["photo", "video", "document"] | None = None
    file_id: Annotated[str, msgspec.Meta(min_length=1, max_length=300)] | None = None
    from_chat_id: Annotated[int, msgspec.Meta(ge=-(2**53), le=2**53)] | None = None
    message_id: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)] | None = None
    # Null: the bot's default gate set.
    gate_channel_ids: (
        Annotated[list[Id], msgspec.Meta(max_length=20, extra_json_schema={"uniqueItems": True})]
        | None
    ) = None


class GateChannel(msgspec.Struct):
    channel_id: int
    title: str
    flagged: bool


class Content(msgspec.Struct):
    id: int
    bot_id: int
    code: str
    kind: Literal["text", "file", "post"]
    body: str
    file_kind: str | None
    file_id: str | None
    from_chat_id: int | None
    message_id: int | None
    default_gate: bool
    gate: list[GateChannel]
    link: str
    created_at: dt.datetime
    updated_at: dt.datetime


ChannelsSort = Literal["id", "-id", "title", "-title", "telegram_chat_id", "-telegram_chat_id"]
CHANNELS = Listing(
    "channels_list",
    key=(ID,),
    sorts=(ID, Column("title", str), Column("telegram_chat_id", int)),
    sort_type=ChannelsSort,
)


class ChannelQuery(Paged, kw_only=True):
    sort: ChannelsSort = "id"


ContentsSort = Literal[
    "id",
    "-id",
    "code",
    "-code",
    "bot_id",
    "-bot_id",
    "created_at",
    "-created_at",
    "updated_at",
    "-updated_at",
]
CONTENTS = Listing(
    "contents_list",
    key=(ID,),
    sorts=(
        ID,
        Column("code", str),
        Column("bot_id", int),
        CREATED,
        Column("updated_at", dt.datetime),
    ),
    sort_type=ContentsSort,
)


class ContentQuery(Paged, kw_only=True):
    bot: Id | None = None
    sort: ContentsSort = "id"


class Gate:
    def __init__(self, clock: Clock, botedge: Internal) -> None:
        self.clock = clock
        self.botedge = botedge

    # -- channels ------------------------------------------------------------------------

    async def channels(self, request: Request, caller: Caller) -> Response:
        found = await CHANNELS.page(request, query(request, ChannelQuery), {"id": None})
        return answer(mapped(found, _channel))

    async def channel(self, request: Request, caller: Caller) -> Response:
        channel_id = path_id(request, "channel_id", "channel")
        async with store.connection(runtime(request).pool) as conn:
            return answer(await _one_channel(conn, channel_id))

    async def add_channel(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewChannel, limit=4096)
        found = await self.botedge.ask(
            "POST", "/internal/channels/check", msgspec.to_builtins(body)
        )
        if found.status_code == 200:
            checked = found.json()
            async with store.connection(runtime(request).pool) as conn:
                await self._audit(
                    conn,
                    caller,
                    "channels.check",
                    f"channel:{checked['chat']['id']}",
                    None,
                    checked,
                )
        return relayed(found)

    async def change_channel(self, request: Request, caller: Caller) -> Response:
        channel_id = path_id(request, "channel_id", "channel")
        body = await json_body(request, ChannelChange, limit=4096)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            cur = await conn.execute(Q["channel_for_update"], {"id": channel_id})
            before = await cur.fetchone()
            if before is None:
                raise errors.NotFound("no channel by that id")
            manager = before["manager_bot_id"]
            if not isinstance(body.manager_bot_id, msgspec.UnsetType):
                manager = body.manager_bot_id
                if manager is not None and not await _bot_username(conn, manager):
                    raise errors.InvalidValue(
                        f"no bot {manager}", field="manager_bot_id", code="not-found"
                    )
            is_paid = (
                before["is_paid"] if isinstance(body.is_paid, msgspec.UnsetType) else body.is_paid
            )
            admission = (
                before["admission"]
                if isinstance(body.admission, msgspec.UnsetType)
                else body.admission
            )
            reminders = (
                before["reminder_hours"]
                if isinstance(body.reminder_hours, msgspec.UnsetType)
                else sorted(set(body.reminder_hours), reverse=True)
            )
            await conn.execute(
                Q["update_channel"],
                {
                    "id": channel_id,
                    "is_paid": is_paid,
                    "manager_bot_id": manager,
                    "reminder_hours": reminders,
                    "admission": admission,
                },
            )
            plan = None
            if not isinstance(body.plan, msgspec.UnsetType):
                plan = DefaultPlan(
                    body.plan.price_minor(),
                    body.plan.currency,
                    body.plan.period_days,
                    body.plan.grace_days,
                )
                await conn.execute(
                    Q["replace_default_plan"],
                    {
                        "channel_id": channel_id,
                        "price_minor": plan.price_minor,
                        "currency": plan.currency,
                        "period_days": plan.period_days,
                        "grace_days": plan.grace_days,
                        "now": self.clock.now(),
                    },
                )
            after = {
                "is_paid": is_paid,
                "manager_bot_id": manager,
                "reminder_hours": reminders,
                "admission": admission,
                "plan": None if plan is None else msgspec.to_builtins(plan),
            }
            await self._audit(
                conn, caller, "channels.update", f"channel:{channel_id}", dict(before), after
            )
            changed = await _one_channel(conn, channel_id)
        return answer(changed)

    async def set_default_gate(self, request: Request, caller: Caller) -> Response:
        bot_id = path_id(request, "bot_id", "bot")
        body = await json_body(request, DefaultGate, limit=16384)
        ids = [choice.channel_id for choice in body.channels]
        if len(set(ids)) != len(ids):
            raise errors.InvalidValue(
                "a channel is listed twice", field="channels", code="duplicate"
            )
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            if not await _bot_username(conn, bot_id):
                raise errors.NotFound("no bot by that id")
            await _require_channels(conn, ids)
            await conn.execute(Q["clear_default_gate"], {"bot_id": bot_id})
            for choice in body.channels:
                await conn.execute(
                    Q["set_default_gate"],
                    {
                        "bot_id": bot_id,
                        "channel_id": choice.channel_id,
                        "join_url": choice.join_url,
                    },
                )
            await self._audit(
                conn, caller, "bots.default_gate", f"bot:{bot_id}", None, msgspec.to_builtins(body)
            )
        return answer(body)

    # -- contents ------------------------------------------------------------------------

    async def contents(self, request: Request, caller: Caller) -> Response:
        where = query(request, ContentQuery)
        async with store.connection(runtime(request).pool) as conn:
            found = await CONTENTS.page_on(conn, where, {"bot_id": where.bot})
            shown = await _contents(conn, found.items)
        return answer(Page(shown, found.next_cursor))

    async def add_content(self, request: Request, caller: Caller) -> Response:
        body = _checked(await json_body(request, ContentBody, limit=16384))
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            if not await _bot_username(conn, body.bot_id):
                raise errors.InvalidValue(f"no bot {body.bot_id}", field="bot_id", code="not-found")
            await _require_channels(conn, body.gate_channel_ids or [])
            cur = await conn.execute(Q["insert_content"], _content_params(body))
            row = await cur.fetchone()
            if row is None:
                raise errors.InvalidValue(
                    f"the bot already has a content {body.code!r}", field="code", code="taken"
                )
            content_id = int(row["id"])
            await _set_gate(conn, content_id, body)
            content = await _content(conn, content_id)
            await self._audit(
                conn,
                caller,
                "contents.add",
                f"content:{content_id}",
                None,
                msgspec.to_builtins(body),
            )
        return answer(content, status=201)

    async def change_content(self, request: Request, caller: Caller) -> Response:
        content_id = path_id(request, "content_id", "content")
        body = _checked(await json_body(request, ContentBody, limit=16384))
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            cur = await conn.execute(Q["content_for_update"], {"id": content_id})
            before = await cur.fetchone()
            if before is None:
                raise errors.NotFound("no content by that id")
            if before["bot_id"] != body.bot_id:
                raise errors.InvalidValue(
                    "a content stays with its bot", field="bot_id", code="invalid"
                )
            taken = await conn.execute(
                Q["code_taken"], {"bot_id": body.bot_id, "code": body.code, "id": content_id}
            )
            if await taken.fetchone():
                raise errors.InvalidValue(
                    f"the bot already has a content {body.code!r}", field="code", code="taken"
                )
            await _require_channels(conn, body.gate_channel_ids or [])
            await conn.execute(Q["update_content"], {"id": content_id, **_content_params(body)})
            await _set_gate(conn, content_id, body)
            content = await _content(conn, content_id)
            await self._audit(
                conn,
                caller,
                "contents.update",
                f"content:{content_id}",
                dict(before),
                msgspec.to_builtins(body),
            )
        return answer(content)

    async def delete_content(self, request: Request, caller: Caller) -> Response:
        content_id = path_id(request, "content_id", "content")
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            cur = await conn.execute(Q["content_for_update"], {"id": content_id})
            before = await cur.fetchone()
            if before is None:
                raise errors.NotFound("no content by that id")
            await conn.execute(Q["delete_content"], {"id": content_id})
            await self._audit(
                conn, caller, "contents.delete", f"content:{content_id}", dict(before), None
            )
        return Response(status_code=204)

    async def _audit(
        self, conn: Connection, caller: Caller, action: str, target: str, before: Any, after: Any
    ) -> None:
        await audit(conn, caller, self.clock, action, target, before, after)


async def _one_channel(conn: Connection, channel_id: int) -> Channel:
    cur = await conn.execute(Q["channels_list"], {"id": channel_id})
    row = await cur.fetchone()
    if row is None:
        raise errors.NotFound("no channel by that id")
    return _channel(dict(row))


def _channel(row: dict[str, Any]) -> Channel:
    channel = msgspec.convert(row, Channel, strict=False)
    for bot in channel.bots:
        bot.flagged = not bot.is_admin or bot.last_error is not None
    return channel


def _checked(body: ContentBody) -> ContentBody:
    if not CODE.fullmatch(body.code):
        raise errors.InvalidValue(
            "code is 1-64 of A-Z, a-z, 0-9, _ and -", field="code", code="bad-format"
        )
    if RESERVED.fullmatch(body.code):
        raise errors.InvalidValue(
            f"{body.code!r} is reserved for the bot's own use", field="code", code="reserved"
        )
    if body.kind == "text" and not body.body.strip():
        raise errors.InvalidValue("a text content needs a body", field="body", code="required")
    # Sent as it is (no parse mode): its length in UTF-16 units, as Telegram counts, within a
    # caption's limit for a file and a message's for a text.
    limit = CAPTION_LIMIT if body.kind == "file" else TEXT_LIMIT
    if body.kind != "post" and utf16_units(body.body) > limit:
        raise errors.InvalidValue(
            f"Telegram takes at most {limit} characters here", field="body", code="too-long"
        )
    if body.kind == "file" and (body.file_kind is None or body.file_id is None):
        raise errors.InvalidValue(
            "a file content needs file_kind and file_id", field="file_id", code="required"
        )
    if body.kind == "post" and (body.from_chat_id is None or body.message_id is None):
        raise errors.InvalidValue(
            "a post content needs from_chat_id and message_id", field="message_id", code="required"
        )
    if body.gate_channel_ids is not None and len(set(body.gate_channel_ids)) != len(
        body.gate_channel_ids
    ):
        raise errors.InvalidValue(
            "a gate channel is listed twice", field="gate_channel_ids", code="duplicate"
        )
    return body


def _content_params(body: ContentBody) -> dict[str, Any]:
    file = body.kind == "file"
    post = body.kind == "post"
    return {
        "bot_id": body.bot_id,
        "code": body.code,
        "kind": body.kind,
        "body": body.body,
        "file_kind": body.file_kind if file else None,
        "file_id": body.file_id if file else None,
        "from_chat_id": body.from_chat_id if post else None,
        "message_id": body.message_id if post else None,
        "default_gate": body.gate_channel_ids is None,
    }


async def _set_gate(conn: Connection, content_id: int, body: ContentBody) -> None:
    await conn.execute(Q["clear_content_gate"], {"id": content_id})
    if body.gate_channel_ids:
        await conn.execute(
            Q["add_content_gate"], {"id": content_id, "channel_ids": body.gate_channel_ids}
        )


async def _require_channels(conn: Connection, ids: list[int]) -> None:
    if not ids:
        return
    cur = await conn.execute(Q["channels_exist"], {"ids": ids})
    row = await cur.fetchone()
    if row is None or row["n"] != len(ids):
        raise errors.InvalidValue(
            "a gate channel does not exist", field="gate_channel_ids", code="not-found"
        )


async def _bot_username(conn: Connection, bot_id: int) -> str | None:
    cur = await conn.execute(Q["bot_exists"], {"id": bot_id})
    row = await cur.fetchone()
    return None if row is None else str(row["username"]) or f"bot{bot_id}"


async def _content(conn: Connection, content_id: int) -> Content:
    [content] = await _contents(conn, await store.rows(conn, "content_one", {"id": content_id}))
    return content


async def _contents(conn: Connection, rows: list[dict[str, Any]]) -> list[Content]:
    cur = await conn.execute(Q["content_gates"], {"ids": [row["id"] for row in rows]})
    gates: dict[int, list[GateChannel]] = {}
    for gate in await cur.fetchall():
        gates.setdefault(int(gate["content_id"]), []).append(
            GateChannel(int(gate["channel_id"]), str(gate["title"]), bool(gate["flagged"]))
        )
    return [
        Content(
            id=row["id"],
            bot_id=row["bot_id"],
            code=row["code"],
            kind=row["kind"],
            body=row["body"],
            file_kind=row["file_kind"],
            file_id=row["file_id"],
            from_chat_id=row["from_chat_id"],
            message_id=row["message_id"],
            default_gate=row["default_gate"],
            gate=gates.get(int(row["id"]), []),
            link=f"https://t.me/{row['bot_username']}?start={row['code']}",
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )
        for row in rows
    ]
