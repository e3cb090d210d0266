"""The bot edge's API endpoints, a small class per feature: each method answers one operation
of `app.OPERATIONS`, which names it with its security (the bearer check is made by the route,
from that table, before the method runs)."""

from __future__ import annotations

import dataclasses
import hmac
from dataclasses import dataclass
from typing import Annotated, Literal

import msgspec
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from botedge import (
    bot_store,
    bot_texts,
    broadcasts,
    campaigns,
    channels,
    errors,
    inbox_store,
    members,
    registration,
)
from botedge.bot_store import BotState
from botedge.db import connection
from botedge.ids import BotId
from botedge.metrics import IGNORED_KINDS, WEBHOOK_UPDATES
from botedge.registration import register
from botedge.settings import BotedgeSettings
from botedge.stars import PreCheckout
from botedge.telegram import BotApi, TelegramError
from botedge.updates import MalformedUpdate, other_kind, parse
from botedge.words import Words
from shared import jsonsafe
from shared.clock import Clock
from shared.db import Pool
from shared.errors import Problem, json_body, read_body, read_query
from shared.listen import Notifier
from shared.secretbox import SecretBox
from shared.telegram_shapes import CHAT_PATTERN, TOKEN_PATTERN
from shared.web import resources, runtime

BOT_CACHE_SECONDS = 5.0


class BotRegistration(msgspec.Struct, forbid_unknown_fields=True):
    token: Annotated[str, msgspec.Meta(max_length=200, pattern=TOKEN_PATTERN)]
    mode: Literal["polling", "webhook"] = "polling"


class ChannelCheck(msgspec.Struct, forbid_unknown_fields=True):
    bot_id: Annotated[BotId, msgspec.Meta(ge=1, le=2**31 - 1)]
    chat: Annotated[str, msgspec.Meta(min_length=1, max_length=300, pattern=CHAT_PATTERN)]


class CampaignLink(msgspec.Struct, forbid_unknown_fields=True):
    bot_id: Annotated[BotId, msgspec.Meta(ge=1, le=2**31 - 1)]
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
    bot_id: Annotated[BotId, msgspec.Meta(ge=1, le=2**31 - 1)]
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


@dataclass(frozen=True)
class ApiResources:
    """What the webhook API's lifespan owns."""

    notifier: Notifier
    api: BotApi
    pre_checkout: PreCheckout


def pool_of(request: Request) -> Pool:
    return runtime(request).pool


def notifier_of(request: Request) -> Notifier:
    return resources(request, ApiResources).notifier


def api_of(request: Request) -> BotApi:
    return resources(request, ApiResources).api


def _bot_id(request: Request) -> BotId:
    bot_id = BotId(int(request.path_params["bot_id"]))
    if not 0 < bot_id < 2**31:
        raise errors.UnknownBot("no bot with that id")
    return bot_id


def _channel_id(request: Request) -> int:
    channel_id = int(request.path_params["channel_id"])
    if not 0 < channel_id < 2**31:
        raise errors.NotFound("no paid channel by that id")
    return channel_id


@dataclass(frozen=True)
class WebhookBot:
    status: str
    secret: str
    token_encrypted: str


class WebhookBots:
    """Each webhook bot's status and secret as last read, for `BOT_CACHE_SECONDS`: the webhook
    route costs no read per update. The secret is decrypted once per bot."""

    def __init__(self, box: SecretBox, clock: Clock) -> None:
        self.box = box
        self.clock = clock
        self._entries: dict[int, tuple[float, WebhookBot]] = {}

    async def get(self, pool: Pool, bot_id: BotId) -> WebhookBot | None:
        cached = self._entries.get(bot_id)
        if cached and cached[0] > self.clock.monotonic():
            return cached[1]
        async with connection(pool) as conn:
            found = await bot_store.webhook_bot(conn, bot_id)
        if found is None:
            return None
        bot = WebhookBot(
            found.status, self.box.open(found.webhook_secret_encrypted), found.token_encrypted
        )
        self._entries[bot_id] = (self.clock.monotonic() + BOT_CACHE_SECONDS, bot)
        return bot

    def forget(self, bot_id: BotId) -> None:
        self._entries.pop(bot_id, None)


