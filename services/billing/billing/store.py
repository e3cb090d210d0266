"""Billing's database work: async functions taking a connection, one transaction each."""

from __future__ import annotations

import datetime as dt
import json
import logging
import secrets
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from psycopg import AsyncCursor
from psycopg.rows import DictRow

from billing import sqlq
from billing.transitions import Status, extend, next_check_at, next_status
from billing.webhooks import Delivery, Kind
from shared.db import Connection

log = logging.getLogger("billing.store")
Q = sqlq.Q


@dataclass(frozen=True)
class Membership:
    status: Status
    expires_at: dt.datetime
    grace_days: int

    def as_json(self) -> dict[str, str]:
        return {"status": self.status.value, "expires_at": self.expires_at.isoformat()}


@dataclass(frozen=True)
class Outcome:
    """What came of one delivery; `outcome` is what gateway_events records."""

    outcome: str
    duplicate: bool
    applied: bool
    reason: str | None
    membership: Membership | None
    payment_id: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "duplicate": self.duplicate,
            "applied": self.applied,
            "reason": self.reason,
            "membership": self.membership.as_json() if self.membership else None,
        }


async def _one(cur: AsyncCursor[DictRow]) -> DictRow:
    """The row a statement must return (RETURNING, or a row read under the lock)."""
    row = await cur.fetchone()
    if row is None:
        raise RuntimeError("statement returned no row")
    return row


async def _membership(conn: Connection, person_id: int, channel_id: int) -> Membership | None:
    cur = await conn.execute(Q["membership"], {"person_id": person_id, "channel_id": channel_id})
    row = await cur.fetchone()
    if row is None:
        return None
    return Membership(Status(row["status"]), row["expires_at"], row["grace_days"])


async def _record(
    conn: Connection,
    delivery: Delivery,
    outcome: Outcome,
    now: dt.datetime,
    detail: str | None = None,
) -> Outcome:
    await conn.execute(
        Q["insert_gateway_event"],
        {
            "gateway": delivery.gateway,
            "event_type": delivery.event_type,
            "order_reference": delivery.order_reference,
            "external_payment_id": delivery.external_payment_id,
            "outcome": outcome.outcome,
            "payment_id": outcome.payment_id,
            "detail": detail or outcome.reason,
            "payload": json.dumps(delivery.payload),
            "now": now,
        },
    )
    return outcome


async def record_delivery(conn: Connection, delivery: Delivery, now: dt.datetime) -> Outcome:
    """Apply one authentic delivery exactly once; every path records a gateway event."""
    async with conn.transaction():
        if delivery.kind is not Kind.PAYMENT:
            reason = (
                "not a successful payment"
                if delivery.kind is Kind.NOT_SUCCESS
                else (f"event type {delivery.event_type} is not acted on")
            )
            outcome = Outcome(delivery.kind.value, False, False, reason, None)
            return await _record(conn, delivery, outcome, now)
        cur = await conn.execute(
            Q["lock_membership_of_invoice"], {"order_reference": delivery.order_reference}
        )
        if await cur.fetchone() is None:
            outcome = Outcome("orphan", False, False, "unknown order reference", None)
            log.warning(
                "%s payment for unknown order reference %r",
                delivery.gateway,
                delivery.order_reference,
            )
            return await _record(conn, delivery, outcome, now)
        return await _apply_payment(conn, delivery, now)


async def _apply_payment(conn: Connection, delivery: Delivery, now: dt.datetime) -> Outcome:
    if delivery.paid_at is None or delivery.amount_minor is None:
        raise ValueError("a payment delivery carries paid_at and amount_minor")
    # Read under the lock: another delivery may have paid it while we waited.
    cur = await conn.execute(
        Q["invoice_by_reference"], {"order_reference": delivery.order_reference}
    )
    invoice = await _one(cur)
    keys = {"person_id": invoice["person_id"], "channel_id": invoice["channel_id"]}
    matches = delivery.currency == invoice["currency"] and delivery.amount_minor == Decimal(
        invoice["amount_minor"]
    )
    flag = None
    if not matches:
        flag = "amount_mismatch"
    elif invoice["status"] == "paid":
        flag = "invoice_already_paid"
    cur = await conn.execute(
        Q["insert_payment"],
        {
            "gateway": delivery.gateway,
            "external_payment_id": delivery.external_payment_id,
            "invoice_id": invoice["id"],
            **keys,
            "amount_minor": delivery.amount_minor,
            "currency": delivery.currency,
            "paid_at": delivery.paid_at,
            "applied": matches,
            "flag": flag,
        },
    )
    inserted = await cur.fetchone()
    if inserted is None:
        return await _redelivered(conn, delivery, keys, now)
    payment_id = int(inserted["id"])
    if not matches:
        outcome = Outcome(
            "amount_mismatch",
            False,
            False,
            f"paid {delivery.amount_minor} {delivery.currency} (minor units), invoice is "
            f"{invoice['amount_minor']} {invoice['currency']}",
            await _membership(conn, **keys),
            payment_id,
        )
        log.warning("payment %d kept but not applied: %s", payment_id, outcome.reason)
        return await _record(conn, delivery, outcome, now)

    before = await _membership(conn, **keys)
    expires_at = extend(
        before.expires_at if before else None, delivery.paid_at, invoice["period_days"]
    )
    after = Membership(Status.ACTIVE, expires_at, invoice["grace_days"])
    await conn.execute(
        Q["upsert_membership"],
        {
            **keys,
            "status": after.status.value,
            "expires_at": after.expires_at,
            "grace_days": after.grace_days,
            "next_check_at": next_check_at(after.status, after.expires_at, after.grace_days),
            "now": now,
        },
    )
    event_id = await _membership_event(
        conn,
        keys,
        before,
        after,
        now,
        cause="payment",
        payment_id=payment_id,
        paid_at=delivery.paid_at,
        period_days=invoice["period_days"],
    )
    await _access_event(conn, "grant", keys, event_id, after.expires_at, now)
    await conn.execute(
        Q["mark_invoice_paid"], {"invoice_id": invoice["id"], "paid_at": delivery.paid_at}
    )
    if flag == "invoice_already_paid":
        log.warning(
            "invoice %s paid a second time (payment %d); applied",
            delivery.order_reference,
            payment_id,
        )
    outcome = Outcome("applied", False, True, flag, after, payment_id)
    return await _record(conn, delivery, outcome, now)


