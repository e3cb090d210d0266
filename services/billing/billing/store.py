"""Billing's writes to memberships: a gateway's payment and its refund, each one transaction
under the membership's advisory lock (grants, trials and codes are in `grants`). The sweep's
transactions are in `sweep`, the invoices' in `invoices`; all of them take a connection from
`connection(pool)` and run statements from `queries.sql`."""

from __future__ import annotations

import datetime as dt
import json
import logging
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from psycopg import AsyncCursor
from psycopg.rows import DictRow

from billing import errors, sqlq
from billing.model import (
    ChannelId,
    Delivery,
    Held,
    InvoiceRecord,
    Kind,
    Membership,
    MembershipKey,
    Outcome,
    PaymentRecord,
    PersonId,
    Recorded,
)
from billing.payments import Decision, Verdict, decide
from billing.transitions import (
    Change,
    Extension,
    Grant,
    Removal,
    Status,
    after_refund,
    extend,
    next_check_at,
    replay,
)
from shared.db import Connection, Pool, pipelined_transaction, translated

log = logging.getLogger("billing.store")
Q = sqlq.Q


def connection(pool: Pool) -> AbstractAsyncContextManager[Connection]:
    """A pool connection whose psycopg errors come out as billing's: `DatabaseUnavailable`
    when the database is away, `StoreError` when a statement failed otherwise."""
    return translated(pool, unavailable=errors.DatabaseUnavailable, failed=errors.StoreError)


async def one_row(cur: AsyncCursor[DictRow]) -> DictRow:
    """The row a statement must return (RETURNING, or a row read under the lock)."""
    row = await cur.fetchone()
    if row is None:
        raise RuntimeError("statement returned no row")
    return row


async def membership(conn: Connection, key: MembershipKey) -> Membership | None:
    cur = await conn.execute(Q["membership"], key.params())
    row = await cur.fetchone()
    return None if row is None else _membership_of(row)


def _membership_of(row: DictRow) -> Membership | None:
    """The membership in a row's `membership_*` columns and `reminder_hours`; None when the
    row has none (a LEFT JOIN found no membership)."""
    if row["membership_status"] is None:
        return None
    return Membership(
        Status(row["membership_status"]),
        row["membership_expires_at"],
        row["membership_grace_days"],
        tuple(row["reminder_hours"] or ()),
    )


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
            "outcome": outcome.recorded.value,
            "payment_id": outcome.payment_id,
            "detail": detail or outcome.reason,
            "payload": json.dumps(delivery.payload),
            "now": now,
        },
    )
    return outcome


async def record_delivery(conn: Connection, delivery: Delivery, now: dt.datetime) -> Outcome:
    """Apply one authentic delivery exactly once; every path records a gateway event.

    Pipelined: BEGIN, the lock and the read under it go in one round trip, and an applied
    payment's writes are one statement sent with COMMIT, so the usual payment takes two.
    """
    if delivery.kind is Kind.REFUND:
        return await record_refund(conn, delivery, now)
    async with pipelined_transaction(conn):
        if delivery.kind is not Kind.PAYMENT:
            reason = (
                "not a successful payment"
                if delivery.kind is Kind.NOT_SUCCESS
                else (f"event type {delivery.event_type} is not acted on")
            )
            outcome = Outcome(Recorded(delivery.kind.value), False, False, reason, None)
            if delivery.declined and delivery.order_reference:
                await conn.execute(
                    Q["checkout_declined_notice"],
                    {
                        "order_reference": delivery.order_reference,
                        "event_type": delivery.event_type,
                        "now": now,
                    },
                )
            return await _record(conn, delivery, outcome, now)
        reference = {"order_reference": delivery.order_reference}
        await conn.execute(Q["lock_membership_of_invoice"], reference)
        # Read under the lock (a statement of its own, so its snapshot is taken after the lock
        # was granted): another delivery may have paid the invoice while we waited. No row
        # when the order reference is unknown, as the lock's statement finds none.
        cur = await conn.execute(Q["invoice_under_lock"], reference)
        rows = await cur.fetchall()
        if not rows:
            outcome = Outcome(Recorded.ORPHAN, False, False, "unknown order reference", None)
            log.warning(
                "%s payment for unknown order reference %r",
                delivery.gateway,
                delivery.order_reference,
            )
            return await _record(conn, delivery, outcome, now)
        held = [
            Held(
                ChannelId(row["paid_channel_id"]),
                _membership_of(row),
                tuple(row["reminder_hours"] or ()),
            )
            for row in rows
        ]
        if delivery.paid_at is None or delivery.amount_minor is None:
            raise ValueError("a payment delivery carries paid_at and amount_minor")
        invoice = InvoiceRecord.from_row(rows[0])
        decision = decide(invoice, delivery, None)
        if decision.verdict is not Verdict.APPLIED:
            return await _not_applied(conn, invoice, held, delivery, decision, now)
        # Its answer is read with COMMIT's: one round trip fewer.
        written = await _write_applied(
            conn, invoice, held, delivery, delivery.paid_at, decision, now
        )
    applied = await written.outcome(delivery)
    if applied is not None:
        return applied
    # Nothing was written: the payment's key was taken meanwhile. Decided again, under the
    # lock as every decision is, against the payment stored under it, which is never applied
    # a second time.
    async with pipelined_transaction(conn):
        await conn.execute(Q["lock_membership_of_invoice"], reference)
        return await _not_applied(conn, invoice, held, delivery, decision, now)


