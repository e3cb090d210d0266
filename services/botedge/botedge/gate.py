"""The forced-join gate: content behind sponsor channels.

`/start <code>` asks Telegram, in `prepare`, whether the visitor is a member of each gate
channel. Members get the content. Anyone else gets the gate message: a button per missing
channel and "I've joined" (`gate:<content id>`). A press asks again, edits the message to what
is still missing, and once nothing is, deletes it and sends the content, once per person.

A channel where Telegram cannot tell (the bot is not an admin there, the chat is gone) does
not block anyone: it is Unknown, flagged on `bot_channels` for the owner. Telegram being
unreachable never lets anyone through: the update is retried (`RetryLater`).

"Joined" is cached for 5 minutes in the worker; "not joined" and Unknown never are. A leave or
a kick seen in `chat_member` is written with `NOTIFY gate, '<chat>:<user>'`, which empties
that entry in every worker once the leave is committed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botedge import bot_store, sqlq
from botedge.content import Content, content_reply
from botedge.db import connection
from botedge.ids import BotId
from botedge.metrics import CONTENT_LOOKUPS
from botedge.outbox_store import Reply
from botedge.routing import Context, Routes, Visit
from botedge.standing import intruder_replies, standing
from botedge.stats import Counted
from botedge.telegram import (
    BadRequest,
    ServerError,
    TelegramError,
    TooManyRequests,
    retry_later,
)
from botedge.text import escape_html
from botedge.updates import InboxRow
from botedge.words import Speech, isolate, msg
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Connection, Pool

log = logging.getLogger("botedge.gate")
Q = sqlq.Q

JOINED_TTL = 300.0
CONTENT_TTL = 60.0
CONTENTS_CHANNEL = "contents"
MEMBER = frozenset({"creator", "administrator", "member"})
CHANNEL = "gate"
GATE_TEXT = msg(
    "gate.join_first", "To open this, join first: {channels}. Then press “{button}”.", form="html"
)
JOINED_BUTTON = msg("gate.joined_button", "I've joined", form="button")
NOT_FOUND = msg("gate.not_found", "This link does not lead anywhere (any more).", form="note")
NOT_YET = msg("gate.not_yet", "Not yet: join the channels still listed.", form="note")


def is_member(chat_member: Any) -> bool:
    """Telegram's own rule: creator, administrator, member, or restricted while still in."""
    if not isinstance(chat_member, dict):
        return False
    status = chat_member.get("status")
    return status in MEMBER or (status == "restricted" and chat_member.get("is_member") is True)


class JoinState(enum.Enum):
    """Whether the visitor has joined a sponsor channel, as getChatMember (or its refusal)
    says."""

    JOINED = "joined"
    MISSING = "missing"
    UNKNOWN = "unknown"


def join_state_of(error: TelegramError) -> JoinState | None:
    """What a refused getChatMember says about the visitor; None: ask once more."""
    text = error.description.lower()
    if isinstance(error, ServerError | TooManyRequests):
        raise retry_later("getChatMember", error)
    if isinstance(error, BadRequest):
        if "user not found" in text:
            # Telegram has never seen the person there: not a member.
            return JoinState.MISSING
        if "participant_id_invalid" in text:
            return None
    # Not an admin there ("member list is inaccessible", CHAT_ADMIN_REQUIRED), "chat not
    # found", 403 "bot is not a member", and whatever else: it cannot tell.
    return JoinState.UNKNOWN


class JoinedCache:
    """(chat, user) pairs seen joined, each for `ttl` seconds."""

    def __init__(self, ttl: float = JOINED_TTL, clock: Clock = SYSTEM_CLOCK) -> None:
        self.ttl = ttl
        self.clock = clock
        self._until: dict[tuple[int, int], float] = {}

    def joined(self, chat_id: int, user_id: int) -> bool:
        until = self._until.get((chat_id, user_id))
        if until is None:
            return False
        if until <= self.clock.monotonic():
            del self._until[(chat_id, user_id)]
            return False
        return True

    def remember(self, chat_id: int, user_id: int) -> None:
        if len(self._until) > 100_000:
            self._drop_expired()
        self._until[(chat_id, user_id)] = self.clock.monotonic() + self.ttl

    def forget(self, payload: str) -> None:
        """A `NOTIFY gate` payload, `<chat>:<user>`."""
        chat, _, user = payload.partition(":")
        try:
            self._until.pop((int(chat), int(user)), None)
        except ValueError:
            log.warning("ignored a malformed gate notice %r", payload[:100])

    def clear(self) -> None:
        self._until.clear()

    def _drop_expired(self) -> None:
        now = self.clock.monotonic()
        self._until = {key: until for key, until in self._until.items() if until > now}