async def _redelivered(
    conn: Connection, delivery: Delivery, keys: dict[str, int], now: dt.datetime
) -> Outcome:
    cur = await conn.execute(
        Q["payment_by_key"],
        {"gateway": delivery.gateway, "external_payment_id": delivery.external_payment_id},
    )
    existing = await _one(cur)
    same = (
        existing["order_reference"] == delivery.order_reference
        and Decimal(existing["amount_minor"]) == delivery.amount_minor
        and existing["currency"] == delivery.currency
    )
    membership = await _membership(conn, **keys)
    if same:
        outcome = Outcome(
            "duplicate", True, False, "already received", membership, int(existing["id"])
        )
        return await _record(conn, delivery, outcome, now)
    log.error(
        "%s payment %s redelivered with different business fields (order %r -> %r)",
        delivery.gateway,
        delivery.external_payment_id,
        existing["order_reference"],
        delivery.order_reference,
    )
    outcome = Outcome(
        "conflict",
        True,
        False,
        "payment id already used with different order, amount or currency",
        membership,
        int(existing["id"]),
    )
    return await _record(conn, delivery, outcome, now)


async def _membership_event(
    conn: Connection,
    keys: dict[str, int],
    before: Membership | None,
    after: Membership,
    now: dt.datetime,
    *,
    cause: str,
    payment_id: int | None = None,
    paid_at: dt.datetime | None = None,
    period_days: int | None = None,
) -> int:
    cur = await conn.execute(
        Q["insert_membership_event"],
        {
            **keys,
            "from_status": before.status.value if before else None,
            "to_status": after.status.value,
            "old_expires_at": before.expires_at if before else None,
            "new_expires_at": after.expires_at,
            "cause": cause,
            "payment_id": payment_id,
            "paid_at": paid_at,
            "period_days": period_days,
            "now": now,
        },
    )
    return int((await _one(cur))["id"])


async def _access_event(
    conn: Connection,
    kind: str,
    keys: dict[str, int],
    membership_event_id: int,
    expires_at: dt.datetime,
    now: dt.datetime,
) -> None:
    await conn.execute(
        Q["insert_access_event"],
        {
            "kind": kind,
            **keys,
            "membership_event_id": membership_event_id,
            "expires_at": expires_at,
            "now": now,
        },
    )


# -- the sweep ------------------------------------------------------------------------------


async def due_memberships(conn: Connection, now: dt.datetime, limit: int) -> list[dict[str, int]]:
    cur = await conn.execute(Q["due_memberships"], {"now": now, "limit": limit})
    return [dict(row) for row in await cur.fetchall()]


async def sweep_membership(
    conn: Connection, keys: dict[str, int], now: dt.datetime
) -> Status | None:
    """Decide one due membership under its lock; the new status, or None when unchanged."""
    async with conn.transaction():
        await conn.execute(Q["lock_membership"], keys)
        before = await _membership(conn, **keys)
        if before is None:
            return None
        status = next_status(before.status, before.expires_at, now, before.grace_days)
        if status is before.status:
            return None
        cur = await conn.execute(
            Q["move_membership"],
            {
                **keys,
                "from_status": before.status.value,
                "to_status": status.value,
                "expires_at": before.expires_at,
                "next_check_at": next_check_at(status, before.expires_at, before.grace_days),
                "now": now,
            },
        )
        if cur.rowcount != 1:
            return None
        after = Membership(status, before.expires_at, before.grace_days)
        event_id = await _membership_event(conn, keys, before, after, now, cause="sweep")
        kind = "reminder" if status is Status.GRACE else "revoke"
        await _access_event(conn, kind, keys, event_id, before.expires_at, now)
        return status


async def expire_open_invoices(conn: Connection, now: dt.datetime, limit: int) -> int:
    async with conn.transaction():
        cur = await conn.execute(Q["expire_open_invoices"], {"now": now, "limit": limit})
        return cur.rowcount


# -- invoices -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Invoice:
    order_reference: str
    amount_minor: int
    currency: str


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
        person = await _one(cur)
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
