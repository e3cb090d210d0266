"""Paying for a channel from the bot.

`t.me/<bot>?start=pay_<channel id>` shows the channel's price and a button per gateway billing
has on (`GET /internal/gateways`). A press asks billing for an invoice (`POST /internal/invoices`)
and edits the message to a button with its `pay_url`. Both calls are made in `prepare`, before
the update's transaction; billing unreachable retries the update. A retried press may leave an
unused invoice behind (unguessable, and it expires in 24 hours); only the last one is shown.
Access itself comes from billing once the gateway's callback is in (`access.py`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import httpx

from botedge.handlers import Context, RetryLater, Routes, Visit
from botedge.inbox_store import InboxRow
from botedge.outbox_store import Reply
from botedge.telegram import KEEPALIVE_SECONDS
from botedge.text import escape_html
from shared.db import Connection
from shared.settings import Secret

log = logging.getLogger("botedge.pay")

NOT_PAID = "This link does not lead to a paid channel (any more)."
NO_GATEWAYS = "Payments are not open here right now. Please try again later."
GATEWAY_OFF = "That way to pay is not available any more."


@dataclass(frozen=True)
class Offer:
    channel_id: int
    title: str
    amount: str
    currency: str
    period_days: int
    gateways: tuple[str, ...]
    # Each gateway's name as people read it, as billing's registry gives it.
    titles: dict[str, str] = field(default_factory=dict)

    def gateway_title(self, gateway: str) -> str:
        return self.titles.get(gateway, gateway)


@dataclass(frozen=True)
class Invoice:
    pay_url: str
    amount: str
    currency: str
    gateway: str


def billing_http() -> httpx.AsyncClient:
    """The worker's client for `BillingClient`: few calls, so httpx, its connections kept as
    long as the Bot API's."""
    return httpx.AsyncClient(limits=httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS))


class BillingClient:
    """billing's internal endpoints, with the service token. Any answer that retrying could
    change (unreachable, timeout, 5xx, 429) is `RetryLater`."""

    def __init__(self, client: httpx.AsyncClient, base_url: str, token: Secret) -> None:
        self.client = client
        self.base_url = base_url.rstrip("/")
        self.token = token

    async def _call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = await self.client.request(
                method,
                f"{self.base_url}{path}",
                headers={"Authorization": f"Bearer {self.token.reveal()}"},
                timeout=10.0,
                **kwargs,
            )
        except httpx.HTTPError as error:
            raise RetryLater(f"billing {path}: {type(error).__name__}") from None
        if response.status_code >= 500 or response.status_code == 429:
            raise RetryLater(f"billing {path}: {response.status_code}")
        return response

    async def offer(self, channel_id: int) -> Offer | None:
        """The channel's price and the gateways on; None when it is not a paid channel."""
        response = await self._call("GET", "/internal/gateways", params={"channel_id": channel_id})
        if response.status_code != 200:
            raise RetryLater(f"billing /internal/gateways: {response.status_code}")
        body = response.json()
        offer = body.get("offer")
        if not isinstance(offer, dict):
            return None
        return Offer(
            channel_id,
            str(offer["title"]),
            str(offer["amount"]),
            str(offer["currency"]),
            int(offer["period_days"]),
            tuple(str(g) for g in body.get("gateways") or ()),
            {str(k): str(v) for k, v in (body.get("titles") or {}).items()},
        )

    async def invoice(self, telegram_user_id: int, channel_id: int, gateway: str) -> Invoice | str:
        """A new invoice, or why there is none: "not_paid" or "gateway_off"."""
        response = await self._call(
            "POST",
            "/internal/invoices",
            json={
                "telegram_user_id": telegram_user_id,
                "channel_id": channel_id,
                "gateway": gateway,
            },
        )
        if response.status_code == 404:
            return "not_paid"
        if response.status_code == 422:
            return "gateway_off"
        if response.status_code != 201:
            raise RetryLater(f"billing /internal/invoices: {response.status_code}")
        body = response.json()
        return Invoice(str(body["pay_url"]), str(body["amount"]), str(body["currency"]), gateway)


