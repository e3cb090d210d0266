"""A paid channel's members as Telegram has them, for billing's reconciliation.

The Bot API cannot list a channel's members, so billing names the people to ask about (those
`channel_members` shows inside, and those paying): `check` asks `getChatMember` through the
channel's manager bot for each, records what Telegram says in `channel_members`, and answers
each one's status and whether they may be there (paying, whitelisted, or running the chat).
`remove` takes out those who may not, as admission does when they join: ban, then unban
`only_if_banned`, and a message with the pay link when the bot may write to them.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from botedge import errors, outbox_store, sqlq
from botedge.bot_store import bot_token
from botedge.db import connection
from botedge.ids import BotId
from botedge.standing import ChannelStanding, removal_replies
from botedge.telegram import BadRequest, BotApi, TelegramError
from botedge.words import Words, pick
from shared.db import Pool
from shared.secretbox import SecretBox

Q = sqlq.Q
MEMBER = frozenset({"creator", "administrator", "member", "restricted"})
STAFF = frozenset({"creator", "administrator"})
# At once, of one channel's people asked about.
ASKING = 8


async def _people(pool: Pool, channel_id: int, user_ids: list[int]) -> list[dict[str, Any]]:
    async with connection(pool) as conn:
        cur = await conn.execute(
            Q["members_to_check"], {"channel_id": channel_id, "user_ids": user_ids}
        )
        rows = [dict(row) for row in await cur.fetchall()]
    if not rows:
        raise errors.NotFound("no paid channel by that id, or none of those people known")
    if rows[0]["manager_bot_id"] is None:
        raise errors.InvalidValues("the channel has no manager bot", field="channel_id")
    return rows


async def check(
    pool: Pool, api: BotApi, box: SecretBox, channel_id: int, user_ids: list[int], now: dt.datetime
) -> dict[str, Any]:
    rows = await _people(pool, channel_id, user_ids)
    async with connection(pool) as conn:
        _, token = await bot_token(conn, box, BotId(int(rows[0]["manager_bot_id"])))
    chat = int(rows[0]["telegram_chat_id"])
    gate = asyncio.Semaphore(ASKING)

    async def status_of(row: dict[str, Any]) -> str | None:
        async with gate:
            try:
                found = await api.call(
                    token, "getChatMember", {"chat_id": chat, "user_id": row["telegram_user_id"]}
                )
            except BadRequest as error:
                if "user not found" in error.description.lower():
                    return "left"
                return None
            except TelegramError:
                return None
        return str(found.get("status")) if isinstance(found, dict) else None

    statuses = await asyncio.gather(*(status_of(row) for row in rows))
    answered = []
    async with connection(pool) as conn, conn.transaction():
        for row, status in zip(rows, statuses, strict=True):
            if status is None:
                answered.append({"user_id": row["telegram_user_id"], "status": None})
                continue
            inside = status in MEMBER
            await conn.execute(
                Q["upsert_channel_member"],
                {
                    "channel_id": channel_id,
                    "person_id": row["person_id"],
                    "status": status,
                    "is_member": inside,
                    "invite_link": None,
                    "now": now,
                },
            )
            answered.append(
                {
                    "user_id": row["telegram_user_id"],
                    "status": status,
                    "is_member": inside,
                    "may_be_there": bool(row["paying"] or row["whitelisted"]) or status in STAFF,
                }
            )
    return {"channel_id": channel_id, "members": answered}


async def remove(
    pool: Pool, channel_id: int, user_ids: list[int], now: dt.datetime, words: Words
) -> dict[str, Any]:
    """Those of `user_ids` who may not be there, taken out through the manager bot's outbox;
    the paying, the whitelisted and (as `check` said) the chat's staff are left alone."""
    rows = await _people(pool, channel_id, user_ids)
    removed = []
    bot_id = BotId(int(rows[0]["manager_bot_id"]))
    chat = int(rows[0]["telegram_chat_id"])
    title = str(rows[0]["title"]) or "the channel"
    day = now.date().isoformat()
    async with connection(pool) as conn, conn.transaction():
        for row in rows:
            if row["paying"] or row["whitelisted"]:
                continue
            cur = await conn.execute(
                Q["channel_member_status"],
                {"channel_id": channel_id, "person_id": row["person_id"]},
            )
            seen = await cur.fetchone()
            if seen is None or seen["status"] in STAFF or seen["status"] not in MEMBER:
                continue
            user = int(row["telegram_user_id"])
            found = ChannelStanding(
                channel_id, title, True, bot_id, str(row["username"]), False, row["may_write"]
            )
            # As admission takes out a joiner, once a day at most.
            language = pick(row["chosen_language"], row["language_code"], row["bot_language"])
            said = removal_replies(found, chat, user, words.speech(language, bot_id))
            for n, reply in enumerate(said):
                key = f"reconcile:{channel_id}:{user}:{day}:{n}"
                await outbox_store.queue_reply(conn, bot_id, user, reply.method, reply.payload, key)
            removed.append(user)
    return {"channel_id": channel_id, "bot_id": bot_id, "removed": removed}
