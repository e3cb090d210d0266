"""Each gateway's callback for an invoice, signed with its scheme as the gateway sends it:
what the simulated checkout posts to billing, and what the tests post."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from billing import money
from billing.webhooks import Stripe, Subgate, wayforpay_signature


@dataclass(frozen=True)
class Callback:
    path: str
    content: bytes
    headers: dict[str, str]

    def send(self, client: httpx.Client, base: str) -> httpx.Response:
        return client.post(base + self.path, content=self.content, headers=self.headers)

    async def send_async(self, client: httpx.AsyncClient, base: str) -> httpx.Response:
        return await client.post(base + self.path, content=self.content, headers=self.headers)


def subgate(
    secret: str, order: str, payment_id: str, amount: str, currency: str, ts: int | None = None
) -> Callback:
    """Our own scheme knows payments only: a declined card sends nothing."""
    payload: dict[str, Any] = {
        "orderReference": order,
        "externalPaymentId": payment_id,
        "amount": amount,
        "currency": currency,
        "timestamp": int(time.time()) if ts is None else ts,
    }
    payload["signature"] = Subgate.sign(secret, payload)
    return Callback(
        "/v1/webhooks/payments/subgate",
        json.dumps(payload).encode(),
        {"content-type": "application/json"},
    )


def wayforpay(
    merchant: str, key: str, order: str, amount: str, currency: str, status: str = "Approved"
) -> Callback:
    fields = [merchant, order, amount, currency, "541963", "41****8217", status, "1100"]
    signature = wayforpay_signature(key, fields)
    body = (
        f'{{"merchantAccount":"{merchant}","orderReference":"{order}","amount":{amount},'
        f'"currency":"{currency}","authCode":"541963","email":"a@b.c","cardPan":"41****8217",'
        f'"transactionStatus":"{status}","reasonCode":1100,"merchantSignature":"{signature}"}}'
    )
    # WayForPay labels its JSON as a form post.
    return Callback(
        "/v1/webhooks/payments/wayforpay",
        body.encode(),
        {"content-type": "application/x-www-form-urlencoded"},
    )


def stripe(
    secret: str,
    order: str,
    intent: str,
    amount_minor: int,
    currency: str = "usd",
    kind: str = "payment_intent.succeeded",
    created: int | None = None,
    payment_status: str = "paid",
) -> Callback:
    created = int(time.time()) if created is None else created
    if kind == "checkout.session.completed":
        obj: dict[str, Any] = {
            "object": "checkout.session",
            "client_reference_id": order,
            "payment_intent": intent,
            "payment_status": payment_status,
            "amount_total": amount_minor,
            "currency": currency,
        }
    else:
        obj = {
            "id": intent,
            "object": "payment_intent",
            "amount": amount_minor,
            "amount_received": amount_minor,
            "currency": currency,
            "metadata": {"order_reference": order},
        }
    body = json.dumps(
        {"id": f"evt_{intent}_{kind}", "type": kind, "created": created, "data": {"object": obj}}
    ).encode()
    return Callback(
        "/v1/webhooks/payments/stripe",
        body,
        {"content-type": "application/json", "stripe-signature": Stripe.header(secret, body)},
    )


def minor(amount: str, currency: str) -> int:
    return int(money.to_minor(money.parse_major(amount), currency))
