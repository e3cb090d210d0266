"""Invoices: what paying for a channel costs, and an order for it at its default plan, which
the gateway's callback later pays (`store.record_delivery`)."""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any

from billing import store
from billing.store import Q
from shared.db import Connection


@dataclass(frozen=True)
class Invoice:
    order_reference: str
    amount_minor: int
    currency: str


async def channel_offer(conn: Connection, channel_id: int) -> dict[str, Any] | None:
    """What paying for the channel costs: its title and default plan; None when not paid."""
    cur = await conn.execute(Q["channel_offer"], {"channel_id": channel_id})
    row = await cur.fetchone()
    return dict(row) if row else None


async def create_invoice(
    conn: Connection, telegram_user_id: int, channel_id: int, gateway: str, now: dt.datetime
) -> Invoice | None:
    """None when the channel is not a paid channel with a default plan."""
    async with conn.transaction():
        cur = await conn.execute(Q["default_plan"], {"channel_id": channel_id})
        plan = await cur.fetchone()
        if plan is None:
            return None
        cur = await conn.execute(Q["upsert_person"], {"telegram_user_id": telegram_user_id})
        person = await store.one_row(cur)
        # Unguessable, so an order reference cannot be used to probe other people's invoices.
        reference = "gh_" + secrets.token_urlsafe(18)
        await conn.execute(
            Q["insert_invoice"],
            {
                "order_reference": reference,
                "person_id": person["id"],
                "channel_id": channel_id,
                "plan_id": plan["id"],
                "amount_minor": plan["price_minor"],
                "currency": plan["currency"],
                "period_days": plan["period_days"],
                "grace_days": plan["grace_days"],
                "gateway": gateway,
                "now": now,
            },
        )
        return Invoice(reference, int(plan["price_minor"]), str(plan["currency"]))