async def _not_applied(
    conn: Connection,
    invoice: InvoiceRecord,
    held: list[Held],
    delivery: Delivery,
    decision: Decision,
    now: dt.datetime,
) -> Outcome:
    """A payment delivery that changes no membership: stored flagged, or a duplicate or a
    conflict of one stored before; `decision` is APPLIED when its write found the key taken."""
    before = next(h.membership for h in held if h.channel_id == invoice.key.channel_id)
    payment_id: int | None = None
    if decision.verdict is not Verdict.APPLIED and decision.stores_payment:
        cur = await conn.execute(
            Q["insert_payment"],
            {
                "gateway": delivery.gateway,
                "external_payment_id": delivery.external_payment_id,
                "invoice_id": invoice.id,
                **invoice.key.params(),
                "amount_minor": delivery.amount_minor,
                "currency": delivery.currency,
                "paid_at": delivery.paid_at,
                "applied": False,
                "flag": decision.verdict.value,
            },
        )
        inserted = await cur.fetchone()
        payment_id = None if inserted is None else int(inserted["id"])
    if decision.stores_payment and payment_id is None:
        # The key is taken (nothing was written): decide again, knowing the payment stored
        # under it. A stored payment is never applied a second time.
        cur = await conn.execute(
            Q["payment_by_key"],
            {"gateway": delivery.gateway, "external_payment_id": delivery.external_payment_id},
        )
        existing = PaymentRecord.from_row(await one_row(cur))
        decision = decide(invoice, delivery, existing)
        payment_id = existing.id
    if decision.verdict is Verdict.CONFLICT:
        log.error(
            "%s payment %s redelivered with different business fields (order %r)",
            delivery.gateway,
            delivery.external_payment_id,
            delivery.order_reference,
        )
    elif decision.verdict is not Verdict.DUPLICATE:
        log.warning("%s delivery not applied: %s", delivery.gateway, decision.reason)
    outcome = Outcome(
        Recorded(decision.verdict.value),
        decision.duplicate,
        False,
        decision.reason,
        before,
        payment_id,
    )
    return await _record(conn, delivery, outcome, now)


@dataclass(frozen=True)
class _Written:
    """The applying statement sent; its answer is read after COMMIT."""

    cur: AsyncCursor[DictRow]
    mine: Membership
    flag: str | None

    async def outcome(self, delivery: Delivery) -> Outcome | None:
        """None when the payment's key was already taken and nothing was written."""
        stored = await self.cur.fetchone()
        if stored is None:
            return None
        payment_id = int(stored["id"])
        if self.flag is not None:
            log.warning(
                "invoice %s paid a second time (payment %d); applied",
                delivery.order_reference,
                payment_id,
            )
        return Outcome(Recorded.APPLIED, False, True, self.flag, self.mine, payment_id)


