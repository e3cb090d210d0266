"""One sweep call's work and its transactions: memberships past their dates moved in chunks
of one transaction each, reminders queued, open invoices and unpaid ad orders expired; within a
time budget, so that a large backlog is worked through in bounded calls (`more: true` asks for
another)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import Counter, Histogram

from billing.store import Q
from billing.transitions import Status, decide_due, notice_key
from shared.clock import Clock
from shared.db import Connection

TIME_BUDGET = 20.0
CHUNK = 500

TRANSITIONS = Counter(
    "billing_sweep_transitions_total", "Membership moves made by the sweep", ["to"]
)
RUNS = Counter("billing_sweep_runs_total", "Sweep calls", ["more"])
DURATION = Histogram("billing_sweep_duration_seconds", "Time one sweep call took")


async def sweep(conn: Connection, now: dt.datetime, batch: int, clock: Clock) -> dict[str, Any]:
    """At most `batch` memberships examined; the call's answer."""
    started = clock.monotonic()
    total = SweepChunk()
    more = False
    # Chunks of CHUNK, each one transaction: a payment waits at most one chunk for a
    # membership the sweep holds.
    while total.examined < batch:
        if clock.monotonic() - started > TIME_BUDGET:
            more = True
            break
        limit = min(CHUNK, batch - total.examined)
        chunk = await sweep_chunk(conn, now, limit)
        total.examined += chunk.examined
        total.skipped += chunk.skipped
        total.reminded += chunk.reminded
        for status, n in chunk.moved.items():
            total.moved[status] += n
            TRANSITIONS.labels(status.value).inc(n)
        TRANSITIONS.labels("expiry_notice").inc(chunk.reminded)
        if chunk.skipped:
            # A payment holds some now: they would head the next chunk again, so the next
            # call takes them.
            more = True
            break
        if chunk.examined < limit:
            break
    else:
        more = True
    invoices = await expire_open_invoices(conn, now, batch)
    orders = await ad_order_deadlines(conn, now, batch)
    RUNS.labels(str(more).lower()).inc()
    DURATION.observe(clock.monotonic() - started)
    return {
        "examined": total.examined,
        "to_grace": total.moved[Status.GRACE],
        "to_expired": total.moved[Status.EXPIRED],
        "reminded": total.reminded,
        "skipped": total.skipped,
        "invoices_expired": invoices,
        "orders_expired": orders,
        "more": more,
    }


@dataclass
class SweepChunk:
    """What one chunk of the sweep did."""

    examined: int = 0
    """Due memberships taken (locked or not)."""
    skipped: int = 0
    """Held by a payment right now: left for the next call."""
    moved: dict[Status, int] = field(default_factory=lambda: {Status.GRACE: 0, Status.EXPIRED: 0})
    reminded: int = 0


async def sweep_chunk(conn: Connection, now: dt.datetime, limit: int) -> SweepChunk:
    """Decide up to `limit` due memberships in one transaction, each under its lock: the pure
    `decide_due` per membership, then one statement per kind of write."""
    done = SweepChunk()
    async with conn.transaction():
        cur = await conn.execute(Q["due_memberships"], {"now": now, "limit": limit})
        due = await cur.fetchall()
        done.examined = len(due)
        locked = [row for row in due if row["locked"]]
        done.skipped = done.examined - len(locked)
        if not locked:
            return done
        cur = await conn.execute(
            Q["locked_memberships"],
            {
                "people": [row["person_id"] for row in locked],
                "channels": [row["channel_id"] for row in locked],
            },
        )
        moves: dict[str, list[Any]] = _columns(
            "people", "channels", "from_status", "to_status", "expires_at", "next_check_at"
        )
        notices = _columns("people", "channels", "keys", "hours", "expires_at")
        stays = _columns("people", "channels", "status", "expires_at", "next_check_at")
        for row in await cur.fetchall():
            before = Status(row["status"])
            expires_at = row["expires_at"]
            decision = decide_due(
                before, expires_at, row["grace_days"], row["reminder_hours"] or (), now
            )
            keys = (row["person_id"], row["channel_id"])
            if decision.status is not before:
                _add(
                    moves,
                    *keys,
                    before.value,
                    decision.status.value,
                    expires_at,
                    decision.next_check_at,
                )
                continue
            if decision.notice_hours is not None:
                key = notice_key(*keys, expires_at, decision.notice_hours)
                _add(notices, *keys, key, decision.notice_hours, expires_at)
            _add(stays, *keys, before.value, expires_at, decision.next_check_at)
        if moves["people"]:
            cur = await conn.execute(Q["move_memberships"], {**moves, "now": now})
            moved = _columns("people", "channels", "from_status", "to_status", "expires_at")
            for row in await cur.fetchall():
                _add(
                    moved,
                    row["person_id"],
                    row["channel_id"],
                    row["from_status"],
                    row["to_status"],
                    row["expires_at"],
                )
                done.moved[Status(row["to_status"])] += 1
            await conn.execute(Q["insert_sweep_events"], {**moved, "now": now})
        if notices["people"]:
            cur = await conn.execute(Q["insert_expiry_notices"], {**notices, "now": now})
            done.reminded = len(await cur.fetchall())
        if stays["people"]:
            await conn.execute(Q["set_next_checks"], {**stays, "now": now})
    return done


def _columns(*names: str) -> dict[str, list[Any]]:
    return {name: [] for name in names}


def _add(columns: dict[str, list[Any]], *values: Any) -> None:
    for column, value in zip(columns.values(), values, strict=True):
        column.append(value)


async def expire_open_invoices(conn: Connection, now: dt.datetime, limit: int) -> int:
    """Expire unpaid invoices past their time, each person told with a way to pay again, in
    one transaction; how many expired."""
    async with conn.transaction():
        cur = await conn.execute(Q["expire_open_invoices"], {"now": now, "limit": limit})
        ids = [row["id"] for row in await cur.fetchall()]
        if ids:
            await conn.execute(Q["checkout_lapsed_notices"], {"ids": ids, "now": now})
        return len(ids)


async def ad_order_deadlines(conn: Connection, now: dt.datetime, limit: int) -> int:
    """Expire ad orders past their deadline and remind part-paid ones; how many expired."""
    async with conn.transaction():
        cur = await conn.execute(Q["expire_ad_orders"], {"now": now, "limit": limit})
        expired = len(await cur.fetchall())
        await conn.execute(Q["remind_part_paid"], {"now": now})
    return expired