@dataclass(frozen=True)
class GateChannel:
    channel_id: int
    chat_id: int
    title: str
    join_url: str | None


Found = tuple[Content, tuple[GateChannel, ...]]


class ContentCache:
    """Each bot's contents with their gates as last read, so that a link costs no read while
    nothing changed. Any change to contents, their gates or channels sends `NOTIFY contents`
    (migration 0017), which empties the cache in every worker; an entry also lasts at most
    `ttl` seconds, in case a notice is lost. Nothing is kept or served while `listening()`
    says notices cannot arrive."""

    def __init__(
        self,
        listening: Callable[[], bool],
        ttl: float = CONTENT_TTL,
        clock: Clock = SYSTEM_CLOCK,
        limit: int = 10_000,
    ) -> None:
        self.listening = listening
        self.ttl = ttl
        self.clock = clock
        # Made-up codes are cached as not found too: past this many entries it starts over.
        self.limit = limit
        # Bumped by every clear: a read begun before it must not be kept.
        self.generation = 0
        self._entries: dict[tuple[int, str, int], tuple[float, Found | None]] = {}

    def get(self, key: tuple[int, str, int]) -> tuple[bool, Found | None]:
        """(True, what was read) while the entry is fresh; (False, None) otherwise."""
        entry = self._entries.get(key)
        if entry is None or entry[0] <= self.clock.monotonic() or not self.listening():
            return False, None
        return True, entry[1]

    def put(self, key: tuple[int, str, int], found: Found | None, generation: int) -> None:
        """Keep what a read begun at `generation` found, unless the cache was cleared since."""
        if generation != self.generation or not self.listening():
            return
        if len(self._entries) >= self.limit:
            self._entries.clear()
        self._entries[key] = (self.clock.monotonic() + self.ttl, found)

    def clear(self, payload: str = "") -> None:
        self.generation += 1
        self._entries.clear()


@dataclass(frozen=True)
class Check:
    """The gate as it stands for one visitor."""

    content: Content | None
    missing: tuple[GateChannel, ...] = ()
    unknown: tuple[tuple[GateChannel, str], ...] = ()


class Gate:
    """The gate's routes: `/start <code>`, `gate:<content id>` presses and `chat_member`."""

    def __init__(
        self, pool: Pool, cache: JoinedCache, contents: ContentCache | None = None
    ) -> None:
        """Without `contents`, every link reads its content."""
        self.pool = pool
        self.cache = cache
        self.contents = contents

    def register(self, routes: Routes) -> None:
        routes.start_prefixes[""] = _Start(self)
        routes.callbacks["gate:"] = _Press(self)
        routes.kinds["chat_member"] = _MemberChange()

    async def check(self, ctx: Context, found: Found | None, user: int) -> Check:
        if found is None:
            return Check(None)
        content, channels = found
        # Every channel at once: the visitor waits for the slowest answer, not their sum.
        standings = await asyncio.gather(*(self._ask(ctx, ch, user) for ch in channels))
        pairs = list(zip(channels, standings, strict=True))
        return Check(
            content,
            missing=tuple(ch for ch, (s, _) in pairs if s is JoinState.MISSING),
            unknown=tuple((ch, why) for ch, (s, why) in pairs if s is JoinState.UNKNOWN),
        )

    async def _ask(self, ctx: Context, channel: GateChannel, user: int) -> tuple[JoinState, str]:
        if self.cache.joined(channel.chat_id, user):
            return JoinState.JOINED, ""
        for _ in range(2):
            try:
                member = await ctx.api.call(
                    ctx.token, "getChatMember", {"chat_id": channel.chat_id, "user_id": user}
                )
            except TelegramError as error:
                standing = join_state_of(error)
                if standing is None:
                    continue
                return standing, error.description[:300]
            if is_member(member):
                self.cache.remember(channel.chat_id, user)
                return JoinState.JOINED, ""
            return JoinState.MISSING, ""
        return JoinState.UNKNOWN, "PARTICIPANT_ID_INVALID twice"

    async def content(self, bot_id: BotId, *, code: str = "", content_id: int = 0) -> Found | None:
        """A bot's content by its code or its id, with its gate channels."""
        if self.contents is None:
            CONTENT_LOOKUPS.labels("database").inc()
            return await self._read_content(bot_id, code, content_id)
        key = (bot_id, code, content_id)
        cached, found = self.contents.get(key)
        if cached:
            CONTENT_LOOKUPS.labels("memory").inc()
            return found
        CONTENT_LOOKUPS.labels("database").inc()
        generation = self.contents.generation
        found = await self._read_content(bot_id, code, content_id)
        self.contents.put(key, found, generation)
        return found

    async def _read_content(self, bot_id: BotId, code: str, content_id: int) -> Found | None:
        async with connection(self.pool) as conn:
            cur = await conn.execute(
                Q["content_with_gate"],
                {"bot_id": bot_id, "code": code or None, "id": content_id},
            )
            row = await cur.fetchone()
        if row is None:
            return None
        channels = tuple(
            GateChannel(
                int(ch["channel_id"]),
                int(ch["telegram_chat_id"]),
                str(ch["title"]) or "Channel",
                ch["join_url"] or (f"https://t.me/{ch['username']}" if ch["username"] else None),
            )
            for ch in row["gate"]
        )
        return Content.from_row(row), channels


