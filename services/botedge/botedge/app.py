"""The bot edge's processes: the webhook API (what each route does and who may call it in
`OPERATIONS`, which the document and the routes are both built from) and the worker (health and
metrics on its PORT). The one place each is put together."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Annotated

import httpx
import msgspec
from starlette.applications import Starlette

from botedge import (
    ad_messages,
    admission,
    adshop,
    bot_texts,
    broadcasts,
    errors,
    gate,
    language,
    pay,
    registration,
    stars,
)
from botedge.access import ACCESS_EVENTS, Access
from botedge.billing_client import BillingClient, billing_http
from botedge.bot_texts import OwnTexts
from botedge.endpoints import (
    ApiResources,
    BotRegistration,
    Bots,
    Broadcasts,
    BroadcastTest,
    CampaignLink,
    Campaigns,
    ChannelCheck,
    Channels,
    Inbox,
    MemberCheck,
    StarPage,
    Texts,
    Webhook,
    WebhookBots,
)
from botedge.events import EventQueue, EventTable
from botedge.handlers import BotLogic
from botedge.leases import holder_id
from botedge.routing import Feature, Handler
from botedge.settings import BotedgeSettings
from botedge.stars import PreCheckout
from botedge.supervisor import LEASE_RELEASED, WorkerParts, WorkerSupervisor
from botedge.telegram import BotApi, BotClients
from botedge.words import Words
from shared import openapi
from shared.breaker import Breakers
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool
from shared.errors import service_error_handler
from shared.listen import Listener, Notifier
from shared.openapi import Object, Operation
from shared.secretbox import SecretBox
from shared.tasks import retrieve
from shared.web import Runtime, create_service_app

log = logging.getLogger("botedge.app")

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
        handler=Webhook.receive,
    ),
    ("POST", "/internal/broadcasts/test"): Operation(
        "A broadcast's message sent to one chat now",
        body=Annotated[BroadcastTest, TextOrContent],
        problems=(404, 502),
        rules=("content_id is one of the bot's contents",),
        handler=Broadcasts.send_test,
    ),
    ("POST", "/internal/broadcasts/{broadcast_id:int}/cancel"): Operation(
        "A broadcast's sends not yet made, cancelled", handler=Broadcasts.cancel
    ),
    ("POST", "/internal/campaigns/link"): Operation(
        "A named invite link of a channel, made by its bot",
        status=201,
        body=CampaignLink,
        problems=(404, 409, 502),
        rules=("the channel exists and the bot may invite users there",),
        handler=Campaigns.link,
    ),
    ("POST", "/internal/channels/check"): Operation(
        "A channel or group as the bot sees it: found, and whether the bot is its admin",
        body=ChannelCheck,
        problems=(404, 502),
        rules=("a link names a chat, not joinchat, addstickers, share, proxy or c",),
        handler=Channels.check,
    ),
    ("GET", "/internal/bots/{bot_id:int}/star-transactions"): Operation(
        "A page of the bot's Stars transactions from Telegram",
        query=StarPage,
        problems=_BOT,
        handler=Bots.star_transactions,
    ),
    ("POST", "/internal/channels/{channel_id:int}/members/check"): Operation(
        "Whether each person is a member, asked of Telegram",
        body=MemberCheck,
        problems=_BOT,
        handler=Channels.check_members,
    ),
    ("POST", "/internal/channels/{channel_id:int}/members/remove"): Operation(
        "Each person removed from the channel",
        body=MemberCheck,
        problems=_BOT,
        handler=Channels.remove_members,
    ),
    ("GET", "/internal/texts"): Operation(
        "The texts an owner may reword: where each goes, its limit, its placeholders and the"
        " text shipped in each language",
        answer=list[bot_texts.Editable],
        handler=Texts.catalog,
    ),
    ("POST", "/internal/texts/check"): Operation(
        "Whether an owner's text may stand in for one of the bot's",
        body=bot_texts.Proposed,
        problems=(404,),
        rules=(
            "every placeholder of the text kept, written plainly, and no other",
            "Telegram's HTML where the text is sent in it, no tags where it is not",
            "within Telegram's limit with every placeholder at its longest",
        ),
        handler=Texts.check,
    ),
    ("GET", "/internal/inbox/dead"): Operation(
        "Updates that failed every attempt", answer=list[Object], handler=Inbox.dead
    ),
    ("POST", "/internal/inbox/{inbox_id:int}/replay"): Operation(
        "A dead update tried again", handler=Inbox.replay
    ),
    ("POST", "/internal/bots"): Operation(
        "A bot registered by its token",
        status=201,
        body=BotRegistration,
        problems=(409, 502),
        rules=("webhook mode only where PUBLIC_BASE_URL is set",),
        handler=Bots.register,
    ),
    **{
        ("POST", f"/internal/bots/{{bot_id:int}}/{name}"): Operation(
            f"The bot's {name}",
            problems=(409, 422, 502),
            rules=("a bot in webhook mode resumes only where PUBLIC_BASE_URL is set",)
            if name == "resume"
            else (),
            handler=getattr(Bots, name),
        )
        for name in ("pause", "resume", "remove")
    },
}
SECURITY = {"bearer": {"type": "http", "scheme": "bearer", "description": "SERVICE_TOKEN"}}


def create_api_app(settings: BotedgeSettings, *, clock: Clock = SYSTEM_CLOCK) -> Starlette:
    box = SecretBox(settings.bot_token_key)

    @asynccontextmanager
    async def lifespan(state: Runtime) -> AsyncIterator[ApiResources]:
        notifier = Notifier(state.pool)
        async with BotClients() as telegram, billing_http() as http:
            api = BotApi(telegram, settings.telegram_api_base, state.breakers)
            billing = BillingClient(
                http, settings.billing_url, settings.service_token, state.breakers
            )
            # Telegram told this address for every webhook bot it was not, beside serving.
            repointing = (
                asyncio.get_running_loop().create_task(
                    registration.repoint(
                        state.pool, api, box, settings.public_base_url, clock.now()
                    )
                )
                if settings.public_base_url
                else None
            )
            if repointing is not None:
                repointing.add_done_callback(retrieve(log, "pointing the webhooks here"))
            yield ApiResources(notifier, api, PreCheckout(api, billing, words))
            if repointing is not None and not repointing.done():
                repointing.cancel()
        await notifier.close()

    bots = WebhookBots(box, clock)
    # The bot's words in every language, loaded once for the api's handlers.
    words = Words()
    features = [
        Webhook(bots, box),
        Inbox(),
        Bots(settings, box, bots, clock, words),
        Channels(box, clock, words),
        Campaigns(box),
        Broadcasts(box, clock),
        Texts(words),
    ]
    document = openapi.document("Gatehouse botedge", version("gatehouse"), OPERATIONS, SECURITY)
    return create_service_app(
        settings.common,
        routes=[
            openapi.route(msgspec.json.encode(document)),
            *openapi.routes(OPERATIONS, features, {"bearer": settings.service_token}),
        ],
        service_lifespan=lifespan,
        exception_handlers={errors.BotedgeError: service_error_handler(STATUS)},
    )


# The notices a worker listens for.
WORKER_CHANNELS = (
    "inbox",
    "outbox",
    gate.CHANNEL,
    gate.CONTENTS_CHANNEL,
    bot_texts.CHANNEL,
    broadcasts.QUEUED,
    broadcasts.CANCELLED,
    LEASE_RELEASED,
)


def compose_worker(
    settings: BotedgeSettings,
    pool: Pool,
    http: httpx.AsyncClient,
    telegram: BotClients,
    handler: Handler | None = None,
    *,
    clock: Clock = SYSTEM_CLOCK,
    breakers: Breakers | None = None,
) -> WorkerSupervisor:
    """The worker's composition root: every feature and queue built once and wired to the
    notices that keep their caches right. `handler` stands in for the bot's logic in tests."""
    api = BotApi(telegram, settings.telegram_api_base, breakers)
    pool_listener = Listener(settings.common.database_url.reveal(), WORKER_CHANNELS)
    joined, contents = _gate_caches(pool_listener, clock)
    billing = BillingClient(http, settings.billing_url, settings.service_token, api.breakers)
    # Tokens of the bots the supervisor loads, for the reads from Telegram.
    tokens: dict[int, str] = {}

    def queue(table: EventTable) -> EventQueue:
        return EventQueue(
            pool,
            table,
            lease_seconds=settings.lock_seconds,
            max_attempts=settings.access_max_attempts,
            backoff_base=settings.access_retry_base,
            clock=clock,
        )

    words = Words()
    features: list[Feature] = [
        gate.Gate(pool, joined, contents),
        adshop.AdShop(),
        admission.Admission(pool, settings.invite_link_hours, clock),
        pay.Pay(billing, words),
        language.Language(words),
        stars.Stars(pool),
    ]
    access = Access(
        pool,
        api,
        tokens.get,
        queue(ACCESS_EVENTS),
        invite_hours=settings.invite_link_hours,
        clock=clock,
        words=words,
    )
    refunds = stars.StarRefunds(pool, api, tokens.get, queue(stars.STAR_REFUNDS))
    ads = ad_messages.AdEvents(pool, queue(ad_messages.AD_ORDER_EVENTS), words)
    holder = holder_id()
    notifier = Notifier(pool)
    fan_out = broadcasts.FanOut(
        pool,
        notifier,
        holder,
        lease_seconds=settings.lock_seconds,
        poll_interval=settings.poll_interval,
        wakeup=pool_listener.event(broadcasts.QUEUED),
        batch=settings.broadcast_batch,
        window=settings.broadcast_window,
        clock=clock,
    )
    parts = WorkerParts(
        api=api,
        box=SecretBox(settings.bot_token_key),
        holder=holder,
        notifier=notifier,
        listener=pool_listener,
        tokens=tokens,
        handler=handler or BotLogic(api, tokens.get, features, clock, pool, words),
        # Pollers answer pre-checkout queries as they take them in.
        pre_checkout=stars.PreCheckout(api, billing, words),
        queues=(
            (access.queue, access.handle),
            (ads.queue, ads.handle),
            (refunds.queue, refunds.handle),
        ),
        fan_out=fan_out,
        words=words,
        texts=OwnTexts(pool, words),
    )
    return WorkerSupervisor(settings, pool, parts, clock=clock)


