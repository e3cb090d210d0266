"""One sweep call's work: memberships past their dates moved in chunks of one transaction
each, reminders queued, open invoices and unpaid ad orders expired; within a time budget, so
that a large backlog is worked through in bounded calls (`more: true` asks for another)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from prometheus_client import Counter, Histogram

from billing import store
from billing.transitions import Status
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
    total = store.SweepChunk()
    more = False
    # Chunks of CHUNK, each one transaction: a payment waits at most one chunk for a
    # membership the sweep holds.
    while total.examined < batch:
        if clock.monotonic() - started > TIME_BUDGET:
            more = True
            break
        limit = min(CHUNK, batch - total.examined)
        chunk = await store.sweep_chunk(conn, now, limit)
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
    invoices = await store.expire_open_invoices(conn, now, batch)
    orders = await store.ad_order_deadlines(conn, now, batch)
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