async def _write_applied(
    conn: Connection,
    invoice: InvoiceRecord,
    held: list[Held],
    delivery: Delivery,
    paid_at: dt.datetime,
    decision: Decision,
    now: dt.datetime,
) -> _Written:
    """The payment stored and each membership it pays for extended, in one statement."""
    after = {
        h.channel_id: Membership(
            Status.ACTIVE,
            extend(h.membership.expires_at if h.membership else None, paid_at, invoice.period_days),
            invoice.grace_days,
            h.reminders,
        )
        for h in held
    }
    cur = await conn.execute(
        Q["apply_payment"],
        {
            **invoice.key.params(),
            "amount_minor": delivery.amount_minor,
            "currency": delivery.currency,
            "status": Status.ACTIVE.value,
            "grace_days": invoice.grace_days,
            "channel_ids": [h.channel_id for h in held],
            "from_statuses": [h.membership.status.value if h.membership else None for h in held],
            "old_expires": [h.membership.expires_at if h.membership else None for h in held],
            "new_expires": [after[h.channel_id].expires_at for h in held],
            "next_checks": [
                next_check_at(
                    Status.ACTIVE,
                    after[h.channel_id].expires_at,
                    invoice.grace_days,
                    h.reminders,
                    after=now,
                )
                for h in held
            ],
            "paid_at": paid_at,
            "period_days": invoice.period_days,
            "invoice_id": invoice.id,
            "gateway": delivery.gateway,
            "event_type": delivery.event_type,
            "order_reference": delivery.order_reference,
            "external_payment_id": delivery.external_payment_id,
            "detail": decision.flag,
            "payload": json.dumps(delivery.payload),
            "now": now,
        },
    )
    return _Written(cur, after[invoice.key.channel_id], decision.flag)


async def write_membership(
    conn: Connection, key: MembershipKey, after: Membership, now: dt.datetime
) -> None:
    """A paid or granted membership as it stands now; the sweep next looks at its first
    reminder time still ahead (those already passed when the period starts are not sent)."""
    await conn.execute(
        Q["upsert_membership"],
        {
            **key.params(),
            "status": after.status.value,
            "expires_at": after.expires_at,
            "grace_days": after.grace_days,
            "next_check_at": next_check_at(
                after.status, after.expires_at, after.grace_days, after.reminder_hours, after=now
            ),
            "now": now,
        },
    )


async def membership_event(
    conn: Connection,
    key: MembershipKey,
    before: Membership | None,
    after: Membership,
    now: dt.datetime,
    *,
    cause: str,
    payment_id: int | None = None,
    paid_at: dt.datetime | None = None,
    period_days: int | None = None,
    until: dt.datetime | None = None,
    reason: str | None = None,
    refund_id: int | None = None,
    request_key: str | None = None,
) -> int:
    cur = await conn.execute(
        Q["insert_membership_event"],
        {
            **key.params(),
            "from_status": before.status.value if before else None,
            "to_status": after.status.value,
            "old_expires_at": before.expires_at if before else None,
            "new_expires_at": after.expires_at,
            "cause": cause,
            "payment_id": payment_id,
            "paid_at": paid_at,
            "period_days": period_days,
            "until": until,
            "reason": reason,
            "refund_id": refund_id,
            "request_key": request_key,
            "now": now,
        },
    )
    return int((await one_row(cur))["id"])


async def access_event(
    conn: Connection,
    kind: str,
    key: MembershipKey,
    membership_event_id: int,
    expires_at: dt.datetime,
    now: dt.datetime,
) -> None:
    await conn.execute(
        Q["insert_access_event"],
        {
            "kind": kind,
            **key.params(),
            "membership_event_id": membership_event_id,
            "expires_at": expires_at,
            "now": now,
        },
    )


# -- refunds -----------------------------------------------------------------------------------