def _known(check: Check) -> Check:
    """The check once its unknown channels are flagged: what the visitor is told is the same."""
    return dataclasses.replace(check, unknown=())


async def _flag_unknown(conn: Connection, bot_id: BotId, check: Check, now: dt.datetime) -> None:
    for channel, why in check.unknown:
        await conn.execute(
            Q["flag_bot_channel"],
            {
                "bot_id": bot_id,
                "channel_id": channel.channel_id,
                "error": why or "unknown",
                "now": now,
            },
        )


def gate_text(check: Check, say: Speech) -> str:
    """The missing channels by name (HTML: the titles are the owners', escaped)."""
    names = say.join([f"<b>{isolate(escape_html(ch.title))}</b>" for ch in check.missing])
    return say(GATE_TEXT, channels=names, button=say(JOINED_BUTTON))


def gate_markup(content: Content, check: Check, say: Speech) -> dict[str, Any]:
    rows: list[list[dict[str, Any]]] = [
        [{"text": channel.title, "url": channel.join_url}]
        for channel in check.missing
        if channel.join_url
    ]
    rows.append([{"text": say(JOINED_BUTTON), "callback_data": f"gate:{content.id}"}])
    return {"inline_keyboard": rows}


async def _deliver_once(conn: Connection, visit: Visit, content: Content) -> bool:
    """Through the gate: counted each time, and the content's delivery recorded (and counted)
    the first time; whether this was the first."""
    if visit.person_id is None:
        return False
    cur = await conn.execute(
        Q["record_delivery"],
        {
            "content_id": content.id,
            "person_id": visit.person_id,
            "bot_id": visit.update.bot_id,
            "now": visit.now,
        },
    )
    return await cur.fetchone() is not None


