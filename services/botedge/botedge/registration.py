"""Registering a bot: its token checked, stored encrypted, and Telegram pointed at us; and
the owner pausing, resuming and removing it.

A bot is stored paused and made active only once Telegram accepted where to send its updates,
so no active bot is left without a webhook (or with one, in polling mode). A paused bot keeps
its webhook (which answers 404, so Telegram keeps its updates and retries) and nobody sends
for it; resuming points Telegram at us again first. A removed bot's webhook is deleted; its
rows stay for the history.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import re
from typing import Any, NoReturn

from botedge import bot_store, errors
from botedge.bot_store import BotState
from botedge.db import connection
from botedge.ids import BotId
from botedge.telegram import BotApi, ServerError, TelegramError, TooManyRequests, Unauthorized
from botedge.updates import ALLOWED_UPDATES
from botedge.words import LANGUAGES, SOURCE, Words, msg
from shared.db import Connection, Pool
from shared.secretbox import SecretBox, SecretBoxError
from shared.telegram_shapes import TOKEN_PATTERN

log = logging.getLogger("botedge.registration")

# Checked before any call: the token goes into the Bot API URL's path.
TOKEN_SHAPE = re.compile(TOKEN_PATTERN, re.ASCII)


async def register(
    pool: Pool,
    api: BotApi,
    box: SecretBox,
    token: str,
    mode: str,
    public_base_url: str | None,
    now: dt.datetime,
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
    await _point(pool, api, token, bot_id, mode, secret, public_base_url, now)
    async with connection(pool) as conn:
        await bot_store.activate_bot(conn, bot_id)
    return {"id": bot_id, "telegram_bot_id": me["id"], "username": me.get("username"), "mode": mode}


COMMANDS = (
    ("start", msg("commands.start", "What this bot offers")),
    ("link", msg("commands.link", "Your invite link again, once you have paid")),
    ("ads", msg("commands.ads", "Advertise here, paid in USDT or TRX")),
    ("language", msg("commands.language", "Choose the language I write in")),
)
DESCRIPTION = msg(
    "bot.description",
    "I open paid channels to their members once they pay, send the contents you have links "
    "to once you have joined their channels, and take bookings for ads. Press Start to see "
    "what I offer.",
)
SHORT_DESCRIPTION = msg(
    "bot.short_description", "Paid channels, contents and ads, in your language."
)


async def describe(api: BotApi, token: str, words: Words, default: str = SOURCE) -> int:
    """The bot's command list and descriptions in every language it speaks, and in `default`
    for the rest (`setMyCommands`, `setMyDescription`, `setMyShortDescription`); how many
    calls Telegram took. A refusal is logged and the rest still asked: nothing here is needed
    for the bot to work."""
    taken = 0
    for language in (None, *LANGUAGES):
        say = words.speech(language or default)
        scope = {} if language is None else {"language_code": language}
        commands = [{"command": c, "description": say(d)} for c, d in COMMANDS]
        calls = (
            ("setMyCommands", {"commands": commands}),
            ("setMyDescription", {"description": say(DESCRIPTION)}),
            ("setMyShortDescription", {"short_description": say(SHORT_DESCRIPTION)}),
        )
        for method, params in calls:
            try:
                await api.call(token, method, {**params, **scope})
            except TelegramError as error:
                log.warning("%s (%s) refused: %s", method, language or "default", error)
                continue
            taken += 1
    return taken


async def _point(
    pool: Pool,
    api: BotApi,
    token: str,
    bot_id: BotId,
    mode: str,
    secret: str,
    public_base_url: str | None,
    now: dt.datetime,
) -> None:
    """Telegram told where the bot's updates go: our webhook, or nowhere (getUpdates); the
    address kept, so that a moved PUBLIC_BASE_URL is noticed (`repoint`)."""
    method = "setWebhook" if mode == "webhook" else "deleteWebhook"
    url = f"{public_base_url}/telegram/{bot_id}/webhook" if mode == "webhook" else None
    try:
        if mode == "webhook":
            await api.call(
                token,
                method,
                {"url": url, "secret_token": secret, "allowed_updates": ALLOWED_UPDATES},
            )
        else:
            await api.call(token, method, {"drop_pending_updates": False})
    except TelegramError as error:
        async with connection(pool) as conn:
            await bot_store.record_bot_error(
                conn, bot_id, f"{error.code}: {error.description}", now
            )
        raise upstream_error(method, error) from None
    async with connection(pool) as conn:
        await bot_store.set_webhook_url(conn, bot_id, url)


async def repoint(
    pool: Pool, api: BotApi, box: SecretBox, public_base_url: str, now: dt.datetime
) -> int:
    """Every active webhook bot Telegram sends elsewhere (PUBLIC_BASE_URL moved to another
    host or proxy), pointed here; how many. One that fails keeps its error for the panel and
    is tried again at the next start."""
    async with connection(pool) as conn:
        found = await bot_store.bots_to_repoint(conn, public_base_url)
    pointed = 0
    for bot in found:
        try:
            token = box.open(bot.token_encrypted)
            secret = box.open(bot.webhook_secret_encrypted)
            await _point(pool, api, token, bot.id, "webhook", secret, public_base_url, now)
        except (errors.BotedgeError, SecretBoxError) as error:
            log.warning("bot %d: could not point its webhook here: %s", bot.id, error)
            continue
        pointed += 1
    return pointed


async def pause(pool: Pool, bot_id: BotId) -> BotState:
    return await _change(pool, "owner_pause_bot", bot_id)


async def resume(
    pool: Pool,
    api: BotApi,
    box: SecretBox,
    bot_id: BotId,
    public_base_url: str | None,
    now: dt.datetime,
) -> BotState:
    async with connection(pool) as conn:
        found = await bot_store.bot_to_point(conn, bot_id)
        if found is None or found.status == "removed":
            await _refuse(conn, bot_id)
    if found.mode == "webhook" and not public_base_url:
        raise errors.InvalidValues("webhook mode needs PUBLIC_BASE_URL")
    token = box.open(found.token_encrypted)
    secret = box.open(found.webhook_secret_encrypted)
    await _point(pool, api, token, bot_id, found.mode, secret, public_base_url, now)
    return await _change(pool, "owner_resume_bot", bot_id)


async def remove(
    pool: Pool, api: BotApi, box: SecretBox, bot_id: BotId, now: dt.datetime
) -> BotState:
    """Telegram stops sending to our webhook, then the bot is removed (again: the same
    answer). Telegram unreachable leaves the bot as it was (503)."""
    async with connection(pool) as conn:
        found = await bot_store.bot_to_point(conn, bot_id)
    if found is None:
        raise errors.UnknownBot("no bot with that id")
    if found.status != "removed":
        try:
            token = box.open(found.token_encrypted)
            await api.call(token, "deleteWebhook", {"drop_pending_updates": False})
        except (Unauthorized, SecretBoxError):
            # Telegram no longer takes the token, or no key here opens it: nothing to stop.
            pass
        except TelegramError as error:
            raise upstream_error("deleteWebhook", error) from None
    return await _change(pool, "owner_remove_bot", bot_id, now)


async def _change(
    pool: Pool, change: str, bot_id: BotId, now: dt.datetime | None = None
) -> BotState:
    async with connection(pool) as conn:
        changed = await bot_store.change_bot(conn, change, bot_id, now)
        if changed is None:
            await _refuse(conn, bot_id)
    return changed


async def _refuse(conn: Connection, bot_id: BotId) -> NoReturn:
    """Why a bot cannot be paused or resumed: removed (409), or no such bot (404)."""
    found = await bot_store.bot_to_point(conn, bot_id)
    if found is None:
        raise errors.UnknownBot("no bot with that id")
    raise errors.BotRemoved("the bot was removed; add its token again to bring it back")


def upstream_error(method: str, error: TelegramError) -> errors.BotedgeError:
    """Telegram's refusal or absence, as the caller is told it."""
    if isinstance(error, ServerError | TooManyRequests):
        # Telegram's own wait, when it said one (a 429's retry_after), is the caller's.
        wait = None if error.retry_after is None else max(1, math.ceil(error.retry_after))
        return errors.TelegramUnavailable(
            f"{method}: {error.description or error.code}", retry_after=wait
        )
    return errors.TelegramRefused(f"{method}: {error.description}")