async def record_refund(conn: Connection, delivery: Delivery, now: dt.datetime) -> Outcome:
    """Take back what a payment bought, once: under the locks of every membership it extended
    (ascending channel order, as a payment takes them), each one's `expires_at` becomes the
    replay of the payments and grants that survive it, its status follows
    (`transitions.after_refund`), with a `refund` history row and, where access is now over,
    a `revoke` for botedge. An unknown payment, a redelivery and a second refund of one
    payment change nothing; each is recorded as a gateway event."""
    async with conn.transaction():
        cur = await conn.execute(
            Q["lock_memberships_of_payment"],
            {"gateway": delivery.gateway, "external_payment_id": delivery.external_payment_id},
        )
        locked = await cur.fetchall()
        if not locked:
            log.warning(
                "%s refund of unknown payment %r", delivery.gateway, delivery.external_payment_id
            )
            outcome = Outcome(Recorded.REFUND_UNKNOWN, False, False, "no such payment", None)
            return await _record(conn, delivery, outcome, now)
        payment_id = int(locked[0]["payment_id"])
        cur = await conn.execute(
            Q["insert_refund"],
            {
                "gateway": delivery.gateway,
                "external_refund_id": delivery.external_refund_id,
                "payment_id": payment_id,
                "amount_minor": delivery.amount_minor,
                "currency": delivery.currency,
                "kind": "chargeback" if delivery.chargeback else "refund",
                "now": now,
            },
        )
        refund = await cur.fetchone()
        if refund is None:
            outcome = Outcome(
                Recorded.REFUND_DUPLICATE, True, False, "refunded already", None, payment_id
            )
            return await _record(conn, delivery, outcome, now)
        person = PersonId(int(locked[0]["person_id"]))
        channels = [int(row["channel_id"]) for row in locked if row["channel_id"] is not None]
        after: Membership | None = None
        if channels:
            cur = await conn.execute(
                Q["ledger_to_check"],
                {"since": None, "person_id": person, "channel_ids": channels},
            )
            for row in await cur.fetchall():
                key = MembershipKey(person, ChannelId(int(row["channel_id"])))
                after = await _reversed(conn, key, row, int(refund["id"]), now)
        reason = None if channels else "the payment had extended nothing"
        outcome = Outcome(Recorded.REFUND_APPLIED, False, True, reason, after, payment_id)
        return await _record(conn, delivery, outcome, now)


def survivors(row: DictRow) -> list[Change]:
    """A membership's history that a refund leaves, in the order it was applied."""
    return [
        _change(cause, paid_at, period, until)
        for cause, paid_at, period, until in zip(
            row["causes"], row["paid_ats"], row["periods"], row["untils"], strict=True
        )
    ]


def _change(
    cause: str, paid_at: dt.datetime | None, period: int | None, until: dt.datetime | None
) -> Change:
    if cause in ("grant", "trial") and until is not None:
        return Grant(until)
    if cause == "removal" and until is not None:
        return Removal(until)
    if cause == "payment" and paid_at is not None and period is not None:
        return Extension(paid_at, int(period))
    raise ValueError(f"a history row of cause {cause!r} lacks its date")


async def _reversed(
    conn: Connection, key: MembershipKey, row: DictRow, refund_id: int, now: dt.datetime
) -> Membership:
    grace = int(row["grace_days"])
    before = Membership(Status(row["status"]), row["expires_at"], grace)
    status, expires_at = after_refund(before.status, replay(survivors(row)), now, grace)
    after = Membership(status, expires_at, grace, tuple(row["reminder_hours"] or ()))
    await write_membership(conn, key, after, now)
    event_id = await membership_event(
        conn, key, before, after, now, cause="refund", refund_id=refund_id
    )
    # What the sweep would have told them on the way: a reminder into grace, a removal once
    # expired.
    if status is Status.EXPIRED and before.status is not Status.EXPIRED:
        await access_event(conn, "revoke", key, event_id, expires_at, now)
    elif status is Status.GRACE and before.status is Status.ACTIVE:
        await access_event(conn, "reminder", key, event_id, expires_at, now)
    return after
