"""Each gateway's callback for an invoice, signed with its scheme as the gateway sends it:
what the simulated checkout posts to billing, and what the tests post.

The signatures are written here from each gateway's documentation, not borrowed from billing's
verifier, so that a mistake in the verifier cannot hide in the thing that tests it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx

# Currencies whose amounts have no minor unit (ISO 4217 exponent 0), or three decimals.
NO_MINOR_UNIT = frozenset({"JPY", "KRW", "VND", "XOF", "XAF", "CLP", "ISK", "UGX", "PYG"})
THREE_DECIMALS = frozenset({"BHD", "JOD", "KWD", "OMR", "TND", "IQD", "LYD"})


def subgate_signature(secret: str, payload: dict[str, Any]) -> str:
    """Subgate: hex HMAC-SHA256 of orderReference;externalPaymentId;amount;currency;timestamp."""
    fields = ("orderReference", "externalPaymentId", "amount", "currency", "timestamp")
    message = ";".join(str(payload[name]) for name in fields)
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


def wayforpay_signature(key: str, fields: list[str]) -> str:
    """WayForPay's merchantSignature: hex HMAC-MD5 of the fields joined with `;` (its PHP SDK:
    `hash_hmac('md5', implode(';', $fields), $secret)`)."""
    return hmac.new(key.encode(), ";".join(fields).encode(), hashlib.md5).hexdigest()


def stripe_header(secret: str, body: bytes, timestamp: int) -> str:
    """Stripe-Signature: `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`."""
    signed = f"{timestamp}.".encode() + body
    return f"t={timestamp},v1={hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()}"


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
    payload["signature"] = subgate_signature(secret, payload)
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
    if kind.startswith("checkout.session."):
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
        {
            "content-type": "application/json",
            "stripe-signature": stripe_header(secret, body, int(time.time())),
        },
    )


def stripe_refund(
    secret: str,
    intent: str,
    amount_minor: int,
    currency: str = "usd",
    *,
    dispute: bool = False,
    created: int | None = None,
) -> Callback:
    """`charge.refunded` (the charge of `intent`, refunded by `amount_minor`) or
    `charge.dispute.created` (a dispute of it for that amount)."""
    created = int(time.time()) if created is None else created
    charge = f"ch_{intent.removeprefix('pi_')}"
    if dispute:
        kind = "charge.dispute.created"
        obj: dict[str, Any] = {
            "id": f"dp_{intent.removeprefix('pi_')}",
            "object": "dispute",
            "charge": charge,
            "payment_intent": intent,
            "amount": amount_minor,
            "currency": currency,
            "reason": "fraudulent",
        }
    else:
        kind = "charge.refunded"
        obj = {
            "id": charge,
            "object": "charge",
            "payment_intent": intent,
            "amount": amount_minor,
            "amount_refunded": amount_minor,
            "currency": currency,
            "refunded": True,
        }
    body = json.dumps(
        {"id": f"evt_{obj['id']}_{kind}", "type": kind, "created": created, "data": {"object": obj}}
    ).encode()
    return Callback(
        "/v1/webhooks/payments/stripe",
        body,
        {
            "content-type": "application/json",
            "stripe-signature": stripe_header(secret, body, int(time.time())),
        },
    )


def minor(amount: str, currency: str) -> int:
    """Major-unit text in the currency's minor units, as Stripe states amounts."""
    code = currency.upper()
    places = 0 if code in NO_MINOR_UNIT else 3 if code in THREE_DECIMALS else 2
    return int(Decimal(amount).scaleb(places))