def _gate_caches(listener: Listener, clock: Clock) -> tuple[gate.JoinedCache, gate.ContentCache]:
    """The gate's caches, emptied by the notices of a change and when notices were lost."""
    joined = gate.JoinedCache(clock=clock)
    listener.subscribe(gate.CHANNEL, joined.forget)
    contents = gate.ContentCache(listener.connected.is_set, clock=clock)
    listener.subscribe(gate.CONTENTS_CHANNEL, contents.clear)
    # A notice sent while the connection was down is lost: start the caches over.
    listener.on_reconnect(joined.clear)
    listener.on_reconnect(contents.clear)
    return joined, contents


def create_worker_app(
    settings: BotedgeSettings, handler: Handler | None = None, *, clock: Clock = SYSTEM_CLOCK
) -> Starlette:
    @asynccontextmanager
    async def lifespan(state: Runtime) -> AsyncIterator[WorkerSupervisor]:
        telegram_clients = BotClients(settings.telegram_connections)
        async with billing_http() as http, telegram_clients as telegram:
            supervisor = compose_worker(
                settings, state.pool, http, telegram, handler, clock=clock, breakers=state.breakers
            )
            await supervisor.start()
            try:
                yield supervisor
            finally:
                await supervisor.stop(settings.common.shutdown_timeout)

    return create_service_app(settings.common, routes=[], service_lifespan=lifespan)
