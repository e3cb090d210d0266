"""Broadcasts for the owner's panel: one message to every person of a bot, or to those of an
audience (a channel, a membership status there, a plan they paid for, the language the bot
writes to them in, or people chosen on the Memberships page), now or from a set time; its
progress, a test to one person first, and cancelling.

The panel writes a queued broadcast (configuration); botedge claims it and fans it out into
the outbox. A test message and a cancel are asked of botedge (`/internal/broadcasts/...`):
only botedge calls Telegram and writes the outbox.
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
    Listing,
    Paged,
    answer,
    audit,
    mapped,
    path_id,
    query,
)
from panel_api.fields import Id, MembershipStatus
from panel_api.internal import Internal, relayed
from shared.clock import Clock
from shared.db import Connection
from shared.errors import json_body
from shared.telegram_text import TEXT_LIMIT, html_problem, utf16_units
from shared.web import runtime

Q = store.Q
# Telegram's limits, counted in UTF-16 code units as Telegram counts them.
BUTTON_LIMIT = 64

State = Literal["queued", "fanning_out", "sending", "done", "cancelled"]
Language = Literal["en", "fa", "ru", "ar"]
# The most people one broadcast may be chosen for by hand (the Memberships page's "all that
# match" loads at most as many).
CHOSEN_LIMIT = 2000
# How far ahead a broadcast may be set to start.
AHEAD_LIMIT = dt.timedelta(days=90)


class AudienceSpec(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Whom of the bot's people a broadcast is for: everyone when nothing is set; each field
    set narrows it. A status or a plan is within a channel (a plan names its own)."""

    bot_id: Id
    channel_id: Id | None = None
    plan_id: Id | None = None
    member_status: MembershipStatus | None = None
    # The language the bot writes to them in.
    language: Language | None = None
    # Our ids of people chosen by hand (a membership's `person_id`).
    people: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=CHOSEN_LIMIT)] | None = None


class NewBroadcast(AudienceSpec, forbid_unknown_fields=True, kw_only=True):
    # Telegram HTML: <b>, <i>, <u>, <s>, <a href="...">, <code>, <pre>, <blockquote>, ...
    text: Annotated[str, msgspec.Meta(max_length=20_000)] | None = None
    content_id: Id | None = None
    button_text: Annotated[str, msgspec.Meta(max_length=1000)] | None = None
    button_url: Annotated[str, msgspec.Meta(max_length=2048)] | None = None
    # From when it goes out; at once without it.
    starts_at: Annotated[dt.datetime, msgspec.Meta(tz=True)] | None = None


class BroadcastTest(NewBroadcast, kw_only=True):
    # Who gets the test: a Telegram user id or @username of someone who started the bot.
    to: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class TestSent(msgspec.Struct):
    sent: bool
    message_id: int | None


class Broadcast(msgspec.Struct):
    id: int
    bot_id: int
    bot_username: str
    text: str | None
    content_id: int | None
    content_code: str | None
    button_text: str | None
    button_url: str | None
    state: State
    # Sends queued so far, and people passed over (blocked the bot, or unreachable).
    recipients: int
    skipped: int
    # Of the queued: still waiting, sent, refused by Telegram, dropped by a cancel.
    queued: int
    sent: int
    failed: int
    unsent: int
    error: str | None
    created_by: str | None
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    # Its audience (none set: everyone of the bot), and how many were chosen by hand.
    channel_id: int | None = None
    channel_title: str | None = None
    plan_id: int | None = None
    plan_name: str | None = None
    member_status: MembershipStatus | None = None
    language: Language | None = None
    chosen: int | None = None
    starts_at: dt.datetime | None = None


class Audience(msgspec.Struct):
    """Who a broadcast of the bot would reach now (of its audience, when one is given)."""

    bot_id: int
    people: int
    reachable: int
    blocked: int
    unreachable: int


BroadcastsSort = Literal["id", "-id", "created_at", "-created_at"]
BROADCASTS = Listing("broadcasts_list", key=(ID,), sorts=(ID, CREATED), sort_type=BroadcastsSort)


class BroadcastQuery(Paged, kw_only=True):
    bot: Id | None = None
    state: State | None = None
    sort: BroadcastsSort = "-id"


class AudienceQuery(msgspec.Struct, forbid_unknown_fields=True):
    bot: Id


