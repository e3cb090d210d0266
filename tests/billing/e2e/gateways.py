"""Signed deliveries as each gateway sends them, and a little direct setup of billing data."""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from typing import Any

import httpx
import psycopg

from billing.webhooks import Stripe, Subgate, wayforpay_signature
from tests.conftest import SECRETS


@dataclass(frozen=True)
class Request:
    path: str
    content: bytes
    headers: dict[str, str]

    def send(self, client: httpx.Client, base: str) -> httpx.Response:
        return client.post(base + self.path, content=self.content, headers=self.headers)

    async def send_async(self, client: httpx.AsyncClient, base: str) -> httpx.Response:
        return await client.post(base + self.path, content=self.content, headers=self.headers)


def subgate(
    order: str, payment_id: str, amount: str, currency: str = "USD", ts: int | None = None
) -> Request:
    payload: dict[str, Any] = {
        "orderReference": order,
        "externalPaymentId": payment_id,
        "amount": amount,
        "currency": currency,
        "timestamp": int(time.time()) if ts is None else ts,
    }
    payload["signature"] = Subgate.sign(SECRETS["SUBGATE_WEBHOOK_SECRET"], payload)
    return Request(
        "/v1/webhooks/payments/subgate",
        json.dumps(payload).encode(),
        {"content-type": "application/json"},
    )


def wayforpay(order: str, amount: str, currency: str = "USD", status: str = "Approved") -> Request:
    merchant = SECRETS["WAYFORPAY_MERCHANT_ACCOUNT"]
    fields = [merchant, order, amount, currency, "541963", "41****8217", status, "1100"]
    signature = wayforpay_signature(SECRETS["WAYFORPAY_SECRET_KEY"], fields)
    body = (
        f'{{"merchantAccount":"{merchant}","orderReference":"{order}","amount":{amount},'
        f'"currency":"{currency}","authCode":"541963","email":"a@b.c","cardPan":"41****8217",'
        f'"transactionStatus":"{status}","reasonCode":1100,"merchantSignature":"{signature}"}}'
    )
    # WayForPay labels its JSON as a form post.
    return Request(
        "/v1/webhooks/payments/wayforpay",
        body.encode(),
        {"content-type": "application/x-www-form-urlencoded"},
    )


def stripe(
    order: str,
    intent: str,
    amount_minor: int,
    currency: str = "usd",
    kind: str = "payment_intent.succeeded",
    created: int | None = None,
) -> Request:
    created = int(time.time()) if created is None else created
    if kind == "checkout.session.completed":
        obj: dict[str, Any] = {
            "object": "checkout.session",
            "client_reference_id": order,
            "payment_intent": intent,
            "payment_status": "paid",
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
    header = Stripe.header(SECRETS["STRIPE_WEBHOOK_SECRET"], body)
    return Request(
        "/v1/webhooks/payments/stripe",
        body,
        {"content-type": "application/json", "stripe-signature": header},
    )


def add_paid_channel(
    database_url: str,
    *,
    price_minor: int = 1250,
    currency: str = "USD",
    period_days: int = 30,
    grace_days: int = 3,
    chat_id: int = -1001000000001,
) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "INSERT INTO channels (telegram_chat_id, title, is_paid) VALUES (%s, 'Paid', true)"
            " RETURNING id",
            (chat_id,),
        ).fetchone()
        assert row is not None
        conn.execute(
            "INSERT INTO plans (channel_id, price_minor, currency, period_days, grace_days,"
            " is_default) VALUES (%s, %s, %s, %s, %s, true)",
            (row[0], price_minor, currency, period_days, grace_days),
        )
        return int(row[0])


def create_invoice(
    client: httpx.Client, base: str, telegram_user_id: int, channel_id: int, gateway: str
) -> dict[str, Any]:
    response = client.post(
        f"{base}/internal/invoices",
        json={"telegram_user_id": telegram_user_id, "channel_id": channel_id, "gateway": gateway},
        headers={"Authorization": f"Bearer {SECRETS['SERVICE_TOKEN']}"},
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def add_person(database_url: str, telegram_user_id: int) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "INSERT INTO people (telegram_user_id) VALUES (%s) ON CONFLICT (telegram_user_id)"
            " DO UPDATE SET updated_at = now() RETURNING id",
            (telegram_user_id,),
        ).fetchone()
        assert row is not None
        return int(row[0])


def set_membership(
    database_url: str,
    telegram_user_id: int,
    channel_id: int,
    expires_at: dt.datetime,
    status: str = "active",
    grace_days: int = 3,
) -> int:
    """A membership as it stands before the test (past due, say); returns the person id."""
    person = add_person(database_url, telegram_user_id)
    with psycopg.connect(database_url) as conn:
        check = (
            expires_at
            if status == "active"
            else (expires_at + dt.timedelta(days=grace_days) if status == "grace" else None)
        )
        conn.execute(
            "INSERT INTO memberships (person_id, channel_id, status, expires_at, grace_days,"
            " next_check_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, now())",
            (person, channel_id, status, expires_at, grace_days, check),
        )
        return person


def sweep_request(token: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token or SECRETS['SWEEP_TOKEN']}"}
