"""A bot's content (a text, a file or a channel post) and the message that delivers it: the
gate sends it behind its channels, a broadcast sends it to everyone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botedge.ids import ChatId
from botedge.outbox_store import Reply


@dataclass(frozen=True)
class Content:
    id: int
    kind: str
    body: str
    file_kind: str | None
    file_id: str | None
    from_chat_id: int | None
    message_id: int | None
    default_gate: bool

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Content:
        return cls(
            id=int(row["id"]),
            kind=str(row["kind"]),
            body=str(row["body"]),
            file_kind=row["file_kind"],
            file_id=row["file_id"],
            from_chat_id=row["from_chat_id"],
            message_id=row["message_id"],
            default_gate=bool(row["default_gate"]),
        )


def content_reply(chat_id: ChatId, content: Content) -> Reply:
    if content.kind == "post":
        return Reply(
            chat_id,
            "copyMessage",
            {
                "chat_id": chat_id,
                "from_chat_id": content.from_chat_id,
                "message_id": content.message_id,
            },
        )
    if content.kind == "file" and content.file_kind:
        method = "send" + content.file_kind.capitalize()
        payload: dict[str, Any] = {"chat_id": chat_id, content.file_kind: content.file_id}
        if content.body:
            payload["caption"] = content.body
        return Reply(chat_id, method, payload)
    return Reply(chat_id, "sendMessage", {"chat_id": chat_id, "text": content.body})
