"""The bot edge's processes: the webhook API and the worker (health and metrics on its PORT)."""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.metadata import version
from typing import Annotated, Literal

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from botedge import (
    bot_store,
    broadcasts,
    campaigns,
    channels,
    errors,
    inbox_store,
    members,
    pay,
    registration,
)
from botedge.db import connection
from botedge.handlers import Handler
from botedge.metrics import IGNORED_KINDS, WEBHOOK_UPDATES
from botedge.registration import register
from botedge.settings import BotedgeSettings
from botedge.stars import PreCheckout
from botedge.supervisor import WorkerSupervisor
from botedge.telegram import BotApi, BotClients, TelegramError
from botedge.updates import MalformedUpdate, other_kind, parse
from shared import jsonsafe, openapi
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool
from shared.errors import Problem, json_body, read_body, read_query, service_error_handler
from shared.listen import Notifier
from shared.openapi import Object, Operation
from shared.secretbox import SecretBox
from shared.tasks import retrieve
from shared.telegram_shapes import CHAT_PATTERN, TOKEN_PATTERN
from shared.web import Runtime, create_service_app, require_bearer, resources, runtime

log = logging.getLogger("botedge.app")

BOT_CACHE_SECONDS = 5.0

# The one place the bot edge's errors meet HTTP.
STATUS: dict[type[errors.BotedgeError], int] = {
    errors.BadBotToken: 422,
    errors.InvalidChat: 422,
    errors.ChatNotFound: 404,
    errors.UnknownBot: 404,
    errors.BotRemoved: 409,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.InvalidValues: 422,
    errors.TelegramRefused: 502,
    errors.TelegramUnavailable: 503,
    errors.DatabaseUnavailable: 503,
}


def pool_of(request: Request) -> Pool:
    return runtime(request).pool


class BotRegistration(msgspec.Struct, forbid_unknown_fields=True):
    token: Annotated[str, msgspec.Meta(max_length=200, pattern=TOKEN_PATTERN)]
    mode: Literal["polling", "webhook"] = "polling"


class ChannelCheck(msgspec.Struct, forbid_unknown_fields=True):
    bot_id: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]
    chat: Annotated[str, msgspec.Meta(min_length=1, max_length=300, pattern=CHAT_PATTERN)]


class CampaignLink(msgspec.Struct, forbid_unknown_fields=True):
    bot_id: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]
    channel_id: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]
    # Telegram's limit on an invite link's name.
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=32, pattern=r"^[^\x00-\x1f\x7f]+$")]


class MemberCheck(msgspec.Struct, forbid_unknown_fields=True):
    user_ids: Annotated[
        list[Annotated[int, msgspec.Meta(ge=1, le=2**63 - 1)]],
        msgspec.Meta(min_length=1, max_length=500),
    ]


class StarPage(msgspec.Struct, forbid_unknown_fields=True):
    offset: Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)] = 0
    limit: Annotated[int, msgspec.Meta(ge=1, le=100)] = 100


class BroadcastTest(msgspec.Struct, forbid_unknown_fields=True):
    bot_id: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)]
    chat_id: Annotated[int, msgspec.Meta(ge=1, le=2**53)]
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)] | None = None
    content_id: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)] | None = None
    button_text: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    button_url: Annotated[str, msgspec.Meta(min_length=1, max_length=2048)] | None = None


# A text or a content, not both and not neither.
TextOrContent = msgspec.Meta(
    extra_json_schema={
        "oneOf": [
            {"required": ["text"], "properties": {"text": {"type": "string"}}},
            {"required": ["content_id"], "properties": {"content_id": {"type": "integer"}}},
        ]
    }
)


