"""What a bot does with an update: record the person, decide the replies.

`prepare` runs before the write transaction and is where calls that read from Telegram belong;
`apply` runs inside it and returns the replies, which become outbox rows in that transaction.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from botedge import sqlq
from shared.db import Connection

Q = sqlq.Q

WELCOME = "Welcome! Open a content link to get started."

# Accounts Telegram puts in `from` that are not people: the service account that forwards
# channel posts to linked groups, the stand-in for anonymous group admins, and the stand-in for
# messages sent on behalf of a channel.
NOT_PEOPLE = frozenset({777000, 1087968824, 136817688})


@dataclass(frozen=True)
class Update:
    """A claimed inbox row."""

    id: int
    bot_id: int
    update_id: int
    chat_key: int
    kind: str
    payload: dict[str, Any]
    attempt: int
    lock_token: uuid.UUID

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Update:
        return cls(
            id=int(row["id"]),
            bot_id=int(row["bot_id"]),
            update_id=int(row["update_id"]),
            chat_key=int(row["chat_key"]),
            kind=str(row["kind"]),
            payload=dict(row["payload"]),
            attempt=int(row["attempt"]),
            lock_token=row["lock_token"],
        )

    @property
    def claim(self) -> dict[str, Any]:
        """The fence every transition of this claim compares against."""
        return {"id": self.id, "lock_token": self.lock_token, "attempt": self.attempt}

    @property
    def body(self) -> dict[str, Any]:
        value = self.payload.get(self.kind)
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Reply:
    chat_id: int
    method: str
    payload: dict[str, Any]


class Handler(Protocol):
    async def prepare(self, update: Update) -> Any: ...

    async def apply(self, conn: Connection, update: Update, prepared: Any) -> list[Reply]: ...


async def record_person(conn: Connection, bot_id: int, user: Any) -> int | None:
    if not isinstance(user, dict) or user.get("is_bot") or not isinstance(user.get("id"), int):
        return None
    if user["id"] in NOT_PEOPLE:
        return None
    cur = await conn.execute(
        Q["upsert_person"],
        {
            "telegram_user_id": user["id"],
            "username": user.get("username"),
            "first_name": str(user.get("first_name") or ""),
            "last_name": user.get("last_name"),
            "language_code": user.get("language_code"),
        },
    )
    row = await cur.fetchone()
    if row is None:
        return None
    await conn.execute(Q["touch_bot_person"], {"bot_id": bot_id, "person_id": row["id"]})
    return int(row["id"])


async def move_chat(conn: Connection, old_chat_id: int, new_chat_id: int) -> None:
    """A group became a supergroup under a new id: what we keep about it follows."""
    await conn.execute(Q["move_channel"], {"old": old_chat_id, "new": new_chat_id})
    await conn.execute(Q["move_pending_sends"], {"old": old_chat_id, "new": new_chat_id})


class BotLogic:
    """The default behaviour: greet on /start, answer everything else with a hint."""

    async def prepare(self, update: Update) -> Any:
        return None

    async def apply(self, conn: Connection, update: Update, prepared: Any) -> list[Reply]:
        body = update.body
        await record_person(conn, update.bot_id, body.get("from"))
        if update.kind == "message":
            if isinstance(body.get("migrate_to_chat_id"), int):
                await move_chat(conn, int(body["chat"]["id"]), body["migrate_to_chat_id"])
                return []
            return self._message(body)
        if update.kind == "callback_query":
            return [
                Reply(
                    update.chat_key,
                    "answerCallbackQuery",
                    {"callback_query_id": str(body.get("id", ""))},
                )
            ]
        if update.kind == "my_chat_member":
            return await self._my_chat_member(conn, update, body)
        if update.kind == "pre_checkout_query":
            return [
                Reply(
                    update.chat_key,
                    "answerPreCheckoutQuery",
                    {
                        "pre_checkout_query_id": str(body.get("id", "")),
                        "ok": False,
                        "error_message": "Payments are not available for this bot.",
                    },
                )
            ]
        return []

    def _message(self, message: dict[str, Any]) -> list[Reply]:
        chat = message.get("chat") or {}
        if chat.get("type") not in (None, "private"):
            return []
        chat_id = int(chat["id"])
        text = message.get("text")
        if not isinstance(text, str):
            return []
        if text.split(maxsplit=1)[0] in ("/start", "/help") if text.strip() else False:
            return [Reply(chat_id, "sendMessage", {"chat_id": chat_id, "text": WELCOME})]
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

    async def _my_chat_member(
        self, conn: Connection, update: Update, body: dict[str, Any]
    ) -> list[Reply]:
        chat = body.get("chat") or {}
        user = body.get("from") or {}
        status = (body.get("new_chat_member") or {}).get("status")
        if chat.get("type") == "private" and isinstance(user.get("id"), int):
            # A person blocking or unblocking the bot in their private chat.
            await conn.execute(
                Q["set_blocked"],
                {"bot_id": update.bot_id, "user_id": user["id"], "blocked": status == "kicked"},
            )
        return []
