"""Which Telegram updates the edge acts on, and whose queue each one joins."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shared.jsonsafe import contains_nul

# The update kinds stored in the inbox; every other kind is answered 200 and counted.
KINDS = (
    "message",
    "callback_query",
    "chat_member",
    "my_chat_member",
    "chat_join_request",
    "pre_checkout_query",
)
ALLOWED_UPDATES = list(KINDS)


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


def _int_at(obj: Any, *path: str) -> int:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            raise MalformedUpdate(f"missing {'.'.join(path)}")
        obj = obj[key]
    if isinstance(obj, bool) or not isinstance(obj, int):
        raise MalformedUpdate(f"{'.'.join(path)} is not an integer")
    return obj


def parse(payload: Any) -> Incoming:
    """Classify one update; `kind` is None for kinds the edge does not act on."""
    if not isinstance(payload, dict):
        raise MalformedUpdate("an update is a JSON object")
    update_id = payload.get("update_id")
    if isinstance(update_id, bool) or not isinstance(update_id, int) or update_id <= 0:
        raise MalformedUpdate("update_id must be a positive integer")
    if contains_nul(payload):
        # PostgreSQL's jsonb cannot store NUL; no real update carries one.
        raise MalformedUpdate("update contains a NUL character")
    kind = next((k for k in KINDS if k in payload), None)
    if kind is None:
        return Incoming(update_id, None, None, payload)
    # Whose queue: the chat for messages, the person for what a person does elsewhere.
    if kind == "message":
        key = _int_at(payload, "message", "chat", "id")
    elif kind == "my_chat_member":
        key = _int_at(payload, "my_chat_member", "chat", "id")
    elif kind == "chat_member":
        key = _int_at(payload, "chat_member", "new_chat_member", "user", "id")
    else:
        key = _int_at(payload, kind, "from", "id")
    return Incoming(update_id, kind, key, payload)


def other_kind(payload: dict[str, Any]) -> str:
    """The name of an update kind we do not store, for the metric."""
    return next((k for k in payload if k != "update_id"), "empty")
