"""What a bot does with an update: record the person, decide the replies.

`BotLogic` is a dispatcher. Features register, in their own modules, routes (`routing.Routes`)
for `/start` payloads, commands, other private messages, callback-data prefixes and update kinds
(`gate.py`, `adshop.py`); what no route takes gets the default behaviour here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from botedge import bot_store, outbox_store, sqlq, stats
from botedge.db import connection
from botedge.errors import RetryLater
from botedge.outbox_store import Reply
from botedge.routing import (
    Context,
    Feature,
    Route,
    Routes,
    Settled,
    Step,
    Visit,
    callback_answer,
    command_of,
    default_reply,
    is_private,
    start_payload,
    started_by,
)
from botedge.telegram import BotApi
from botedge.updates import InboxRow
from botedge.words import Words
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Connection, Pool


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
        words: Words | None = None,
    ) -> None:
        self.clock = clock
        self.words = words or Words()
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
        replies = settle(
            Visit(update, arg, None, now, self.words.speech(update.language, update.bot_id)), value
        )
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
            say = self.words.speech(update.language, update.bot_id)
            visit = Visit(update, arg, person_id, self.clock.now(), say)
            return list(await route.apply(conn, visit, value))
        if update.kind == "message":
            if isinstance(body.get("migrate_to_chat_id"), int):
                await move_chat(conn, int(body["chat"]["id"]), body["migrate_to_chat_id"])
                return []
            return await default_reply(
                conn, update.bot_id, body, self.words.speech(update.language, update.bot_id)
            )
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
            kicked = status == "kicked"
            await bot_store.set_blocked(conn, update.bot_id, user["id"], kicked, self.clock.now())
        elif chat.get("type") in ("channel", "supergroup", "group") and isinstance(
            chat.get("id"), int
        ):
            # The bot added, promoted, restricted or removed in a channel: its rights there, so
            # a channel it is made admin of later is picked up.
            rights = bot_store.Rights.of(body.get("new_chat_member") or {})
            await bot_store.save_channel(conn, update.bot_id, chat, rights, self.clock.now())
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


def _by_prefix(routes: dict[str, Route], payload: str) -> tuple[Route, str] | None:
    """The route of the longest prefix `payload` starts with, and the rest of it."""
    for prefix in sorted(routes, key=len, reverse=True):
        if payload.startswith(prefix):
            return routes[prefix], payload[len(prefix) :]
    return None