# What `GET /openapi.json` documents: every route of the api role, the body and query its
# handler decodes.
_BOT = (404, 409, 502)
OPERATIONS: dict[tuple[str, str], Operation] = {
    ("POST", "/telegram/{bot_id:int}/webhook"): Operation(
        "An update from Telegram, taken into the inbox once by its update_id",
        body=Object,
        security=None,
        problems=(401,),
        headers=(("X-Telegram-Bot-Api-Secret-Token", {"type": "string", "maxLength": 256}),),
    ),
    ("POST", "/internal/broadcasts/test"): Operation(
        "A broadcast's message sent to one chat now",
        body=Annotated[BroadcastTest, TextOrContent],
        problems=(404, 502),
        rules=("content_id is one of the bot's contents",),
    ),
    ("POST", "/internal/broadcasts/{broadcast_id:int}/cancel"): Operation(
        "A broadcast's sends not yet made, cancelled"
    ),
    ("POST", "/internal/campaigns/link"): Operation(
        "A named invite link of a channel, made by its bot",
        status=201,
        body=CampaignLink,
        problems=(404, 409, 502),
        rules=("the channel exists and the bot may invite users there",),
    ),
    ("POST", "/internal/channels/check"): Operation(
        "A channel or group as the bot sees it: found, and whether the bot is its admin",
        body=ChannelCheck,
        problems=(404, 502),
        rules=("a link names a chat, not joinchat, addstickers, share, proxy or c",),
    ),
    ("GET", "/internal/bots/{bot_id:int}/star-transactions"): Operation(
        "A page of the bot's Stars transactions from Telegram", query=StarPage, problems=_BOT
    ),
    ("POST", "/internal/channels/{channel_id:int}/members/check"): Operation(
        "Whether each person is a member, asked of Telegram", body=MemberCheck, problems=_BOT
    ),
    ("POST", "/internal/channels/{channel_id:int}/members/remove"): Operation(
        "Each person removed from the channel", body=MemberCheck, problems=_BOT
    ),
    ("GET", "/internal/inbox/dead"): Operation(
        "Updates that failed every attempt", answer=list[Object]
    ),
    ("POST", "/internal/inbox/{inbox_id:int}/replay"): Operation("A dead update tried again"),
    ("POST", "/internal/bots"): Operation(
        "A bot registered by its token",
        status=201,
        body=BotRegistration,
        problems=(409, 502),
        rules=("webhook mode only where PUBLIC_BASE_URL is set",),
    ),
    **{
        ("POST", f"/internal/bots/{{bot_id:int}}/{name}"): Operation(
            f"The bot's {name}",
            problems=(409, 422, 502),
            rules=("a bot in webhook mode resumes only where PUBLIC_BASE_URL is set",)
            if name == "resume"
            else (),
        )
        for name in ("pause", "resume", "remove")
    },
}
SECURITY = {"bearer": {"type": "http", "scheme": "bearer", "description": "SERVICE_TOKEN"}}


@dataclass(frozen=True)
class ApiResources:
    """What the webhook API's lifespan owns."""

    notifier: Notifier
    api: BotApi
    pre_checkout: PreCheckout