class Broadcasts:
    def __init__(self, clock: Clock, botedge: Internal) -> None:
        self.clock = clock
        self.botedge = botedge

    async def broadcasts(self, request: Request, caller: Caller) -> Response:
        where = query(request, BroadcastQuery)
        found = await BROADCASTS.page(
            request, where, {"id": None, "bot_id": where.bot, "state": where.state}
        )
        return answer(mapped(found, lambda row: msgspec.convert(row, Broadcast)))

    async def broadcast(self, request: Request, caller: Caller) -> Response:
        broadcast_id = path_id(request, "broadcast_id", "broadcast")
        async with store.connection(runtime(request).pool) as conn:
            return answer(await _one(conn, broadcast_id))

    async def audience(self, request: Request, caller: Caller) -> Response:
        where = query(request, AudienceQuery)
        return await self._counted(request, AudienceSpec(bot_id=where.bot))

    async def audience_of(self, request: Request, caller: Caller) -> Response:
        return await self._counted(request, await json_body(request, AudienceSpec, limit=65536))

    async def _counted(self, request: Request, spec: AudienceSpec) -> Response:
        async with store.connection(runtime(request).pool) as conn:
            audience = await _audience(conn, spec)
            row = await store.row(conn, "broadcast_audience", audience)
        return answer(msgspec.convert({"bot_id": spec.bot_id, **(row or {})}, Audience))

    async def send(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, NewBroadcast, limit=65536)
        draft = _draft(body)
        now = self.clock.now()
        _check_start(body, now)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            await _check(conn, draft)
            audience = await _audience(conn, body)
            made = await store.row(
                conn,
                "insert_broadcast",
                {
                    **draft,
                    **audience,
                    "starts_at": body.starts_at,
                    "created_by": caller.id,
                    "now": now,
                },
            )
            if made is None:
                raise errors.StoreError("insert_broadcast returned no row")
            broadcast = await _one(conn, int(made["id"]))
            await audit(
                conn,
                caller,
                self.clock,
                "broadcasts.send",
                f"broadcast:{broadcast.id}",
                None,
                {
                    **draft,
                    **audience,
                    "people": len(body.people or ()) or None,
                    "starts_at": body.starts_at.isoformat() if body.starts_at else None,
                },
            )
            # Delivered at commit: a worker takes it up at once rather than at its next poll.
            await conn.execute("SELECT pg_notify('broadcasts', '')")
        return answer(broadcast, status=201)

    async def test(self, request: Request, caller: Caller) -> Response:
        body = await json_body(request, BroadcastTest, limit=65536)
        draft = _draft(body)
        # The audience and the start are checked too, so the form hears of them before the
        # test goes rather than at "send to all".
        _check_start(body, self.clock.now())
        async with store.connection(runtime(request).pool) as conn:
            await _check(conn, draft)
            await _audience(conn, body)
            chat_id = await _test_person(conn, body.bot_id, body.to)
        sent = await self.botedge.ask(
            "POST",
            "/internal/broadcasts/test",
            {k: v for k, v in {**draft, "chat_id": chat_id}.items() if v is not None},
        )
        if sent.status_code != 200:
            return relayed(sent)
        return answer(msgspec.convert(sent.json(), TestSent))

    async def cancel(self, request: Request, caller: Caller) -> Response:
        broadcast_id = path_id(request, "broadcast_id", "broadcast")
        async with store.connection(runtime(request).pool) as conn:
            before = await _one(conn, broadcast_id)
        stopped = await self.botedge.ask("POST", f"/internal/broadcasts/{broadcast_id}/cancel")
        if stopped.status_code != 200:
            return relayed(stopped)
        async with store.connection(runtime(request).pool) as conn, conn.transaction():
            after = await _one(conn, broadcast_id)
            await audit(
                conn,
                caller,
                self.clock,
                "broadcasts.cancel",
                f"broadcast:{broadcast_id}",
                {"state": before.state},
                {"state": after.state, "unsent": after.unsent},
            )
        return answer(after)