class _GateRoute:
    """A route to content behind the gate: `settle` answers what needs no database (an unknown
    content, the gate while a channel is missing), `through` lets the visitor through."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def settle(self, visit: Visit, check: Check) -> list[Reply] | None:
        raise NotImplementedError

    async def through(self, conn: Connection, visit: Visit, content: Content) -> list[Reply]:
        raise NotImplementedError

    async def apply(self, conn: Connection, visit: Visit, check: Check) -> list[Reply]:
        await _flag_unknown(conn, visit.update.bot_id, check, visit.now)
        settled = self.settle(visit, _known(check))
        if settled is not None or check.content is None:
            return settled or []
        return await self.through(conn, visit, check.content)


class _Start(_GateRoute):
    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> Check:
        found = await self.gate.content(update.bot_id, code=arg[:64])
        return await self.gate.check(ctx, found, update.sender_id)

    def settle(self, visit: Visit, check: Check) -> list[Reply] | None:
        """Without the database: an unknown code, or the gate while a channel is missing (and
        none unknown, which is flagged)."""
        chat_id = visit.update.chat_key
        if check.content is None:
            text = visit.say(NOT_FOUND)
            return [Reply(chat_id, "sendMessage", {"chat_id": chat_id, "text": text})]
        if not check.missing or check.unknown:
            return None
        payload = {
            "chat_id": chat_id,
            "text": gate_text(check, visit.say),
            "parse_mode": "HTML",
            "reply_markup": gate_markup(check.content, check, visit.say),
        }
        # Counted by the statement that queues the gate's message.
        shown = Counted("gate_shown", visit.person_id, visit.now, check.content.id)
        return [Reply(chat_id, "sendMessage", payload, counted=shown)]

    async def through(self, conn: Connection, visit: Visit, content: Content) -> list[Reply]:
        # The link opened again after the gate: the content again; recorded the first time.
        await _deliver_once(conn, visit, content)
        return [content_reply(visit.update.chat_key, content)]


class _Press(_GateRoute):
    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> Check:
        content_id = int(arg) if arg.isascii() and arg.isdigit() and len(arg) < 10 else 0
        found = await self.gate.content(update.bot_id, content_id=content_id)
        return await self.gate.check(ctx, found, update.sender_id)

    def settle(self, visit: Visit, check: Check) -> list[Reply] | None:
        """Without the database: an unknown content, or "not yet" while a channel is missing
        (and none unknown, which is flagged)."""
        body = visit.update.body
        chat_id = visit.update.chat_key
        answer: dict[str, Any] = {"callback_query_id": str(body.get("id", ""))}
        if check.content is None:
            answer["text"] = visit.say(NOT_FOUND)
            return [Reply(chat_id, "answerCallbackQuery", answer)]
        if not check.missing or check.unknown:
            return None
        answer["text"] = visit.say(NOT_YET)
        replies = [Reply(chat_id, "answerCallbackQuery", answer)]
        message_id = (body.get("message") or {}).get("message_id")
        if isinstance(message_id, int):
            edit = {
                "chat_id": chat_id,
                "message_id": message_id,
                "text": gate_text(check, visit.say),
                "parse_mode": "HTML",
                "reply_markup": gate_markup(check.content, check, visit.say),
            }
            replies.append(Reply(chat_id, "editMessageText", edit))
        return replies

    async def through(self, conn: Connection, visit: Visit, content: Content) -> list[Reply]:
        body = visit.update.body
        chat_id = visit.update.chat_key
        replies = [
            Reply(chat_id, "answerCallbackQuery", {"callback_query_id": str(body.get("id", ""))})
        ]
        if not await _deliver_once(conn, visit, content):
            # Already sent to this person: a second press sends nothing more.
            return replies
        message_id = (body.get("message") or {}).get("message_id")
        if isinstance(message_id, int):
            replies.append(
                Reply(chat_id, "deleteMessage", {"chat_id": chat_id, "message_id": message_id})
            )
        replies.append(content_reply(chat_id, content))
        return replies


class _MemberChange:
    """A `chat_member` update: the person's status in a channel we know, and a leave or a kick
    announced to every worker's cache after commit."""

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> None:
        return None

    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        body = visit.update.body
        chat = body.get("chat") or {}
        new = body.get("new_chat_member") or {}
        user = new.get("user") or {}
        if not isinstance(chat.get("id"), int) or not isinstance(user.get("id"), int):
            return []
        cur = await conn.execute(Q["channel_by_chat"], {"chat_id": chat["id"]})
        channel = await cur.fetchone()
        person_id = await bot_store.record_person(
            conn, visit.update.bot_id, user, visit.now, met=False
        )
        if channel is None or person_id is None or new.get("status") not in _STATUSES:
            return []
        member = is_member(new)
        link = body.get("invite_link") or {}
        await conn.execute(
            Q["upsert_channel_member"],
            {
                "channel_id": channel["id"],
                "person_id": person_id,
                "status": new["status"],
                "is_member": member,
                "invite_link": link.get("invite_link") if isinstance(link, dict) else None,
                "now": visit.now,
            },
        )
        await _credit_campaign(conn, channel["id"], person_id, member, link, visit.now)
        if not member:
            await conn.execute(Q["notify_gate"], {"payload": f"{chat['id']}:{user['id']}"})
            return []
        bot_id = visit.update.bot_id
        found = await standing(conn, bot_id, chat["id"], user["id"])
        return intruder_replies(bot_id, found, chat["id"], user["id"], new["status"], visit.say)


async def _credit_campaign(
    conn: Connection, channel_id: int, person_id: int, member: bool, link: Any, now: dt.datetime
) -> None:
    """A join by a campaign's link credits it (once per person); a leave marks the person's
    credited joins there as left. Telegram names the link only on a join through one: a
    public channel joined directly carries none, and credits nothing."""
    params = {"channel_id": channel_id, "person_id": person_id, "now": now}
    if not member:
        await conn.execute(Q["record_campaign_leave"], params)
        return
    url = link.get("invite_link") if isinstance(link, dict) else None
    if isinstance(url, str) and url:
        await conn.execute(Q["credit_campaign_join"], {**params, "invite_link": url})


_STATUSES = frozenset({"creator", "administrator", "member", "restricted", "left", "kicked"})
