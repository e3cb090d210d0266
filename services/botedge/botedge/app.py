"""The bot edge's processes: the webhook API and the worker (health and metrics on its PORT)."""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Literal

import httpx
import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from botedge import sqlq, store
from botedge.edge import EdgeWorker
from botedge.handlers import Handler
from botedge.metrics import IGNORED_KINDS, WEBHOOK_UPDATES
from botedge.settings import BotedgeSettings
from botedge.telegram import (
    BotApi,
    ServerError,
    TelegramError,
    TooManyRequests,
    Unauthorized,
)
from botedge.updates import ALLOWED_UPDATES, MalformedUpdate, other_kind, parse
from shared import jsonsafe
from shared.db import Pool
from shared.errors import Problem, json_body, read_body
from shared.listen import Notifier
from shared.secretbox import SecretBox
from shared.web import Runtime, create_service_app, require_bearer, runtime

Q = sqlq.Q
BOT_CACHE_SECONDS = 5.0


# Telegram's token shape: the bot's id, a colon, 35 or more of [A-Za-z0-9_-]. Checked before
# any call: the token goes into the Bot API URL's path.
TOKEN_SHAPE = re.compile(r"[0-9]{1,20}:[A-Za-z0-9_-]{35,}", re.ASCII)


class BotRegistration(msgspec.Struct, forbid_unknown_fields=True):
    token: Annotated[str, msgspec.Meta(max_length=200)]
    mode: Literal["polling", "webhook"] = "polling"