def _draft(body: NewBroadcast) -> dict[str, Any]:
    """The fields that make the message, trimmed, with the checks that need no database."""
    text = body.text.strip() if body.text is not None else None
    button_text = body.button_text.strip() if body.button_text is not None else None
    button_url = body.button_url.strip() if body.button_url is not None else None
    if not text and body.content_id is None:
        raise errors.InvalidValue(
            "a broadcast is a text or one of the bot's contents", field="text", code="required"
        )
    if text and body.content_id is not None:
        raise errors.InvalidValue(
            "a broadcast is a text or a content, not both", field="content_id", code="invalid"
        )
    if text:
        if utf16_units(text) > TEXT_LIMIT:
            raise errors.InvalidValue(
                f"Telegram takes a message of at most {TEXT_LIMIT} characters",
                field="text",
                code="too-long",
            )
        problem = html_problem(text)
        if problem:
            raise errors.InvalidValue(problem, field="text", code="invalid")
    if button_text and not button_url:
        raise errors.InvalidValue("a button needs a link", field="button_url", code="required")
    if button_url and not button_text:
        raise errors.InvalidValue("a button needs a label", field="button_text", code="required")
    if button_text and utf16_units(button_text) > BUTTON_LIMIT:
        raise errors.InvalidValue(
            f"Telegram takes a button label of at most {BUTTON_LIMIT} characters",
            field="button_text",
            code="too-long",
        )
    if button_url and not re.fullmatch(r"(https?|tg)://[^\s]+", button_url):
        raise errors.InvalidValue(
            "a button opens an https://, http:// or tg:// link",
            field="button_url",
            code="bad-format",
        )
    return {
        "bot_id": body.bot_id,
        "text": text or None,
        "content_id": body.content_id,
        "button_text": button_text or None,
        "button_url": button_url or None,
    }


async def _check(conn: Connection, draft: dict[str, Any]) -> None:
    found = await store.row(conn, "broadcast_target", draft)
    if found is None or found["bot_status"] is None:
        raise errors.InvalidValue("no bot by that id", field="bot_id", code="not-found")
    if found["bot_status"] != "active":
        raise errors.InvalidValue(
            f"the bot is {found['bot_status']}: only an active bot sends",
            field="bot_id",
            code="invalid",
        )
    if draft["content_id"] is not None and not found["content_found"]:
        raise errors.InvalidValue(
            "the bot has no content by that id", field="content_id", code="not-found"
        )


def _check_start(body: NewBroadcast, now: dt.datetime) -> None:
    if body.starts_at is not None and not now <= body.starts_at <= now + AHEAD_LIMIT:
        raise errors.InvalidValue(
            "a broadcast starts now or within 90 days", field="starts_at", code="out-of-range"
        )


async def _audience(conn: Connection, spec: AudienceSpec) -> dict[str, Any]:
    """The audience's parameters, checked: a plan's channel filled in (or refused when another
    channel is named), a status only within a channel, each id known."""
    channel_id = spec.channel_id
    if spec.plan_id is not None:
        plan = await store.row(conn, "plan_channel", {"plan_id": spec.plan_id})
        if plan is None:
            raise errors.InvalidValue("no plan by that id", field="plan_id", code="not-found")
        if channel_id is not None and channel_id != plan["channel_id"]:
            raise errors.InvalidValue(
                "the plan is another channel's", field="plan_id", code="invalid"
            )
        channel_id = int(plan["channel_id"])
    if spec.member_status is not None and channel_id is None:
        raise errors.InvalidValue(
            "a membership's status is in a channel: choose the channel",
            field="channel_id",
            code="required",
        )
    if channel_id is not None and spec.plan_id is None:
        found = await store.row(conn, "channel_title", {"channel_id": channel_id})
        if found is None:
            raise errors.InvalidValue("no channel by that id", field="channel_id", code="not-found")
    return {
        "bot_id": spec.bot_id,
        "channel_id": channel_id,
        "plan_id": spec.plan_id,
        "member_status": spec.member_status,
        "language": spec.language,
        "people": sorted(set(spec.people)) if spec.people else None,
    }


async def _test_person(conn: Connection, bot_id: int, to: str) -> int:
    """The chat of the person a test goes to: by Telegram id or @username, among the people
    who started the bot (Telegram lets a bot write only to them)."""
    name = to.strip().removeprefix("@")
    user_id = int(name) if name.isdigit() else None
    found = await store.row(
        conn,
        "broadcast_test_person",
        {"bot_id": bot_id, "user_id": user_id, "username": None if user_id else name},
    )
    if found is None:
        raise errors.InvalidValue(
            "nobody by that id or username has started this bot", field="to", code="not-found"
        )
    if found["blocked"]:
        raise errors.InvalidValue("this person has blocked the bot", field="to", code="unreachable")
    return int(found["telegram_user_id"])


async def _one(conn: Connection, broadcast_id: int) -> Broadcast:
    row = await store.row(
        conn, "broadcasts_list", {"id": broadcast_id, "bot_id": None, "state": None}
    )
    if row is None:
        raise errors.NotFound("no broadcast by that id")
    return msgspec.convert(row, Broadcast)
