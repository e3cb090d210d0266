"""What a bot does with an update: record the person, decide the replies.

`prepare` runs before the write transaction and is where calls that read from Telegram belong;
`apply` runs inside it and returns the replies, which become outbox rows in that transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from botedge import bot_store, outbox_store
from botedge.inbox_store import InboxRow
from shared.db import Connection

WELCOME = "Welcome! Open a content link to get started."


@dataclass(frozen=True)
class Reply:
    chat_id: int
    method: str
    payload: dict[str, Any]


class Handler(Protocol):
    async def prepare(self, update: InboxRow) -> Any: ...

    async def apply(self, conn: Connection, update: InboxRow, prepared: Any) -> list[Reply]: ...


async def move_chat(conn: Connection, old_chat_id: int, new_chat_id: int) -> None:
    """A group became a supergroup under a new id: what we keep about it follows."""
    await bot_store.move_channel(conn, old_chat_id, new_chat_id)
    await outbox_store.move_chat(conn, old_chat_id, new_chat_id)


class BotLogic:
    """The default behaviour: greet on /start, answer everything else with a hint."""

    async def prepare(self, update: InboxRow) -> Any:
        return None

    async def apply(self, conn: Connection, update: InboxRow, prepared: Any) -> list[Reply]:
        body = update.body
        await bot_store.record_person(conn, update.bot_id, body.get("from"))
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
        self, conn: Connection, update: InboxRow, body: dict[str, Any]
    ) -> list[Reply]:
        chat = body.get("chat") or {}
        user = body.get("from") or {}
        status = (body.get("new_chat_member") or {}).get("status")
        if chat.get("type") == "private" and isinstance(user.get("id"), int):
            # A person blocking or unblocking the bot in their private chat.
            await bot_store.set_blocked(conn, update.bot_id, user["id"], status == "kicked")
        return []
