"""Invoices: what paying for a channel costs (its plans on sale), and an order at one of them,
which the gateway's callback later pays (`store.record_delivery`)."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from psycopg.rows import DictRow

from billing import coupons, errors, store
from billing.gateways import STARS, STARS_CURRENCY
from billing.store import Q
from shared.db import Connection


@dataclass(frozen=True)
class Invoice:
    order_reference: str
    amount_minor: int
    currency: str
    plan_id: int
    list_price_minor: int
    discount_minor: int


@dataclass(frozen=True)
class Offer:
    title: str
    # On sale, in the bot's order; each with the gateways it is sold through of those on.
    plans: list[dict[str, Any]]


def plan_gateways(plan: dict[str, Any], enabled: Collection[str]) -> list[str]:
    """The gateways a plan is sold through, of those on: all of them unless it names some.
    A plan in Stars is sold through Telegram Stars alone, and Stars sell nothing else."""
    named = plan["gateways"]
    stars = plan["currency"] == STARS_CURRENCY
    return sorted(
        g for g in enabled if (named is None or g in named) and (g == STARS.name) == stars
    )


async def channel_offer(conn: Connection, channel_id: int) -> Offer | None:
    """The channel's title and plans on sale; None when it is not a paid channel or sells no
    plan."""
    cur = await conn.execute(Q["channel_plans"], {"channel_id": channel_id})
    rows = await cur.fetchall()
    if not rows:
        return None
    return Offer(str(rows[0]["title"]), [dict(row) for row in rows])


async def _plan(
    conn: Connection,
    channel_id: int,
    gateway: str,
    plan_id: int | None,
    enabled: Collection[str],
) -> DictRow:
    """The plan an invoice is made at, refused unless it is on sale through `gateway`."""
    # Without a plan asked for, Stars are priced from the channel's plan in Stars.
    currency = STARS_CURRENCY if gateway == STARS.name and plan_id is None else None
    cur = await conn.execute(
        Q["invoice_plan"],
        {"channel_id": channel_id, "plan_id": plan_id, "currency": currency},
    )
    plan = await cur.fetchone()
    if plan is None and plan_id is not None:
        raise errors.UnknownPlan("no plan by that id on sale in that paid channel")
    if plan is None and currency is not None:
        raise errors.NotPayableThere("the channel sells no plan in Stars (XTR)")
    if plan is None:
        raise errors.UnknownChannel("no paid channel with a default plan by that id")
    if plan["gateways"] is not None and gateway not in plan["gateways"]:
        raise errors.GatewayNotOffered(f"the plan is not sold through {gateway}")
    if gateway not in plan_gateways(plan, enabled):
        raise errors.NotPayableThere(
            f"a plan in {plan['currency']} is not paid through {gateway}: Telegram Stars"
            f" take plans in {STARS_CURRENCY} only, and only they do"
        )
    return plan


async def create_invoice(
    conn: Connection,
    telegram_user_id: int,
    channel_id: int,
    gateway: str,
    plan_id: int | None,
    coupon_code: str | None,
    now: dt.datetime,
    enabled: Collection[str],
    request_key: str | None = None,
) -> Invoice:
    """An invoice at the plan asked for, or at the channel's default plan (for Stars, its plan
    in Stars), less the coupon's discount. A coupon is redeemed under its row's lock, so its
    total is a count taken there; a refused one writes nothing. Asked again under the same
    `request_key`, the invoice made the first time."""
    async with conn.transaction():
        if request_key is not None:
            made = await _asked_before(conn, request_key, telegram_user_id, channel_id, gateway)
            if made is not None:
                return made
        plan = await _plan(conn, channel_id, gateway, plan_id, enabled)
        cur = await conn.execute(Q["upsert_person"], {"telegram_user_id": telegram_user_id})
        person = await store.one_row(cur)
        price = int(plan["price_minor"])
        coupon = None
        if coupon_code is not None:
            coupon = await _coupon(conn, coupon_code, plan, person["id"], channel_id, now)
        off = 0 if coupon is None else coupons.discount(coupon, price)
        # Unguessable, so an order reference cannot be used to probe other people's invoices.
        reference = "gh_" + secrets.token_urlsafe(18)
        cur = await conn.execute(
            Q["insert_invoice"],
            {
                "order_reference": reference,
                "person_id": person["id"],
                "channel_id": channel_id,
                "plan_id": plan["id"],
                "amount_minor": price - off,
                "list_price_minor": None if coupon is None else price,
                "discount_minor": off,
                "coupon_id": None if coupon is None else coupon.id,
                "currency": plan["currency"],
                "period_days": plan["period_days"],
                "grace_days": plan["grace_days"],
                "gateway": gateway,
                "bundle_channel_ids": plan["bundle_channel_ids"],
                "now": now,
                "request_key": request_key,
            },
        )
        invoice = await store.one_row(cur)
        if coupon is not None:
            await conn.execute(
                Q["insert_redemption"],
                {
                    "coupon_id": coupon.id,
                    "person_id": person["id"],
                    "invoice_id": invoice["id"],
                    "per_person": coupon.per_person,
                    "now": now,
                },
            )
        return Invoice(reference, price - off, str(plan["currency"]), int(plan["id"]), price, off)


async def _asked_before(
    conn: Connection, request_key: str, telegram_user_id: int, channel_id: int, gateway: str
) -> Invoice | None:
    await conn.execute(Q["lock_request_key"], {"request_key": request_key})
    cur = await conn.execute(Q["invoice_by_key"], {"request_key": request_key})
    row = await cur.fetchone()
    if row is None:
        return None
    if (row["telegram_user_id"], row["channel_id"], row["gateway"]) != (
        telegram_user_id,
        channel_id,
        gateway,
    ):
        raise errors.KeyReused("that request_key was used for another person, channel or gateway")
    return Invoice(
        str(row["order_reference"]),
        int(row["amount_minor"]),
        str(row["currency"]),
        int(row["plan_id"]),
        int(row["list_price_minor"]),
        int(row["discount_minor"]),
    )


async def _coupon(
    conn: Connection,
    code: str,
    plan: dict[str, Any],
    person_id: int,
    channel_id: int,
    now: dt.datetime,
) -> coupons.Coupon:
    """The coupon by its code, locked, when it applies; else `CouponRefused` naming why."""
    cur = await conn.execute(Q["coupon_for_update"], {"code": code.strip()})
    row = await cur.fetchone()
    if row is None:
        raise errors.CouponRefused("no coupon by that code", field="coupon", code="not-found")
    coupon = coupons.Coupon.of(dict(row))
    cur = await conn.execute(
        Q["coupon_standing"],
        {"coupon_id": coupon.id, "person_id": person_id, "channel_id": channel_id},
    )
    found = await store.one_row(cur)
    standing = coupons.Standing(
        int(found["uses"]), int(found["person_uses"]), found["membership_status"]
    )
    refused = coupons.refusal(coupon, int(plan["id"]), str(plan["currency"]), standing, now)
    if refused is not None:
        field_code, detail = refused
        raise errors.CouponRefused(detail, field="coupon", code=field_code)
    return coupon
