"""The TRON verifier: billing's loop that checks submitted hashes on TronGrid and credits ad
orders, exactly once.

Each round claims due `tron_claims` with `FOR UPDATE SKIP LOCKED` (any number of billing
processes), asks TronGrid, and hands the answers to the pure judge. TronGrid not answering
means look again later, never refuse. Crediting runs under the order's advisory lock:
re-read the order, record the credit (one per claim), add it, mark the order paid once the sum
reaches the price (more than the price is kept, for a refund by hand), write the events, and
finish the claim compare-and-set on its token, all in one transaction.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from decimal import Decimal
from typing import Any

from psycopg.types.json import Jsonb

from billing import errors, store
from billing.sqlq import Q
from billing.tron_judge import USDT_MAINNET, Claim, Credit, Order, Reject, Wait, judge
from billing.trongrid import TronGrid, TronGridUnavailable
from shared.breaker import State
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Connection, Pool

log = logging.getLogger("billing.tron")

PART_PAYMENT_WINDOW = dt.timedelta(hours=48)
OPEN = ("approved", "part_paid")


class LostClaim(Exception):
    """Another verifier took the claim over: roll back."""


class TronVerifier:
    def __init__(
        self,
        pool: Pool,
        trongrid: TronGrid,
        *,
        clock: Clock = SYSTEM_CLOCK,
        usdt_contract: str = USDT_MAINNET,
        interval: float = 5.0,
        lease: float = 60.0,
        batch: int = 16,
    ) -> None:
        self.pool = pool
        self.trongrid = trongrid
        self.clock = clock
        self.usdt_contract = usdt_contract
        self.interval = interval
        self.lease = lease
        self.batch = batch

    async def run(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            try:
                await self.round()
            except errors.BillingError as error:
                log.warning("TRON verifier round failed: %s", error)
            try:
                await asyncio.wait_for(stopping.wait(), self.interval)
            except TimeoutError:
                pass

    async def round(self) -> int:
        """One pass over the due claims; how many were looked at. While TronGrid's breaker is
        open none is taken (each keeps its next check); half-open, one, whose lookup is the
        probe."""
        breaker = self.trongrid.breaker
        if breaker.wait(take_probe=False):
            return 0
        limit = self.batch if breaker.state is State.CLOSED else 1
        now = self.clock.now()
        async with store.connection(self.pool) as conn:
            cur = await conn.execute(
                Q["claim_tron_claims"], {"now": now, "limit": limit, "lease": self.lease}
            )
            claims = [dict(row) for row in await cur.fetchall()]
        await asyncio.gather(*(self._check(claim) for claim in claims))
        return len(claims)

    async def _check(self, claim: dict[str, Any]) -> None:
        try:
            await self._judge(claim)
        except LostClaim:
            log.warning("claim %d: taken over by another verifier; rolled back", claim["id"])
        except errors.BillingError as error:
            # The claim's lease runs out and it comes back: nothing is lost.
            log.warning("claim %d: %s", claim["id"], error)

    async def _judge(self, claim: dict[str, Any]) -> None:
        tx_hash = str(claim["tx_hash"])
        try:
            found = await self.trongrid.lookup(tx_hash)
        except TronGridUnavailable as error:
            log.info("claim %d: TronGrid unavailable (%s); later", claim["id"], error)
            await self._later(claim, claim["not_found_seconds"], waiting=True)
            return
        now = self.clock.now()
        not_found = float(claim["not_found_seconds"])
        if not found.found:
            since = claim["last_checked_at"] or claim["submitted_at"]
            not_found += max(0.0, (now - since).total_seconds())
        async with store.connection(self.pool) as conn:
            cur = await conn.execute(Q["tron_order"], {"id": claim["order_id"]})
            row = await cur.fetchone()
        if row is None or row["approved_at"] is None or row["pay_to"] is None:
            await self._end(claim, "rejected", "not_approved", {"detail": "order not approved"})
            return
        order = Order(
            int(row["id"]),
            str(row["pay_to"]),
            bool(row["accepts_usdt"]),
            bool(row["accepts_trx"]),
            row["approved_at"],
            Decimal(row["trx_rate"]) if row["trx_rate"] is not None else None,
        )
        verdict = judge(
            found.tx,
            found.info,
            found.solid,
            order,
            Claim(tx_hash, not_found),
            now,
            usdt_contract=self.usdt_contract,
        )
        if isinstance(verdict, Wait):
            await self._later(claim, not_found)
        elif isinstance(verdict, Reject):
            detail = {"reason": verdict.reason, "detail": verdict.detail, "tx_hash": tx_hash}
            await self._end(claim, "rejected", verdict.reason, detail)
        else:
            await self._credit(claim, verdict)

    async def _later(
        self, claim: dict[str, Any], not_found: float, *, waiting: bool = False
    ) -> None:
        """Looked at again in a while. `waiting`: TronGrid could not be asked, and the
        advertiser is told so once for the claim (`claim_waiting`, unique by its cause); the
        claim's outcome follows when it can be."""
        now = self.clock.now()
        async with store.connection(self.pool) as conn, conn.transaction():
            if waiting:
                detail = {"tx_hash": str(claim["tx_hash"])}
                await _event(conn, claim["order_id"], "claim_waiting", detail, claim, now)
            await conn.execute(
                Q["tron_claim_later"],
                {
                    "id": claim["id"],
                    "token": claim["claim_token"],
                    "not_found_seconds": not_found,
                    "now": now,
                    "next_check_at": now + dt.timedelta(seconds=self.interval),
                },
            )

    async def _end(
        self, claim: dict[str, Any], state: str, reason: str, detail: dict[str, Any]
    ) -> None:
        now = self.clock.now()
        async with store.connection(self.pool) as conn, conn.transaction():
            await _finish_claim(conn, claim, state, reason, now)
            await _event(conn, claim["order_id"], "claim_rejected", detail, claim, now)
        log.info("claim %d rejected: %s", claim["id"], reason)

    async def _credit(self, claim: dict[str, Any], credit: Credit) -> None:
        now = self.clock.now()
        order_id = claim["order_id"]
        async with store.connection(self.pool) as conn, conn.transaction():
            await conn.execute(Q["lock_ad_order"], {"id": order_id})
            cur = await conn.execute(Q["ad_order_for_update"], {"id": order_id})
            order = await cur.fetchone()
            if order is None:
                raise errors.StoreError(f"ad order {order_id} vanished")
            await _finish_claim(conn, claim, "credited", None, now)
            cur = await conn.execute(
                Q["insert_ad_credit"],
                {
                    "claim_id": claim["id"],
                    "order_id": order_id,
                    "coin": credit.coin,
                    "amount": credit.amount,
                    "micros": credit.micros,
                    "sender": credit.sender,
                    "block_time": credit.block_time,
                },
            )
            if await cur.fetchone() is None:
                return  # already credited for this claim
            paid = int(order["paid_micros"]) + credit.micros
            status, due_at = _after_credit(order, paid, now)
            await conn.execute(
                Q["add_to_ad_order"],
                {
                    "id": order_id,
                    "paid_micros": paid,
                    "status": status,
                    "due_at": due_at,
                    "now": now,
                },
            )
            detail = {
                "coin": credit.coin,
                "amount": str(credit.amount),
                "micros": credit.micros,
                "paid_micros": paid,
                "price_micros": int(order["price_micros"]),
                "tx_hash": claim["tx_hash"],
            }
            await _event(conn, order_id, "credited", detail, claim, now)
            if status in ("part_paid", "paid") and order["status"] in OPEN:
                await _event(conn, order_id, status, detail, claim, now)
        log.info("claim %d credited %d micros to order %d", claim["id"], credit.micros, order_id)


