"""A bot's channels: what a chat reference names, and the bot's own standing there.

`check` asks Telegram `getChat`, the bot's own `getChatMember` and, where it is an admin,
`getChatAdministrators` (kept for the intruder check), writes Telegram's side of
`channels` (title, username, type) and the bot's row in `bot_channels`, and answers both. The
gate, the access events and the rights watch rely on `bot_channels` to know where the bot may
invite and remove people.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import re
from collections.abc import Mapping
from typing import Any

from botedge import errors, sqlq
from botedge.bot_store import Rights, bot_token, record_rights, save_channel
from botedge.db import connection
from botedge.ids import BotId
from botedge.registration import upstream_error
from botedge.telegram import BadRequest, BotApi, Forbidden, TelegramError
from shared import telegram_shapes as shapes
from shared.db import Pool
from shared.secretbox import SecretBox

Q = sqlq.Q
log = logging.getLogger("botedge.channels")

_LINK = re.compile(shapes.LINK, re.ASCII)
_PRIVATE_POST = re.compile(shapes.PRIVATE_POST, re.ASCII)


def parse_chat(text: str) -> int | str:
    """A chat id or `@username` from `@name`, a t.me link, a post link or a numeric id; an
    invite link (t.me/+..., joinchat) cannot be resolved by a bot and is refused."""
    value = text.strip()
    if re.fullmatch(r"-?\d{1,16}", value, re.ASCII):
        return int(value)
    if re.fullmatch(rf"@{shapes.USERNAME}", value, re.ASCII):
        return value
    if link := _LINK.fullmatch(value):
        if link["name"].lower() in ("joinchat", "addstickers", "share", "proxy", "c"):
            raise errors.InvalidChat(f"{value[:100]!r} is not a channel link")
        return "@" + link["name"]
    if post := _PRIVATE_POST.fullmatch(value):
        return int(f"-100{post['id']}")
    raise errors.InvalidChat(
        f"{value[:100]!r} is not an @username, a t.me link, a post link or a chat id"
    )


async def check(
    pool: Pool, api: BotApi, box: SecretBox, bot_id: BotId, chat: str, now: dt.datetime
) -> dict[str, Any]:
    target = parse_chat(chat)
    async with connection(pool) as conn:
        me, token = await bot_token(conn, box, bot_id)
    try:
        info = await api.call(token, "getChat", {"chat_id": target})
    except (BadRequest, Forbidden) as error:
        if "not found" in error.description.lower() or isinstance(error, Forbidden):
            raise errors.ChatNotFound(f"getChat: {error.description}") from None
        raise upstream_error("getChat", error) from None
    except TelegramError as error:
        raise upstream_error("getChat", error) from None
    rights = await own_rights(api, token, int(info["id"]), me)
    async with connection(pool) as conn, conn.transaction():
        channel = await save_channel(conn, bot_id, info, rights, now)
    return {
        "chat": {
            "id": channel.id,
            "telegram_chat_id": channel.telegram_chat_id,
            "title": channel.title,
            "username": channel.username,
            "type": channel.chat_type,
        },
        "rights": {
            "status": rights.status,
            "is_admin": rights.is_admin,
            "can_invite_users": rights.can_invite_users,
            "can_restrict_members": rights.can_restrict_members,
            "last_error": rights.error,
        },
    }


async def own_rights(api: BotApi, token: str, chat_id: int, me: int) -> Rights:
    """The bot's own standing in a chat; a refusal is recorded, not raised (the bot may simply
    not be there yet)."""
    try:
        member = await api.call(token, "getChatMember", {"chat_id": chat_id, "user_id": me})
    except (BadRequest, Forbidden) as error:
        return Rights("left", False, False, False, error.description[:300])
    except TelegramError as error:
        raise upstream_error("getChatMember", error) from None
    rights = Rights.of(member if isinstance(member, dict) else {})
    if not rights.is_admin:
        return rights
    try:
        admins = await api.call(token, "getChatAdministrators", {"chat_id": chat_id})
    except TelegramError as error:
        log.info("getChatAdministrators of %d: %s; the kept list stays", chat_id, error)
        return rights
    ids = tuple(
        int(a["user"]["id"])
        for a in admins or []
        if isinstance(a, dict) and isinstance((a.get("user") or {}).get("id"), int)
    )
    return dataclasses.replace(rights, admins=ids)


async def recheck_all(
    pool: Pool, api: BotApi, bots: Mapping[int, tuple[int, str]], now: dt.datetime
) -> int:
    """The rights watch's round: each bot's standing in each of its channels asked again (a
    bot demoted or removed is seen before the gate or a removal relies on it). `bots` maps the
    active bots' ids to their Telegram id and token. Returns how many rows were checked."""
    async with connection(pool) as conn:
        cur = await conn.execute(Q["bot_channels_to_check"])
        rows = await cur.fetchall()
    checked = 0
    for row in rows:
        bot = bots.get(int(row["bot_id"]))
        if bot is None:
            continue
        me, token = bot
        try:
            rights = await own_rights(api, token, int(row["telegram_chat_id"]), me)
        except errors.TelegramUnavailable as error:
            log.warning("rights watch: %s; the rest waits for the next round", error)
            break
        async with connection(pool) as conn:
            await record_rights(
                conn, BotId(int(row["bot_id"])), int(row["channel_id"]), rights, now
            )
        checked += 1
    return checked
