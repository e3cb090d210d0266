"""A campaign's invite link: made by the bot in the channel with `createChatInviteLink`, named
so the owner can tell it apart in Telegram too. The panel keeps the campaign; the gate credits
the joins that arrive through the link (`gate._credit_campaign`)."""

from __future__ import annotations

from typing import Any

from botedge import errors, sqlq
from botedge.bot_store import bot_token
from botedge.db import connection
from botedge.ids import BotId
from botedge.registration import upstream_error
from botedge.telegram import BadRequest, BotApi, Forbidden, TelegramError
from shared.db import Pool
from shared.secretbox import SecretBox

Q = sqlq.Q

# Telegram's refusals that mean the bot may not make invite links there.
_NO_RIGHTS = ("not enough rights", "chat_admin_required", "not a member", "need administrator")


async def make_link(
    pool: Pool, api: BotApi, box: SecretBox, bot_id: BotId, channel_id: int, name: str
) -> dict[str, Any]:
    async with connection(pool) as conn:
        _, token = await bot_token(conn, box, bot_id)
        cur = await conn.execute(Q["campaign_channel"], {"channel_id": channel_id})
        channel = await cur.fetchone()
    if channel is None:
        raise errors.InvalidValues("no channel by that id", field="channel_id", code="not-found")
    params = {"chat_id": int(channel["telegram_chat_id"]), "name": name}
    try:
        link = await api.call(token, "createChatInviteLink", params)
    except (BadRequest, Forbidden) as error:
        text = error.description.lower()
        if isinstance(error, Forbidden) or any(words in text for words in _NO_RIGHTS):
            raise errors.InvalidValues(
                f"the bot may not invite users there: {error.description}",
                field="bot_id",
                code="no-rights",
            ) from None
        if "chat not found" in text:
            raise errors.InvalidValues(
                f"Telegram knows no such chat: {error.description}",
                field="channel_id",
                code="not-found",
            ) from None
        raise upstream_error("createChatInviteLink", error) from None
    except TelegramError as error:
        raise upstream_error("createChatInviteLink", error) from None
    url = link.get("invite_link") if isinstance(link, dict) else None
    if not isinstance(url, str) or not url.startswith("https://t.me/"):
        raise errors.TelegramRefused("createChatInviteLink answered without a link")
    return {"invite_link": url, "name": name, "public": channel["username"] is not None}
