"""What a bot does with an update: record the person, decide the replies.

`BotLogic` is a dispatcher. Features register, in their own modules, routes for `/start`
payloads, commands, other private messages, callback-data prefixes and update kinds (`gate.py`,
`adshop.py`); what no route takes gets the default behaviour here. `prepare` runs before the
write transaction and is where Telegram is read, with the worker's `BotApi` and the bot's
token; `apply` runs inside the transaction and returns the replies, which become outbox rows in
that transaction.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from psycopg.types.json import Jsonb

from botedge import bot_store, channels, outbox_store, sqlq, stats
from botedge.db import connection
from botedge.ids import ChatId, PersonId
from botedge.inbox_store import InboxRow
from botedge.outbox_store import Reply
from botedge.telegram import BotApi, CircuitOpen, TelegramError
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Connection, Pool

WELCOME = "Welcome! Here is what I can do:"
CONTENT_HELP = "• Open a content link you were given, and I send you the content."


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


class RetryLater(Exception):
    """A dependency (Telegram, billing) could not be asked now (timeout, 5xx, 429): the update
    is retried, not buried after the usual attempts, for as long as the worker's retry window
    allows. `parked`: it was not even asked (its breaker is open), so the update waits without
    spending a try or its window. `notice`: what the person waiting is told, once."""

    def __init__(
        self,
        detail: str,
        retry_after: float = 0.0,
        *,
        parked: bool = False,
        notice: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.retry_after = retry_after
        self.parked = parked
        self.notice = notice

    @classmethod
    def telegram(cls, what: str, error: TelegramError) -> RetryLater:
        """A Bot API call that failed as Telegram failing (5xx, 429, its breaker open)."""
        parked = isinstance(error, CircuitOpen)
        return cls(f"{what}: {error}", error.retry_after or 0.0, parked=parked)


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


async def move_chat(conn: Connection, old_chat_id: int, new_chat_id: int) -> None:
    """A group became a supergroup under a new id: what we keep about it follows."""
    await bot_store.move_channel(conn, old_chat_id, new_chat_id)
    await outbox_store.move_chat(conn, old_chat_id, new_chat_id)


class BotLogic:
    """The dispatcher. Without features: greet on /start, answer everything else with a hint."""

    def __init__(
        self,
        api: BotApi | None = None,
        tokens: Callable[[int], str | None] | None = None,
        features: Sequence[Feature] = (),
        clock: Clock = SYSTEM_CLOCK,
        pool: Pool | None = None,
    ) -> None:
        self.clock = clock
        # Where a person's conversation step is read from, for `Routes.steps`.
        self.pool = pool
        self.api = api
        self.tokens = tokens
        self.routes = Routes()
        for feature in features:
            feature.register(self.routes)

    def route(self, update: InboxRow) -> tuple[Route, str] | None:
        body = update.body
        if update.kind == "message":
            return self._message_route(body)
        if update.kind == "callback_query":
            data = body.get("data")
            if isinstance(data, str) and ":" in data:
                prefix, _, arg = data.partition(":")
                found = self.routes.callbacks.get(prefix + ":")
                return (found, arg) if found else None
            return None
        found = self.routes.kinds.get(update.kind)
        return (found, "") if found else None

    def _message_route(self, body: dict[str, Any]) -> tuple[Route, str] | None:
        for paid in ("successful_payment", "refunded_payment"):
            if paid in body:
                found = self.routes.kinds.get(paid)
                return (found, "") if found else None
        if not is_private(body):
            return None
        payload = start_payload(body)
        if payload == "":
            return None
        if payload is not None:
            exact = self.routes.starts.get(payload)
            return (exact, "") if exact else _by_prefix(self.routes.start_prefixes, payload)
        command = command_of(body)
        if command is not None:
            found = self.routes.commands.get(command[0])
            return (found, command[1]) if found else None
        text = body.get("text")
        if isinstance(text, str):
            for pattern, route in self.routes.texts:
                if pattern.fullmatch(text.strip()):
                    return route, text.strip()
        return (self.routes.messages, "") if self.routes.messages else None

    async def prepare(self, update: InboxRow) -> Any:
        found = self.route(update)
        step = None
        if found is not None and self.routes.steps and self._conversational(update, found[0]):
            # The step the person is in decides what a plain message means: after "I have a
            # coupon", BLACKFRIDAY25 is a coupon though it looks like an access code. A
            # person's updates are applied one at a time, so the step read here is the one
            # their message answers.
            step = await self._step(update)
            if step is not None and step.name in self.routes.steps:
                found = self.routes.steps[step.name], ""
        if found is None:
            return None
        route, arg = found
        if not getattr(route, "reads_telegram", True):
            # Decided from the database alone: no need to wait for the bot's token.
            return route, arg, None
        token = self.tokens(update.bot_id) if self.tokens else None
        if token is None or self.api is None:
            # Loaded every few seconds: a bot added a moment ago is known soon.
            raise RetryLater(f"bot {update.bot_id} is not loaded in this worker yet")
        return route, arg, await route.prepare(Context(self.api, token, step), update, arg)

    def _conversational(self, update: InboxRow, route: Route) -> bool:
        """Whether a message routed to `route` is one a conversation step may take: plain text
        or any other message, not a command or a start link."""
        return route is self.routes.messages or any(route is r for _, r in self.routes.texts)

    async def _step(self, update: InboxRow) -> Step | None:
        if self.pool is None or not isinstance(update.sender_id, int):
            return None
        async with connection(self.pool) as conn:
            cur = await conn.execute(
                sqlq.Q["conversation_of_sender"],
                {"bot_id": update.bot_id, "telegram_user_id": update.sender_id},
            )
            row = await cur.fetchone()
        if row is None:
            return None
        return Step(str(row["step"]), dict(row["data"]), row["expires_at"] <= self.clock.now())

    def settle(self, update: InboxRow, prepared: Any) -> Settled | None:
        if prepared is None:
            return None
        route, arg, value = prepared
        settle = getattr(route, "settle", None)
        if settle is None:
            return None
        now = self.clock.now()
        replies = settle(Visit(update, arg, None, now), value)
        if replies is None:
            return None
        body = update.body
        person = bot_store.person_params(
            update.bot_id,
            body.get("from"),
            started=started_by(update),
            counted=_counted(update),
            at=now,
        )
        return Settled(list(replies), person)

    async def apply(self, conn: Connection, update: InboxRow, prepared: Any) -> list[Reply]:
        body = update.body
        person_id = await bot_store.record_person(
            conn,
            update.bot_id,
            body.get("from"),
            started=started_by(update),
            counted=_counted(update),
            at=self.clock.now(),
        )
        if prepared is not None:
            route, arg, value = prepared
            visit = Visit(update, arg, person_id, self.clock.now())
            return list(await route.apply(conn, visit, value))
        if update.kind == "message":
            if isinstance(body.get("migrate_to_chat_id"), int):
                await move_chat(conn, int(body["chat"]["id"]), body["migrate_to_chat_id"])
                return []
            return await default_reply(conn, update.bot_id, body)
        if update.kind == "callback_query":
            return [callback_answer(update)]
        if update.kind == "my_chat_member":
            return await self._my_chat_member(conn, update, body)
        return []

    async def _my_chat_member(
        self, conn: Connection, update: InboxRow, body: dict[str, Any]
    ) -> list[Reply]:
        chat = body.get("chat") or {}
        user = body.get("from") or {}
        status = (body.get("new_chat_member") or {}).get("status")
        if chat.get("type") == "private" and isinstance(user.get("id"), int):
            # A person blocking or unblocking the bot in their private chat.
            await bot_store.set_blocked(conn, update.bot_id, user["id"], status == "kicked")
        elif chat.get("type") in ("channel", "supergroup", "group") and isinstance(
            chat.get("id"), int
        ):
            # The bot added, promoted, restricted or removed in a channel: its rights there, so
            # a channel it is made admin of later is picked up.
            rights = channels.Rights.of(body.get("new_chat_member") or {})
            await channels.save(conn, update.bot_id, chat, rights, self.clock.now())
        return []


def _counted(update: InboxRow) -> stats.Kind | None:
    """What an update counts as for the statistics before any route sees it: a /start in a
    private chat, or the person blocking the bot."""
    body = update.body
    if update.kind == "message":
        return "start" if is_private(body) and start_payload(body) is not None else None
    if update.kind == "my_chat_member":
        chat = body.get("chat") or {}
        status = (body.get("new_chat_member") or {}).get("status")
        return "blocked" if chat.get("type") == "private" and status == "kicked" else None
    return None


async def default_reply(conn: Connection, bot_id: int, message: dict[str, Any]) -> list[Reply]:
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
        return [await _welcome(conn, bot_id, chat_id)]
    return [
        Reply(
            chat_id,
            "sendMessage",
            {
                "chat_id": chat_id,
                "text": f'I did not understand "{text[:200]}". Send /start to begin.',
            },
        )
    ]


def _by_prefix(routes: dict[str, Route], payload: str) -> tuple[Route, str] | None:
    """The route of the longest prefix `payload` starts with, and the rest of it."""
    for prefix in sorted(routes, key=len, reverse=True):
        if payload.startswith(prefix):
            return routes[prefix], payload[len(prefix) :]
    return None


async def _welcome(conn: Connection, bot_id: int, chat_id: ChatId) -> Reply:
    cur = await conn.execute(sqlq.Q["bot_offers"], {"bot_id": bot_id})
    offers = await cur.fetchone() or {"username": "", "channels": [], "shop": False}
    lines = [WELCOME, CONTENT_HELP]
    paid = offers["channels"]
    if paid:
        lines.append("• Join a paid channel: press it below to see its price and pay.")
        lines.append("• /link: your invite link again, once you have paid.")
    if offers["shop"]:
        lines.append("• /ads: advertise here, paid in USDT or TRX.")
    body: dict[str, Any] = {"chat_id": chat_id, "text": "\n".join(lines)}
    if paid:
        start = f"https://t.me/{offers['username']}?start=pay_"
        rows = [[{"text": c["title"][:60], "url": f"{start}{c['id']}"}] for c in paid[:10]]
        body["reply_markup"] = {"inline_keyboard": rows}
    return Reply(chat_id, "sendMessage", body)