def create_api_app(settings: BotedgeSettings, *, clock: Clock = SYSTEM_CLOCK) -> Starlette:
    box = SecretBox(settings.bot_token_key)
    # bot id -> (valid until, status, webhook secret, encrypted token); the secret is decrypted
    # once per bot.
    bot_cache: dict[int, tuple[float, str, str, str]] = {}

    @asynccontextmanager
    async def lifespan(state: Runtime) -> AsyncIterator[ApiResources]:
        notifier = Notifier(state.pool)
        async with BotClients() as telegram, pay.billing_http() as http:
            api = BotApi(telegram, settings.telegram_api_base, state.breakers)
            billing = pay.BillingClient(
                http, settings.billing_url, settings.service_token, state.breakers
            )
            # Telegram told this address for every webhook bot it was not, beside serving.
            repointing = (
                asyncio.get_running_loop().create_task(
                    registration.repoint(state.pool, api, box, settings.public_base_url)
                )
                if settings.public_base_url
                else None
            )
            if repointing is not None:
                repointing.add_done_callback(retrieve(log, "pointing the webhooks here"))
            yield ApiResources(notifier, api, PreCheckout(api, billing))
            if repointing is not None and not repointing.done():
                repointing.cancel()
        await notifier.close()

    async def bot_secret(request: Request, bot_id: int) -> tuple[str, str, str] | None:
        cached = bot_cache.get(bot_id)
        if cached and cached[0] > clock.monotonic():
            return cached[1], cached[2], cached[3]
        async with connection(pool_of(request)) as conn:
            found = await bot_store.webhook_bot(conn, bot_id)
        if found is None:
            return None
        entry = (
            clock.monotonic() + BOT_CACHE_SECONDS,
            found.status,
            box.open(found.webhook_secret_encrypted),
            found.token_encrypted,
        )
        bot_cache[bot_id] = entry
        return entry[1], entry[2], entry[3]

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
            incoming = parse(jsonsafe.loads(body), storable=True)
        except (jsonsafe.UnsafeJson, MalformedUpdate):
            # Telegram retries every non-2xx and holds back the chat meanwhile: drop it here.
            WEBHOOK_UPDATES.labels("malformed").inc()
            return JSONResponse({"ok": True, "dropped": "malformed"})
        if incoming.kind is None:
            IGNORED_KINDS.labels(other_kind(incoming.payload)).inc()
            WEBHOOK_UPDATES.labels("ignored").inc()
            return JSONResponse({"ok": True})
        if incoming.kind == "pre_checkout_query":
            # Telegram's 10 s would not wait for the person's queue: answered here, then kept.
            checker = resources(request, ApiResources).pre_checkout
            await checker.answer(box.open(found[2]), incoming)
        async with connection(pool_of(request)) as conn:
            new = await inbox_store.insert_update(conn, bot_id, incoming)
        # The statement committed on its own (autocommit): only now is it safe to acknowledge.
        if new:
            resources(request, ApiResources).notifier.announce("inbox", str(bot_id))
        WEBHOOK_UPDATES.labels("stored" if new else "duplicate").inc()
        return JSONResponse({"ok": True})

    async def dead(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        async with connection(pool_of(request)) as conn:
            rows = await inbox_store.dead_updates(conn)
        # msgspec writes the timestamps as ISO 8601.
        return Response(msgspec.json.encode(rows), media_type="application/json")

    async def replay(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        inbox_id = int(request.path_params["inbox_id"])
        async with connection(pool_of(request)) as conn:
            bot_id = await inbox_store.replay(conn, inbox_id)
        if bot_id is None:
            raise Problem(404, "not-dead", "no dead update with that id")
        resources(request, ApiResources).notifier.announce("inbox", str(bot_id))
        return JSONResponse({"replayed": inbox_id})

    async def register_bot(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        body = await json_body(request, BotRegistration, limit=4096)
        if body.mode == "webhook" and not settings.public_base_url:
            raise Problem(422, "invalid-values", "webhook mode needs PUBLIC_BASE_URL")
        result = await register(
            pool_of(request),
            resources(request, ApiResources).api,
            box,
            body.token,
            body.mode,
            settings.public_base_url,
        )
        return JSONResponse(result, status_code=201)

    def change_bot(change: str) -> Callable[[Request], Awaitable[Response]]:
        """The owner pausing, resuming or removing a bot; answered with the bot as it is
        after."""

        async def handler(request: Request) -> Response:
            require_bearer(request, settings.service_token)
            bot_id = int(request.path_params["bot_id"])
            if not 0 < bot_id < 2**31:
                raise errors.UnknownBot("no bot with that id")
            api = resources(request, ApiResources).api
            pool = pool_of(request)
            if change == "pause":
                changed = await registration.pause(pool, bot_id)
            elif change == "resume":
                changed = await registration.resume(
                    pool, api, box, bot_id, settings.public_base_url
                )
            else:
                changed = await registration.remove(pool, api, box, bot_id, clock.now())
            # The webhook route would answer from its cache for the old status a while more.
            bot_cache.pop(bot_id, None)
            return JSONResponse(changed)

        return handler

    async def check_channel(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        body = await json_body(request, ChannelCheck, limit=4096)
        api = resources(request, ApiResources).api
        answer = await channels.check(
            pool_of(request), api, box, body.bot_id, body.chat, clock.now()
        )
        return JSONResponse(answer)

    def channel_of(request: Request) -> int:
        channel_id = int(request.path_params["channel_id"])
        if not 0 < channel_id < 2**31:
            raise errors.NotFound("no paid channel by that id")
        return channel_id

    async def check_members(request: Request) -> Response:
        """Each person's status in the channel, from Telegram (and recorded)."""
        require_bearer(request, settings.service_token)
        body = await json_body(request, MemberCheck, limit=65536)
        api = resources(request, ApiResources).api
        answer = await members.check(
            pool_of(request), api, box, channel_of(request), body.user_ids, clock.now()
        )
        return JSONResponse(answer)

    async def remove_members(request: Request) -> Response:
        """Those who may not be there, taken out as admission takes out a joiner."""
        require_bearer(request, settings.service_token)
        body = await json_body(request, MemberCheck, limit=65536)
        answer = await members.remove(
            pool_of(request), channel_of(request), body.user_ids, clock.now()
        )
        if answer["removed"]:
            resources(request, ApiResources).notifier.announce("outbox", str(answer["bot_id"]))
        return JSONResponse(answer)

    async def star_transactions(request: Request) -> Response:
        """A page of the bot's Star transactions as Telegram lists them (`getStarTransactions`,
        oldest first), for billing's reconciliation."""
        require_bearer(request, settings.service_token)
        bot_id = int(request.path_params["bot_id"])
        if not 0 < bot_id < 2**31:
            raise errors.UnknownBot("no bot with that id")
        page = read_query(request.query_params, StarPage)
        async with connection(pool_of(request)) as conn:
            _, token = await channels.bot_token(conn, box, bot_id)
        api = resources(request, ApiResources).api
        try:
            found = await api.call(
                token, "getStarTransactions", {"offset": page.offset, "limit": page.limit}
            )
        except TelegramError as error:
            raise registration.upstream_error("getStarTransactions", error) from None
        return JSONResponse({"transactions": found.get("transactions") or []})

    async def campaign_link(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        body = await json_body(request, CampaignLink, limit=4096)
        api = resources(request, ApiResources).api
        made = await campaigns.make_link(
            pool_of(request), api, box, body.bot_id, body.channel_id, body.name
        )
        return JSONResponse(made, status_code=201)

    async def test_broadcast(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        body = await json_body(request, BroadcastTest, limit=16384)
        if (body.text is None) == (body.content_id is None):
            raise errors.InvalidValues("a broadcast is a text or a content", field="text")
        draft = broadcasts.Draft(body.text, body.content_id, body.button_text, body.button_url)
        api = resources(request, ApiResources).api
        sent = await broadcasts.send_test(
            pool_of(request), api, box, body.bot_id, body.chat_id, draft
        )
        return JSONResponse(sent)

    async def cancel_broadcast(request: Request) -> Response:
        require_bearer(request, settings.service_token)
        notifier = resources(request, ApiResources).notifier
        counts = await broadcasts.cancel(
            pool_of(request), notifier, int(request.path_params["broadcast_id"])
        )
        return JSONResponse(counts)

    return create_service_app(
        settings.common,
        routes=[
            openapi.route(
                msgspec.json.encode(
                    openapi.document(
                        "Gatehouse botedge", version("gatehouse"), OPERATIONS, SECURITY
                    )
                )
            ),
            Route("/telegram/{bot_id:int}/webhook", webhook, methods=["POST"]),
            Route("/internal/broadcasts/test", test_broadcast, methods=["POST"]),
            Route(
                "/internal/broadcasts/{broadcast_id:int}/cancel", cancel_broadcast, methods=["POST"]
            ),
            Route("/internal/campaigns/link", campaign_link, methods=["POST"]),
            Route("/internal/channels/check", check_channel, methods=["POST"]),
            Route(
                "/internal/bots/{bot_id:int}/star-transactions",
                star_transactions,
                methods=["GET"],
            ),
            Route(
                "/internal/channels/{channel_id:int}/members/check",
                check_members,
                methods=["POST"],
            ),
            Route(
                "/internal/channels/{channel_id:int}/members/remove",
                remove_members,
                methods=["POST"],
            ),
            Route("/internal/inbox/dead", dead, methods=["GET"]),
            Route("/internal/inbox/{inbox_id:int}/replay", replay, methods=["POST"]),
            Route("/internal/bots", register_bot, methods=["POST"]),
            *(
                Route(f"/internal/bots/{{bot_id:int}}/{name}", change_bot(name), methods=["POST"])
                for name in ("pause", "resume", "remove")
            ),
        ],
        service_lifespan=lifespan,
        exception_handlers={errors.BotedgeError: service_error_handler(STATUS)},
    )


def create_worker_app(
    settings: BotedgeSettings, handler: Handler | None = None, *, clock: Clock = SYSTEM_CLOCK
) -> Starlette:
    @asynccontextmanager
    async def lifespan(state: Runtime) -> AsyncIterator[WorkerSupervisor]:
        telegram_clients = BotClients(settings.telegram_connections)
        async with pay.billing_http() as http, telegram_clients as telegram:
            supervisor = WorkerSupervisor(
                settings, state.pool, http, telegram, handler, clock=clock, breakers=state.breakers
            )
            await supervisor.start()
            try:
                yield supervisor
            finally:
                await supervisor.stop(settings.common.shutdown_timeout)

    return create_service_app(settings.common, routes=[], service_lifespan=lifespan)