def _after_credit(
    order: dict[str, Any], paid: int, now: dt.datetime
) -> tuple[str, dt.datetime | None]:
    """The order's status and deadline once `paid` micros have come in. Money for an order no
    longer open (expired, cancelled, already paid) is recorded and left for the owner."""
    status = str(order["status"])
    if status not in OPEN:
        return status, order["due_at"]
    if paid >= int(order["price_micros"]):
        return "paid", None
    if status == "approved":
        # The first part: the rest is due within 48 hours of it.
        return "part_paid", now + PART_PAYMENT_WINDOW
    return "part_paid", order["due_at"]


async def _finish_claim(
    conn: Connection, claim: dict[str, Any], state: str, reason: str | None, now: dt.datetime
) -> None:
    cur = await conn.execute(
        Q["tron_claim_end"],
        {
            "id": claim["id"],
            "token": claim["claim_token"],
            "state": state,
            "reason": reason,
            "now": now,
        },
    )
    if await cur.fetchone() is None:
        raise LostClaim(str(claim["id"]))


async def _event(
    conn: Connection,
    order_id: int,
    kind: str,
    detail: dict[str, Any],
    claim: dict[str, Any],
    now: dt.datetime,
) -> None:
    await conn.execute(
        Q["insert_ad_order_event"],
        {
            "order_id": order_id,
            "kind": kind,
            "detail": Jsonb(detail),
            "cause": f"claim:{claim['id']}",
            "now": now,
        },
    )