def create_api_app(settings: BotedgeSettings) -> Starlette:
    box = SecretBox(settings.bot_token_key)
    # bot id -> (valid until, status, webhook secret); the secret is decrypted once per bot.
    bot_cache: dict[int, tuple[float, str, str]] = {}

    @asynccontextmanager
    async def resources(state: Runtime) -> AsyncIterator[None]:
        state.extra["notifier"] = Notifier(state.pool)
        async with httpx.AsyncClient() as http:
            state.extra["api"] = BotApi(http, settings.telegram_api_base)
            yield
        await state.extra["notifier"].close()

    async def bot_secret(request: Request, bot_id: int) -> tuple[str, str] | None:
        cached = bot_cache.get(bot_id)
        if cached and cached[0] > time.monotonic():
            return cached[1], cached[2]
        async with runtime(request).pool.connection() as conn:
            cur = await conn.execute(Q["bot_for_webhook"], {"bot_id": bot_id})
            row = await cur.fetchone()
        if row is None:
            return None
        entry = (
            time.monotonic() + BOT_CACHE_SECONDS,
            str(row["status"]),
            box.open(row["webhook_secret_encrypted"]),
        )
        bot_cache[bot_id] = entry
        return entry[1], entry[2]

    async def webhook(request: Request) -> Response:
        bot_id = int(request.path_params["bot_id"])
        found = await bot_secret(request, bot_id) if 0 < bot_id < 2**31 else None
        if found is None or found[0] != "active":
            raise Problem(404, "unknown-bot", "no active bot with that id")
        presented = request.headers.get("x-telegram-bot-api-secret-token", "")
        # Bytes on both sides: compare_digest refuses non-ASCII str.
        if not hmac.compare_digest(presented.encode("utf-8", "replace"), found[1].encode()):
            raise Problem(401, "bad-secret-token", "X-Telegram-Bot-Api-Secret-Token is wrong")
        body = await read_body(request)
        try:
            incoming = parse(jsonsafe.loads(body))
        except (jsonsafe.UnsafeJson, MalformedUpdate):
            # Telegram retries every non-2xx and holds back the chat meanwhile: drop it here.
            WEBHOOK_UPDATES.labels("malformed").inc()
            return JSONResponse({"ok": True, "dropped": "malformed"})
        if incoming.kind is None:
            IGNORED_KINDS.labels(other_kind(incoming.payload)).inc()
            WEBHOOK_UPDATES.labels("ignored").inc()
            return JSONResponse({"ok": True})
        state = runtime(request)
        async with state.pool.connection() as conn:
            new = await store.insert_update(conn, bot_id, incoming)
        # The connection block committed: only now is the update safe to acknowledge.
        if new:
            state.extra["notifier"].announce("inbox", str(bot_id))
        WEBHOOK_UPDATES.labels("stored" if new else "duplicate").inc()
        return JSONResponse({"ok": True})

    async def dead(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        async with runtime(request).pool.connection() as conn:
            rows = await store.dead_updates(conn)
        # msgspec writes the timestamps as ISO 8601.
        return Response(msgspec.json.encode(rows), media_type="application/json")

    async def replay(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        inbox_id = int(request.path_params["inbox_id"])
        async with runtime(request).pool.connection() as conn:
            bot_id = await store.replay(conn, inbox_id)
        if bot_id is None:
            raise Problem(404, "not-dead", "no dead update with that id")
        runtime(request).extra["notifier"].announce("inbox", str(bot_id))
        return JSONResponse({"replayed": inbox_id})

    async def register_bot(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        body = await json_body(request, BotRegistration, limit=4096)
        if body.mode == "webhook" and not settings.public_base_url:
            raise Problem(422, "invalid-values", "webhook mode needs PUBLIC_BASE_URL")
        state = runtime(request)
        result = await register(
            state.pool, state.extra["api"], settings, box, body.token, body.mode
        )
        return JSONResponse(result, status_code=201)

    return create_service_app(
        settings.common,
        routes=[
            Route("/telegram/{bot_id:int}/webhook", webhook, methods=["POST"]),
            Route("/internal/inbox/dead", dead, methods=["GET"]),
            Route("/internal/inbox/{inbox_id:int}/replay", replay, methods=["POST"]),
            Route("/internal/bots", register_bot, methods=["POST"]),
        ],
        extra_lifespan=resources,
    )


async def register(
    pool: Pool, api: BotApi, settings: BotedgeSettings, box: SecretBox, token: str, mode: str
) -> dict[str, object]:
    """Check a token with getMe, store it encrypted, and point Telegram at us.

    A webhook bot is stored paused and made active only once Telegram accepted the webhook, so
    no active bot is left without one.
    """
    if not TOKEN_SHAPE.fullmatch(token):
        raise Problem(422, "bad-bot-token", "not a Telegram bot token (<digits>:<35+ characters>)")
    try:
        me = await api.call(token, "getMe")
    except Unauthorized:
        raise Problem(422, "bad-bot-token", "Telegram does not accept this bot token") from None
    except TelegramError as error:
        raise _upstream_problem("getMe", error) from None
    async with pool.connection() as conn:
        bot_id, secret = await store.save_bot(conn, box, me, token, mode)
    try:
        if mode == "webhook":
            url = f"{settings.public_base_url}/telegram/{bot_id}/webhook"
            await api.call(
                token,
                "setWebhook",
                {"url": url, "secret_token": secret, "allowed_updates": ALLOWED_UPDATES},
            )
        else:
            await api.call(token, "deleteWebhook", {"drop_pending_updates": False})
    except TelegramError as error:
        async with pool.connection() as conn:
            await store.record_bot_error(conn, bot_id, f"{error.code}: {error.description}")
        method = "setWebhook" if mode == "webhook" else "deleteWebhook"
        raise _upstream_problem(method, error) from None
    async with pool.connection() as conn:
        await store.activate_bot(conn, bot_id)
    return {"id": bot_id, "telegram_bot_id": me["id"], "username": me.get("username"), "mode": mode}


def _upstream_problem(method: str, error: TelegramError) -> Problem:
    """502 when Telegram answered no (its description in `detail`), 503 when it could not be
    asked or asked us to wait."""
    if isinstance(error, ServerError | TooManyRequests):
        return Problem(503, "telegram-unavailable", f"{method}: {error.description}")
    return Problem(502, "telegram-refused", f"{method}: {error.description}")


def create_worker_app(settings: BotedgeSettings, handler: Handler | None = None) -> Starlette:
    @asynccontextmanager
    async def resources(state: Runtime) -> AsyncIterator[None]:
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
        async with httpx.AsyncClient(limits=limits) as http:
            edge = EdgeWorker(settings, state.pool, http, handler)
            await edge.start()
            try:
                yield
            finally:
                await edge.stop(settings.common.shutdown_timeout)

    return create_service_app(settings.common, routes=[], extra_lifespan=resources)