class Webhook:
    """Telegram's deliveries: each update into the inbox once by its update_id."""

    def __init__(self, bots: WebhookBots, box: SecretBox) -> None:
        self.bots = bots
        self.box = box

    async def receive(self, request: Request) -> Response:
        bot_id = BotId(int(request.path_params["bot_id"]))
        found = await self.bots.get(pool_of(request), bot_id) if 0 < bot_id < 2**31 else None
        if found is None or found.status != "active":
            raise Problem(404, "unknown-bot", "no active bot with that id")
        presented = request.headers.get("x-telegram-bot-api-secret-token", "")
        # Bytes on both sides: compare_digest refuses non-ASCII str.
        if not hmac.compare_digest(presented.encode("utf-8", "replace"), found.secret.encode()):
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
            await checker.answer(self.box.open(found.token_encrypted), incoming)
        async with connection(pool_of(request)) as conn:
            new = await inbox_store.insert_update(conn, bot_id, incoming)
        # The statement committed on its own (autocommit): only now is it safe to acknowledge.
        if new:
            notifier_of(request).announce("inbox", str(bot_id))
        WEBHOOK_UPDATES.labels("stored" if new else "duplicate").inc()
        return JSONResponse({"ok": True})


class Inbox:
    """Updates that failed every attempt, and putting one back in line."""

    async def dead(self, request: Request) -> Response:
        async with connection(pool_of(request)) as conn:
            rows = await inbox_store.dead_updates(conn)
        # msgspec writes the timestamps as ISO 8601.
        return Response(msgspec.json.encode(rows), media_type="application/json")

    async def replay(self, request: Request) -> Response:
        inbox_id = int(request.path_params["inbox_id"])
        async with connection(pool_of(request)) as conn:
            bot_id = await inbox_store.replay(conn, inbox_id)
        if bot_id is None:
            raise Problem(404, "not-dead", "no dead update with that id")
        notifier_of(request).announce("inbox", str(bot_id))
        return JSONResponse({"replayed": inbox_id})


class Bots:
    """The owner's bots: registered by token, paused, resumed, removed; their Stars
    transactions as Telegram lists them."""

    def __init__(
        self,
        settings: BotedgeSettings,
        box: SecretBox,
        bots: WebhookBots,
        clock: Clock,
        words: Words,
    ) -> None:
        self.settings = settings
        self.words = words
        self.box = box
        self.bots = bots
        self.clock = clock

    async def register(self, request: Request) -> Response:
        body = await json_body(request, BotRegistration, limit=4096)
        if body.mode == "webhook" and not self.settings.public_base_url:
            raise Problem(422, "invalid-values", "webhook mode needs PUBLIC_BASE_URL")
        result = await register(
            pool_of(request),
            api_of(request),
            self.box,
            body.token,
            body.mode,
            self.settings.public_base_url,
            self.clock.now(),
        )
        # The bot's commands and descriptions in every language it speaks.
        await registration.describe(api_of(request), body.token, self.words)
        return JSONResponse(result, status_code=201)

    async def pause(self, request: Request) -> Response:
        bot_id = _bot_id(request)
        return self._changed(bot_id, await registration.pause(pool_of(request), bot_id))

    async def resume(self, request: Request) -> Response:
        bot_id = _bot_id(request)
        changed = await registration.resume(
            pool_of(request),
            api_of(request),
            self.box,
            bot_id,
            self.settings.public_base_url,
            self.clock.now(),
        )
        return self._changed(bot_id, changed)

    async def remove(self, request: Request) -> Response:
        bot_id = _bot_id(request)
        changed = await registration.remove(
            pool_of(request), api_of(request), self.box, bot_id, self.clock.now()
        )
        return self._changed(bot_id, changed)

    def _changed(self, bot_id: BotId, changed: BotState) -> Response:
        """The bot as it is after the owner's change."""
        # The webhook route would answer from its cache for the old status a while more.
        self.bots.forget(bot_id)
        return JSONResponse(dataclasses.asdict(changed))

    async def star_transactions(self, request: Request) -> Response:
        """A page of the bot's Star transactions as Telegram lists them (`getStarTransactions`,
        oldest first), for billing's reconciliation."""
        bot_id = _bot_id(request)
        page = read_query(request.query_params, StarPage)
        async with connection(pool_of(request)) as conn:
            _, token = await bot_store.bot_token(conn, self.box, bot_id)
        try:
            found = await api_of(request).call(
                token, "getStarTransactions", {"offset": page.offset, "limit": page.limit}
            )
        except TelegramError as error:
            raise registration.upstream_error("getStarTransactions", error) from None
        return JSONResponse({"transactions": found.get("transactions") or []})


