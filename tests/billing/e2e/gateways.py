"""Signed deliveries as each gateway sends them, and a little direct setup of billing data."""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import psycopg

from simulators.checkout import callbacks
from tests.conftest import SECRETS

Request = callbacks.Callback


def subgate(
    order: str, payment_id: str, amount: str, currency: str = "USD", ts: int | None = None
) -> Request:
    return callbacks.subgate(
        SECRETS["SUBGATE_WEBHOOK_SECRET"], order, payment_id, amount, currency, ts
    )


def wayforpay(order: str, amount: str, currency: str = "USD", status: str = "Approved") -> Request:
    return callbacks.wayforpay(
        SECRETS["WAYFORPAY_MERCHANT_ACCOUNT"],
        SECRETS["WAYFORPAY_SECRET_KEY"],
        order,
        amount,
        currency,
        status,
    )


def stripe(
    order: str,
    intent: str,
    amount_minor: int,
    currency: str = "usd",
    kind: str = "payment_intent.succeeded",
    created: int | None = None,
) -> Request:
    return callbacks.stripe(
        SECRETS["STRIPE_WEBHOOK_SECRET"], order, intent, amount_minor, currency, kind, created
    )


def stripe_refund(intent: str, amount_minor: int, *, dispute: bool = False) -> Request:
    return callbacks.stripe_refund(
        SECRETS["STRIPE_WEBHOOK_SECRET"], intent, amount_minor, dispute=dispute
    )


def new_id(conn: psycopg.Connection[Any], insert: str, *params: object) -> int:
    """The id an INSERT ... RETURNING id gave its row."""
    row = conn.execute(insert, params).fetchone()
    assert row is not None
    return int(row[0])


def insert_row(database_url: str, table: str, values: dict[str, Any]) -> int:
    """One row of `values` (column names of ours, never input) into `table`; its id."""
    columns = ", ".join(values)
    marks = ", ".join(["%s"] * len(values))
    with psycopg.connect(database_url) as conn:
        return new_id(
            conn,
            f"INSERT INTO {table} ({columns}) VALUES ({marks}) RETURNING id",
            *values.values(),
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
        channel = new_id(
            conn,
            "INSERT INTO channels (telegram_chat_id, title, is_paid) VALUES (%s, 'Paid', true)"
            " RETURNING id",
            chat_id,
        )
        conn.execute(
            "INSERT INTO plans (channel_id, price_minor, currency, period_days, grace_days,"
            " is_default) VALUES (%s, %s, %s, %s, %s, true)",
            (channel, price_minor, currency, period_days, grace_days),
        )
        return channel


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
        return new_id(
            conn,
            "INSERT INTO people (telegram_user_id) VALUES (%s) ON CONFLICT (telegram_user_id)"
            " DO UPDATE SET updated_at = now() RETURNING id",
            telegram_user_id,
        )


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