def offer_message(offer: Offer | None) -> tuple[str, dict[str, Any] | None]:
    """The offer's text and its buttons (none when there is nothing to press)."""
    if offer is None:
        return NOT_PAID, None
    if not offer.gateways:
        return NO_GATEWAYS, None
    days = "1 day" if offer.period_days == 1 else f"{offer.period_days} days"
    text = (
        f"<b>{escape_html(offer.title)}</b>: {escape_html(offer.amount)} "
        f"{escape_html(offer.currency)} for {days}.\nChoose how to pay:"
    )
    rows = [
        [
            {
                "text": f"Pay with {offer.gateway_title(g)}",
                "callback_data": f"pay:{offer.channel_id}:{g}",
            }
        ]
        for g in offer.gateways
    ]
    return text, {"inline_keyboard": rows}


def invoice_message(offer: Offer, invoice: Invoice) -> tuple[str, dict[str, Any]]:
    price = f"{escape_html(invoice.amount)} {escape_html(invoice.currency)}"
    text = (
        f"Pay <b>{price}</b> for <b>{escape_html(offer.title)}</b> with "
        f"{offer.gateway_title(invoice.gateway)}. The link is valid for 24 hours; once the payment "
        "arrives, your invite link comes here."
    )
    button = {"text": f"Pay {invoice.amount} {invoice.currency}", "url": invoice.pay_url}
    return text, {"inline_keyboard": [[button]]}


def _channel_id(text: str) -> int:
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else 0


class Pay:
    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    def register(self, routes: Routes) -> None:
        routes.start_prefixes["pay_"] = _Offer(self.billing)
        routes.callbacks["pay:"] = _Press(self.billing)


class _Offer:
    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> Offer | None:
        channel_id = _channel_id(arg)
        return await self.billing.offer(channel_id) if channel_id else None

    async def apply(self, conn: Connection, visit: Visit, offer: Offer | None) -> list[Reply]:
        chat_id = visit.update.chat_key
        text, markup = offer_message(offer)
        payload: dict[str, Any] = {"chat_id": chat_id, "text": text, "parse_mode": "HTML"}
        if markup:
            payload["reply_markup"] = markup
        return [Reply(chat_id, "sendMessage", payload)]


@dataclass(frozen=True)
class Pressed:
    offer: Offer | None
    outcome: Invoice | str


class _Press:
    def __init__(self, billing: BillingClient) -> None:
        self.billing = billing

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> Pressed:
        channel, _, gateway = arg.partition(":")
        channel_id = _channel_id(channel)
        offer = await self.billing.offer(channel_id) if channel_id else None
        if offer is None:
            return Pressed(None, "not_paid")
        if gateway not in offer.gateways:
            return Pressed(offer, "gateway_off")
        outcome = await self.billing.invoice(update.sender_id, channel_id, gateway)
        return Pressed(offer, outcome)

    async def apply(self, conn: Connection, visit: Visit, pressed: Pressed) -> list[Reply]:
        update = visit.update
        chat_id = update.chat_key
        answer: dict[str, Any] = {"callback_query_id": str(update.body.get("id", ""))}
        if pressed.offer is not None and isinstance(pressed.outcome, Invoice):
            text, markup = invoice_message(pressed.offer, pressed.outcome)
        else:
            offer = None if pressed.outcome == "not_paid" else pressed.offer
            if pressed.outcome == "gateway_off":
                answer["text"] = GATEWAY_OFF
            text, shown = offer_message(offer)
            markup = shown or {"inline_keyboard": []}
        replies = [Reply(chat_id, "answerCallbackQuery", answer)]
        message_id = (update.body.get("message") or {}).get("message_id")
        payload: dict[str, Any] = {
            "chat_id": chat_id,
            "text": text,
            "parse_mode": "HTML",
            "reply_markup": markup,
        }
        if isinstance(message_id, int):
            replies.append(Reply(chat_id, "editMessageText", {**payload, "message_id": message_id}))
        else:
            replies.append(Reply(chat_id, "sendMessage", payload))
        return replies
