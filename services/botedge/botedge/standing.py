"""A person's standing in a paid channel as a bot sees it, and what removing someone who may
not be there takes: admission removes intruders as they join, the panel's member check removes
those found inside without access."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from botedge import sqlq
from botedge.ids import BotId, ChatId
from botedge.outbox_store import Reply
from botedge.words import Speech, isolate, msg
from shared.db import Connection

Q = sqlq.Q


PAY_TO_JOIN = msg("standing.pay_button", "Pay to join")
REMOVED = msg(
    "standing.removed",
    "You were removed from <b>{title}</b>: it is for paying members. Pay to join:",
)
FOR_PAYING = msg("standing.for_paying", "<b>{title}</b> is for paying members. Pay to join:")


@dataclass(frozen=True)
class ChannelStanding:
    channel_id: int
    title: str
    is_paid: bool
    manager_bot_id: BotId | None
    bot_username: str
    entitled: bool
    may_write: bool

    def pay_button(self, say: Speech) -> dict[str, Any]:
        url = f"https://t.me/{self.bot_username}?start=pay_{self.channel_id}"
        return {"inline_keyboard": [[{"text": say(PAY_TO_JOIN), "url": url}]]}


async def standing(
    conn: Connection, bot_id: BotId, chat_id: int, user_id: int
) -> ChannelStanding | None:
    """The person's standing in a channel we know, as seen from this bot; None otherwise."""
    cur = await conn.execute(
        Q["admission_of"], {"bot_id": bot_id, "chat_id": chat_id, "user_id": user_id}
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return ChannelStanding(
        int(row["channel_id"]),
        str(row["title"]) or "the channel",
        bool(row["is_paid"]),
        row["manager_bot_id"],
        str(row["bot_username"]),
        bool(row["paying"]) or bool(row["whitelisted"]),
        bool(row["may_write"]),
    )


def pay_message(user_id: int, found: ChannelStanding, text: str, say: Speech) -> Reply:
    return Reply(
        ChatId(user_id),
        "sendMessage",
        {
            "chat_id": user_id,
            "text": text,
            "parse_mode": "HTML",
            "reply_markup": found.pay_button(say),
        },
    )


def intruder_replies(
    bot_id: BotId,
    found: ChannelStanding | None,
    chat_id: int,
    user_id: int,
    status: str,
    say: Speech,
) -> list[Reply]:
    """A join to a paid channel by someone who may not be there: removed, and told how to
    pay when the bot may write to them. Only the channel's manager bot (`bot_id`) acts."""
    if (
        found is None
        or not found.is_paid
        or found.manager_bot_id != bot_id
        or status not in ("member", "restricted")
        or found.entitled
    ):
        return []
    return removal_replies(found, chat_id, user_id, say)


def removal_replies(found: ChannelStanding, chat_id: int, user_id: int, say: Speech) -> list[Reply]:
    """Someone taken out of a paid channel without barring a later return (ban, then unban
    `only_if_banned`), and told how to pay when the bot may write to them."""
    target = {"chat_id": chat_id, "user_id": user_id}
    replies = [
        Reply(ChatId(user_id), "banChatMember", target),
        Reply(ChatId(user_id), "unbanChatMember", {**target, "only_if_banned": True}),
    ]
    if found.may_write:
        text = say(REMOVED, title=isolate(html.escape(found.title, quote=False)))
        replies.append(pay_message(user_id, found, text, say))
    return replies
