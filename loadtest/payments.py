"""A subgate payment as the gateway posts it to billing: signed, for one open invoice."""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg

from simulators.checkout.callbacks import subgate_signature


def subgate_delivery(secret: str, order: str, payment_id: str) -> bytes:
    """The body of `POST /v1/webhooks/payments/subgate` paying `order` 12.50 USD."""
    payload: dict[str, Any] = {
        "orderReference": order,
        "externalPaymentId": payment_id,
        "amount": "12.50",
        "currency": "USD",
        "timestamp": int(time.time()),
    }
    payload["signature"] = subgate_signature(secret, payload)
    return json.dumps(payload).encode()


def set_up_payers(database_url: str, count: int, first: int, prefix: str) -> list[tuple[str, int]]:
    """The first sponsor channel made paid (12.50 USD for 30 days), managed by the first bot;
    `count` new people (Telegram ids after `first`), each with an open subgate invoice for it
    whose order reference starts with `prefix`. Their order references and Telegram ids."""
    with psycopg.connect(database_url) as conn:
        channel = conn.execute(
            "UPDATE channels SET is_paid = true,"
            " manager_bot_id = (SELECT min(id) FROM bots)"
            " WHERE telegram_chat_id = -1007100000001 RETURNING id"
        ).fetchone()
        assert channel is not None  # noqa: S101 - loadtest.updates.set_up made it
        plan = (
            conn.execute(
                "SELECT id FROM plans WHERE channel_id = %s AND is_default", (channel[0],)
            ).fetchone()
            or conn.execute(
                "INSERT INTO plans (channel_id, price_minor, currency, period_days, grace_days,"
                " is_default) VALUES (%s, 1250, 'USD', 30, 3, true) RETURNING id",
                (channel[0],),
            ).fetchone()
        )
        assert plan is not None  # noqa: S101 - found or inserted
        conn.execute(
            "INSERT INTO people (telegram_user_id) SELECT %s + g FROM generate_series(1, %s) g",
            (first, count),
        )
        rows = conn.execute(
            "INSERT INTO invoices (order_reference, person_id, channel_id, plan_id, amount_minor,"
            " currency, period_days, grace_days, gateway, expires_at)"
            " SELECT %s || '-' || p.id, p.id, %s, %s, 1250, 'USD', 30, 3, 'subgate',"
            " now() + interval '1 day' FROM people p"
            " WHERE p.telegram_user_id BETWEEN %s AND %s"
            " RETURNING order_reference,"
            " (SELECT telegram_user_id FROM people WHERE id = person_id)",
            (prefix, channel[0], plan[0], first + 1, first + count),
        ).fetchall()
    return sorted((str(r[0]), int(r[1])) for r in rows)
