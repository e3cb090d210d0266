"""The shape of a bot's features: the routes they register for `/start` payloads, commands,
private messages, callback data and update kinds, what a route's `prepare` and `apply` get, a
person's conversation step, and small builders of replies. `handlers.BotLogic` dispatches to
them.

`prepare` runs before the write transaction and is where Telegram is read, with the worker's
`BotApi` and the bot's token; `apply` runs inside the transaction and returns the replies,
which become outbox rows in that transaction.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from psycopg.types.json import Jsonb

from botedge import sqlq
from botedge.ids import BotId, ChatId, PersonId
from botedge.outbox_store import Reply
from botedge.telegram import BotApi
from botedge.updates import InboxRow
from botedge.words import Speech, msg, user
from shared.db import Connection


@dataclass(frozen=True)
class Settled:
    """An update decided without the database: its replies, and its person to record with
    them (`bot_store.person_params`; None when it came from no person). The finish writes all
    of it in one statement."""

    replies: list[Reply]
    person: dict[str, Any] | None


class Handler(Protocol):
    async def prepare(self, update: InboxRow) -> Any: ...

    def settle(self, update: InboxRow, prepared: Any) -> Settled | None:
        """The update's outcome when nothing but its person and replies is written; None when
        `apply` must run in a transaction."""
        ...

    async def apply(self, conn: Connection, update: InboxRow, prepared: Any) -> list[Reply]: ...


@dataclass(frozen=True)
class Step:
    """Where the person is in a conversation with the bot (`conversations`): the step's name,
    what it carries, and whether it has lapsed."""

    name: str
    data: dict[str, Any]
    expired: bool


@dataclass(frozen=True)
class Context:
    """What a route's `prepare` may use: the worker's Bot API client and this bot's token; for
    a message taken by a step's route, that step."""

    api: BotApi
    token: str
    step: Step | None = None


@dataclass(frozen=True)
class Visit:
    """An update in its transaction: the route's argument and the person it came from."""

    update: InboxRow
    arg: str
    person_id: PersonId | None
    now: dt.datetime
    # The bot's words in the person's language.
    say: Speech


class Route(Protocol):
    """A route whose class sets `reads_telegram = False` is not prepared: its `apply` gets
    None, and its updates need no token loaded. A route may also have `settle(visit,
    prepared) -> list[Reply] | None`: the replies when `apply` would write nothing, decided
    before the person is recorded (the visit's `person_id` is None, and an event it counts
    without one is the person's)."""

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> Any: ...

    async def apply(self, conn: Connection, visit: Visit, prepared: Any) -> list[Reply]: ...


@dataclass
class Routes:
    # /start payloads taken whole ("ads").
    starts: dict[str, Route] = field(default_factory=dict)
    # /start payloads by prefix ("pay_"); "" takes any payload nothing else claims.
    start_prefixes: dict[str, Route] = field(default_factory=dict)
    # Commands in a private chat ("/ads"), the rest of the text as the argument.
    commands: dict[str, Route] = field(default_factory=dict)
    # Any other message in a private chat (text, a forwarded post, ...); one feature's.
    messages: Route | None = None
    # A private text that is all of one of these patterns (an access code), before `messages`;
    # the text is the argument.
    texts: list[tuple[re.Pattern[str], Route]] = field(default_factory=list)
    # Such a message from a person at one of these conversation steps, by the step's name;
    # the route is prepared with the step in its context.
    steps: dict[str, Route] = field(default_factory=dict)
    # Callback data by the prefix up to and including its first ":".
    callbacks: dict[str, Route] = field(default_factory=dict)
    # Update kinds taken whole (chat_member, ...).
    kinds: dict[str, Route] = field(default_factory=dict)


class Feature(Protocol):
    def register(self, routes: Routes) -> None: ...


def is_private(message: dict[str, Any]) -> bool:
    return (message.get("chat") or {}).get("type") == "private"


def started_by(update: InboxRow) -> bool:
    """Whether the update comes from the person's private chat with the bot (they started it,
    so the bot may write to them first): a private message, a press under one, a payment's
    pre-checkout, or unblocking the bot. A join, a group message or a press under a channel
    post is not."""
    body = update.body
    if update.kind == "message":
        return is_private(body)
    if update.kind == "callback_query":
        return is_private(body.get("message") or {})
    if update.kind == "pre_checkout_query":
        return True
    if update.kind == "my_chat_member":
        status = (body.get("new_chat_member") or {}).get("status")
        return is_private(body) and status == "member"
    return False


def command_of(message: dict[str, Any]) -> tuple[str, str] | None:
    """`/name` (without `@bot`) and the rest of the text, for a command; None otherwise."""
    text = message.get("text")
    if not isinstance(text, str) or not text.startswith("/"):
        return None
    command, _, rest = text.strip().partition(" ")
    return command.split("@", 1)[0].lower(), rest.strip()


