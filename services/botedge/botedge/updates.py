"""Which Telegram updates the edge acts on, whose queue each one joins, and an update as a
worker holds it (`InboxRow`)."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from dataclasses import dataclass
from typing import Any

from botedge.ids import BotId, ChatId, UserId
from botedge.words import SOURCE, pick
from shared.jsonsafe import storage_problem
from shared.telegram_text import utf16_units

# The update kinds stored in the inbox; every other kind is answered 200 and counted.
KINDS = (
    "message",
    "callback_query",
    "chat_member",
    "my_chat_member",
    "chat_join_request",
    "pre_checkout_query",
    # A Stars subscription's renewal cancelled, failed or restored (Bot API 10.2).
    "subscription",
)
ALLOWED_UPDATES = list(KINDS)

# Ids are stored as bigint.
BIGINT_MAX = 2**63 - 1
# Telegram's limit for a message's text or caption, in UTF-16 code units: anything longer
# did not come from Telegram, and a reply must not quote it.
MAX_TEXT_UNITS = 4096


class MalformedUpdate(ValueError):
    """Authentic but unusable: answered 200, dropped and counted (Telegram would retry)."""


@dataclass(frozen=True)
class Incoming:
    update_id: int
    kind: str | None
    chat_key: int | None
    payload: dict[str, Any]

    def as_json(self) -> str:
        return json.dumps(self.payload, ensure_ascii=False)


@dataclass(frozen=True)
class InboxRow:
    """A claimed inbox row: one Telegram update in hand."""

    id: int
    bot_id: BotId
    update_id: int
    # The chat the update belongs to: the order key of the person's updates.
    chat_key: ChatId
    kind: str
    payload: dict[str, Any]
    attempt: int
    lock_token: uuid.UUID
    received_at: dt.datetime | None = None
    # Its person was told it waits on a dependency (`tell_waiting`): its outcome comes anew.
    told_waiting: bool = False
    # The language its person chose with this bot (None: not chosen), and the bot's default.
    chosen_language: str | None = None
    bot_language: str = SOURCE
    # The version of its bot's owner-written texts when it was claimed (`bot_texts`).
    texts_version: int = 0

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> InboxRow:
        return cls(
            id=int(row["id"]),
            bot_id=BotId(int(row["bot_id"])),
            update_id=int(row["update_id"]),
            chat_key=ChatId(int(row["chat_key"])),
            kind=str(row["kind"]),
            payload=dict(row["payload"]),
            attempt=int(row["attempt"]),
            lock_token=row["lock_token"],
            received_at=row.get("received_at"),
            told_waiting=bool(row.get("told_waiting")),
            chosen_language=row.get("chosen_language"),
            bot_language=str(row.get("bot_language") or SOURCE),
            texts_version=int(row.get("texts_version") or 0),
        )

    @property
    def claim(self) -> dict[str, Any]:
        """The fence every transition of this claim compares against."""
        return {"id": self.id, "lock_token": self.lock_token, "attempt": self.attempt}

    @property
    def body(self) -> dict[str, Any]:
        value = self.payload.get(self.kind)
        return value if isinstance(value, dict) else {}

    @property
    def sender_id(self) -> UserId:
        """The Telegram user the update is from; in a private chat, the chat's id when the
        update names no sender."""
        sender = self.body.get("from") or {}
        return UserId(int(sender.get("id") or self.chat_key))

    @property
    def language(self) -> str:
        """The language to answer its person in (`words.pick`)."""
        sender = self.body.get("from") or {}
        code = sender.get("language_code")
        return pick(
            self.chosen_language, code if isinstance(code, str) else None, self.bot_language
        )


def _int_at(obj: Any, *path: str) -> int:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            raise MalformedUpdate(f"missing {'.'.join(path)}")
        obj = obj[key]
    if isinstance(obj, bool) or not isinstance(obj, int):
        raise MalformedUpdate(f"{'.'.join(path)} is not an integer")
    if not -BIGINT_MAX <= obj <= BIGINT_MAX:
        raise MalformedUpdate(f"{'.'.join(path)} is out of range")
    return obj


def parse(payload: Any, *, storable: bool = False) -> Incoming:
    """Classify one update; `kind` is None for kinds the edge does not act on. `storable`: it
    came through `jsonsafe.loads`, which refused what jsonb cannot store."""
    if not isinstance(payload, dict):
        raise MalformedUpdate("an update is a JSON object")
    update_id = payload.get("update_id")
    if isinstance(update_id, bool) or not isinstance(update_id, int) or update_id <= 0:
        raise MalformedUpdate("update_id must be a positive integer")
    if update_id > BIGINT_MAX:
        raise MalformedUpdate("update_id is out of range")
    problem = None if storable else storage_problem(payload)
    if problem is not None:
        # jsonb could not store it, and no real update carries it.
        raise MalformedUpdate(f"update {problem}")
    # "At most one of the optional parameters can be present in any given update."
    carried = [key for key in payload if key != "update_id"]
    if len(carried) > 1:
        raise MalformedUpdate(f"update carries {len(carried)} kinds at once")
    kind = next((k for k in KINDS if k in payload), None)
    if kind is None:
        return Incoming(update_id, None, None, payload)
    if kind == "message":
        message = payload["message"]
        for field in ("text", "caption"):
            text = message.get(field) if isinstance(message, dict) else None
            if isinstance(text, str) and utf16_units(text) > MAX_TEXT_UNITS:
                raise MalformedUpdate(f"message {field} is longer than Telegram allows")
    # Whose queue: the chat for messages, the person for what a person does elsewhere.
    if kind == "message":
        key = _int_at(payload, "message", "chat", "id")
    elif kind == "my_chat_member":
        key = _int_at(payload, "my_chat_member", "chat", "id")
    elif kind == "chat_member":
        key = _int_at(payload, "chat_member", "new_chat_member", "user", "id")
    elif kind == "subscription":
        key = _int_at(payload, "subscription", "user", "id")
    else:
        key = _int_at(payload, kind, "from", "id")
    return Incoming(update_id, kind, key, payload)


def other_kind(payload: dict[str, Any]) -> str:
    """The name of an update kind we do not store, for the metric."""
    return next((k for k in payload if k != "update_id"), "empty")
