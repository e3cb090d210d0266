"""Registering a bot: its token checked, stored encrypted, and Telegram pointed at us.

A bot is stored paused and made active only once Telegram accepted where to send its updates,
so no active bot is left without a webhook (or with one, in polling mode).
"""

from __future__ import annotations

import re
from typing import Any

from botedge import bot_store, errors
from botedge.db import connection
from botedge.telegram import BotApi, ServerError, TelegramError, TooManyRequests, Unauthorized
from botedge.updates import ALLOWED_UPDATES
from shared.db import Pool
from shared.secretbox import SecretBox

# Telegram's token shape: the bot's id, a colon, 35 or more of [A-Za-z0-9_-]. Checked before
# any call: the token goes into the Bot API URL's path.
TOKEN_SHAPE = re.compile(r"[0-9]{1,20}:[A-Za-z0-9_-]{35,}", re.ASCII)


async def register(
    pool: Pool,
    api: BotApi,
    box: SecretBox,
    token: str,
    mode: str,
    public_base_url: str | None,
) -> dict[str, Any]:
    if not TOKEN_SHAPE.fullmatch(token):
        raise errors.BadBotToken("not a Telegram bot token (<digits>:<35+ characters>)")
    try:
        me = await api.call(token, "getMe")
    except Unauthorized:
        raise errors.BadBotToken("Telegram does not accept this bot token") from None
    except TelegramError as error:
        raise upstream_error("getMe", error) from None
    async with connection(pool) as conn:
        bot_id, secret = await bot_store.save_bot(conn, box, me, token, mode)
    method = "setWebhook" if mode == "webhook" else "deleteWebhook"
    try:
        if mode == "webhook":
            await api.call(
                token,
                method,
                {
                    "url": f"{public_base_url}/telegram/{bot_id}/webhook",
                    "secret_token": secret,
                    "allowed_updates": ALLOWED_UPDATES,
                },
            )
        else:
            await api.call(token, method, {"drop_pending_updates": False})
    except TelegramError as error:
        async with connection(pool) as conn:
            await bot_store.record_bot_error(conn, bot_id, f"{error.code}: {error.description}")
        raise upstream_error(method, error) from None
    async with connection(pool) as conn:
        await bot_store.activate_bot(conn, bot_id)
    return {"id": bot_id, "telegram_bot_id": me["id"], "username": me.get("username"), "mode": mode}


def upstream_error(method: str, error: TelegramError) -> errors.BotedgeError:
    """Telegram's refusal or absence, as the caller is told it."""
    if isinstance(error, ServerError | TooManyRequests):
        return errors.TelegramUnavailable(f"{method}: {error.description or error.code}")
    return errors.TelegramRefused(f"{method}: {error.description}")