def start_payload(message: dict[str, Any]) -> str | None:
    """The payload of `/start <payload>` in a private chat; "" for a bare /start; None when the
    message is not a /start."""
    if not is_private(message):
        return None
    command = command_of(message)
    if command is None or command[0] != "/start":
        return None
    return command[1]


def callback_answer(update: InboxRow, note: str | None = None) -> Reply:
    """The answer to a button's press, with a note Telegram shows over the chat."""
    payload: dict[str, Any] = {"callback_query_id": str(update.body.get("id", ""))}
    if note:
        payload["text"] = note
    return Reply(update.chat_key, "answerCallbackQuery", payload)


def html_message(chat_id: ChatId, text: str, markup: dict[str, Any] | None = None) -> Reply:
    """A message in HTML (what people wrote escaped by the caller), with its buttons."""
    payload: dict[str, Any] = {"chat_id": chat_id, "text": text, "parse_mode": "HTML"}
    if markup:
        payload["reply_markup"] = markup
    return Reply(chat_id, "sendMessage", payload)


async def read_step(conn: Connection, visit: Visit) -> Step | None:
    """The person's conversation step with this bot, its row locked."""
    cur = await conn.execute(
        sqlq.Q["conversation"], {"bot_id": visit.update.bot_id, "person_id": visit.person_id}
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return Step(str(row["step"]), dict(row["data"]), row["expires_at"] <= visit.now)


async def set_step(
    conn: Connection, visit: Visit, step: str, data: dict[str, Any], ttl: dt.timedelta
) -> None:
    """The person's next message goes to `step` for `ttl` (the one step they are at)."""
    await conn.execute(
        sqlq.Q["set_conversation"],
        {
            "bot_id": visit.update.bot_id,
            "person_id": visit.person_id,
            "step": step,
            "data": Jsonb(data),
            "expires_at": visit.now + ttl,
            "now": visit.now,
        },
    )


async def end_step(conn: Connection, visit: Visit) -> None:
    await conn.execute(
        sqlq.Q["end_conversation"], {"bot_id": visit.update.bot_id, "person_id": visit.person_id}
    )


WELCOME = msg("welcome", "Welcome! Here is what I can do:", form="text", limit=600)
CONTENT_HELP = msg(
    "welcome.content",
    "• Open a content link you were given, and I send you the content.",
    form="text",
    limit=600,
)
PAID_HELP = msg(
    "welcome.paid",
    "• Join a paid channel: press it below to see its price and pay.",
    form="text",
    limit=600,
)
LINK_HELP = msg(
    "welcome.link", "• /link: your invite link again, once you have paid.", form="text", limit=600
)
ADS_HELP = msg(
    "welcome.ads", "• /ads: advertise here, paid in USDT or TRX.", form="text", limit=600
)
LANGUAGE_HELP = msg(
    "welcome.language", "• /language: choose the language I write in.", form="text", limit=600
)
# A channel named where its title is empty.
THE_CHANNEL = msg("the_channel", "the channel")
NOT_UNDERSTOOD = msg(
    "not_understood", 'I did not understand "{text}". Send /start to begin.', form="text"
)


async def default_reply(
    conn: Connection, bot_id: BotId, message: dict[str, Any], say: Speech
) -> list[Reply]:
    """A private message no feature took: for /start and /help, what the bot offers (content
    links, its paid channels with a button each, the ad shop); a hint otherwise."""
    chat = message.get("chat") or {}
    if chat.get("type") not in (None, "private"):
        return []
    chat_id = ChatId(int(chat["id"]))
    text = message.get("text")
    if not isinstance(text, str):
        return []
    if text.split(maxsplit=1)[0] in ("/start", "/help") if text.strip() else False:
        return [await _welcome(conn, bot_id, chat_id, say)]
    return [
        Reply(
            chat_id,
            "sendMessage",
            {"chat_id": chat_id, "text": say(NOT_UNDERSTOOD, text=user(text[:200]))},
        )
    ]


async def _welcome(conn: Connection, bot_id: BotId, chat_id: ChatId, say: Speech) -> Reply:
    cur = await conn.execute(sqlq.Q["bot_offers"], {"bot_id": bot_id})
    offers = await cur.fetchone() or {"username": "", "channels": [], "shop": False}
    lines = [say(WELCOME), say(CONTENT_HELP)]
    paid = offers["channels"]
    if paid:
        lines.append(say(PAID_HELP))
        lines.append(say(LINK_HELP))
    if offers["shop"]:
        lines.append(say(ADS_HELP))
    lines.append(say(LANGUAGE_HELP))
    body: dict[str, Any] = {"chat_id": chat_id, "text": "\n".join(lines)}
    if paid:
        start = f"https://t.me/{offers['username']}?start=pay_"
        rows = [[{"text": c["title"][:60], "url": f"{start}{c['id']}"}] for c in paid[:10]]
        body["reply_markup"] = {"inline_keyboard": rows}
    return Reply(chat_id, "sendMessage", body)
