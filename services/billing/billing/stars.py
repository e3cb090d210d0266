"""Telegram Stars in billing: the pre-checkout check, and the loop that applies the payments
botedge records.

There is no webhook: Telegram tells the bot. botedge asks `check` (through
`POST /internal/stars/pre-checkout`) before it answers a `pre_checkout_query`, and writes each
`successful_payment` to `telegram_payments` in the update's transaction. `StarsLedger` claims
those rows (`FOR UPDATE SKIP LOCKED`, any number of billing processes) and hands each to
`store.record_delivery`, the path every gateway's payment takes: the same lock, the same key
(`telegram_stars`, the charge id), the same events. A crash after the delivery and before the
row is finished applies nothing twice: the row comes back and its key is already taken.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from decimal import Decimal
from typing import Any

from billing import errors, store
from billing.gateways import STARS
from billing.model import Delivery, Kind
from billing.sqlq import Q
from shared.backoff import backoff_delay
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool
from shared.lifecycle import wait_any

log = logging.getLogger("billing.stars")

# Why a pre-checkout is refused; botedge words each for the person.
UNKNOWN = "unknown"
NOT_YOURS = "not-yours"
PAID = "paid"
EXPIRED = "expired"
AMOUNT = "amount"
CURRENCY = "currency"


def refusal(
    invoice: dict[str, Any] | None,
    telegram_user_id: int,
    currency: str,
    total_amount: int,
    now: dt.datetime,
) -> str | None:
    """Why Telegram must not take the Stars for this invoice, or None to let it: only an
    open, unexpired Stars invoice of the person who pays, at its amount and currency."""
    if invoice is None or invoice["gateway"] != STARS.name:
        return UNKNOWN
    if int(invoice["telegram_user_id"]) != telegram_user_id:
        return NOT_YOURS
    if invoice["status"] == "paid":
        return PAID
    if invoice["status"] != "open" or invoice["expires_at"] <= now:
        return EXPIRED
    if invoice["currency"] != currency:
        return CURRENCY
    if Decimal(invoice["amount_minor"]) != total_amount:
        return AMOUNT
    return None


def delivery_of(row: dict[str, Any]) -> Delivery:
    """A recorded `successful_payment` as the delivery every gateway's payment is (a renewal
    pays the invoice its subscription began with, again); a `refunded_payment` as a refund of
    the payment under its charge id."""
    charge = str(row["telegram_payment_charge_id"])
    recorded: dict[str, Any] = {
        "telegram_payment_id": row["id"],
        "bot_id": row["bot_id"],
        "invoice_payload": row["invoice_payload"],
        "currency": row["currency"],
        "total_amount": row["total_amount"],
        "telegram_payment_charge_id": charge,
    }
    common: dict[str, Any] = {
        "gateway": STARS.name,
        "order_reference": str(row["invoice_payload"]),
        "external_payment_id": charge,
        "amount_minor": Decimal(int(row["total_amount"])),
        "currency": str(row["currency"]),
    }
    if row.get("kind") == "refund":
        # Telegram refunds a charge once: its id is the refund's key too.
        return Delivery(
            kind=Kind.REFUND,
            event_type="refunded_payment",
            payload=recorded,
            external_refund_id=f"{charge}:refund",
            **common,
        )
    renewal = bool(row["is_recurring"]) and not bool(row["is_first_recurring"])
    expiration = row["subscription_expiration_date"]
    return Delivery(
        kind=Kind.PAYMENT,
        event_type="renewal" if renewal else "successful_payment",
        payload={
            **recorded,
            "provider_payment_charge_id": row["provider_payment_charge_id"],
            "is_recurring": row["is_recurring"],
            "is_first_recurring": row["is_first_recurring"],
            "subscription_expiration_date": None if expiration is None else expiration.isoformat(),
        },
        paid_at=row["paid_at"],
        renewal=renewal,
        **common,
    )


class StarsLedger:
    def __init__(
        self,
        pool: Pool,
        *,
        clock: Clock = SYSTEM_CLOCK,
        interval: float = 1.0,
        lease: float = 60.0,
        batch: int = 32,
    ) -> None:
        self.pool = pool
        self.clock = clock
        self.interval = interval
        self.lease = lease
        self.batch = batch

    async def run(self, stopping: asyncio.Event, wakeup: asyncio.Event) -> None:
        """Rounds while there is work; then waits for botedge's NOTIFY or `interval`."""
        while not stopping.is_set():
            wakeup.clear()
            try:
                done = await self.round()
            except errors.BillingError as error:
                log.warning("Stars ledger round failed: %s", error)
                done = 0
            if done >= self.batch:
                continue
            await wait_any(self.interval, stopping, wakeup)

    async def round(self) -> int:
        """Claims due rows and applies each; how many were claimed."""
        now = self.clock.now()
        async with store.connection(self.pool) as conn:
            cur = await conn.execute(
                Q["claim_telegram_payments"], {"now": now, "limit": self.batch, "lease": self.lease}
            )
            rows = [dict(row) for row in await cur.fetchall()]
        await asyncio.gather(*(self._apply(row) for row in rows))
        return len(rows)

    async def _apply(self, row: dict[str, Any]) -> None:
        fence = {"id": row["id"], "token": row["claim_token"]}
        try:
            async with store.connection(self.pool) as conn:
                outcome = await store.record_delivery(conn, delivery_of(row), self.clock.now())
                await conn.execute(
                    Q["finish_telegram_payment"],
                    {**fence, "outcome": outcome.recorded.value, "now": self.clock.now()},
                )
        except errors.BillingError as error:
            delay = backoff_delay(int(row.get("attempts") or 1), base=1.0, cap=300.0)
            log.warning("Stars payment %d: %s; again in %.0f s", row["id"], error, delay)
            try:
                async with store.connection(self.pool) as conn:
                    await conn.execute(
                        Q["retry_telegram_payment"],
                        {
                            **fence,
                            "available_at": self.clock.now() + dt.timedelta(seconds=delay),
                            "error": str(error)[:1000],
                        },
                    )
            except errors.BillingError:
                # The claim runs out and the row comes back: nothing is lost.
                pass