class Channels:
    """A channel as the bot sees it, and its members as Telegram has them."""

    def __init__(self, box: SecretBox, clock: Clock, words: Words) -> None:
        self.box = box
        self.clock = clock
        self.words = words

    async def check(self, request: Request) -> Response:
        body = await json_body(request, ChannelCheck, limit=4096)
        answer = await channels.check(
            pool_of(request), api_of(request), self.box, body.bot_id, body.chat, self.clock.now()
        )
        return JSONResponse(answer)

    async def check_members(self, request: Request) -> Response:
        """Each person's status in the channel, from Telegram (and recorded)."""
        body = await json_body(request, MemberCheck, limit=65536)
        answer = await members.check(
            pool_of(request),
            api_of(request),
            self.box,
            _channel_id(request),
            body.user_ids,
            self.clock.now(),
        )
        return JSONResponse(answer)

    async def remove_members(self, request: Request) -> Response:
        """Those who may not be there, taken out as admission takes out a joiner."""
        body = await json_body(request, MemberCheck, limit=65536)
        answer = await members.remove(
            pool_of(request), _channel_id(request), body.user_ids, self.clock.now(), self.words
        )
        if answer["removed"]:
            notifier_of(request).announce("outbox", str(answer["bot_id"]))
        return JSONResponse(answer)


class Campaigns:
    def __init__(self, box: SecretBox) -> None:
        self.box = box

    async def link(self, request: Request) -> Response:
        body = await json_body(request, CampaignLink, limit=4096)
        made = await campaigns.make_link(
            pool_of(request), api_of(request), self.box, body.bot_id, body.channel_id, body.name
        )
        return JSONResponse(made, status_code=201)


class Texts:
    """The texts an owner may reword, and whether a rewording may stand (panel-api writes it)."""

    def __init__(self, words: Words) -> None:
        self.words = words
        self._catalog = msgspec.json.encode(bot_texts.catalog(words))

    async def catalog(self, request: Request) -> Response:
        return Response(self._catalog, media_type="application/json")

    async def check(self, request: Request) -> Response:
        proposed = await json_body(request, bot_texts.Proposed, limit=65536)
        bot_texts.checked(proposed)
        return JSONResponse({"key": proposed.key, "language": proposed.language})


class Broadcasts:
    def __init__(self, box: SecretBox, clock: Clock) -> None:
        self.box = box
        self.clock = clock

    async def send_test(self, request: Request) -> Response:
        body = await json_body(request, BroadcastTest, limit=16384)
        if (body.text is None) == (body.content_id is None):
            raise errors.InvalidValues("a broadcast is a text or a content", field="text")
        draft = broadcasts.Draft(body.text, body.content_id, body.button_text, body.button_url)
        sent = await broadcasts.send_test(
            pool_of(request), api_of(request), self.box, body.bot_id, body.chat_id, draft
        )
        return JSONResponse(sent)

    async def cancel(self, request: Request) -> Response:
        counts = await broadcasts.cancel(
            pool_of(request),
            notifier_of(request),
            int(request.path_params["broadcast_id"]),
            self.clock.now(),
        )
        return JSONResponse(counts)
