"""Consuming a billing -> botedge event table (`access_events`; later the ad shop's order events).

Every such table has `id`, `state` (`pending` -> `processing` -> `done` or `failed`),
`claim_token`, `claim_expires_at`, `attempts`, `available_at`, `done_at` and `last_error`, and
a key whose events must apply in `id` order (a membership's, an order's). A claim takes
claimable rows with `FOR UPDATE SKIP LOCKED`, none while an earlier event of its key is
unfinished; finishing, retrying and failing compare-and-set on the claim token, so a consumer
that lost its claim changes nothing. A handler does its Telegram calls first and then, in one
transaction, queues its messages and finishes the event with `finish`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, LiteralString

from psycopg import sql

from botedge import errors
from botedge.db import connection
from botedge.telegram import parked_delay
from shared.backoff import backoff_delay
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Connection, Pool
from shared.lifecycle import sleep_unless_stopped

log = logging.getLogger("botedge.events")


@dataclass(frozen=True)
class EventTable:
    name: LiteralString
    # Events sharing these columns apply one at a time, in id order.
    order_key: tuple[LiteralString, ...]


@dataclass(frozen=True)
class Event:
    id: int
    claim_token: uuid.UUID
    attempts: int
    row: dict[str, Any]


class LostClaim(Exception):
    """The claim ran out and another consumer took the event: roll back."""


class EventQueue:
    def __init__(
        self,
        pool: Pool,
        table: EventTable,
        *,
        lease_seconds: float = 60.0,
        max_attempts: int = 8,
        backoff_base: float = 2.0,
        backoff_cap: float = 600.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.pool = pool
        self.clock = clock
        self.table = table
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        name = sql.Identifier(table.name)
        earlier_key = sql.SQL(", ").join(
            sql.SQL("earlier.{}").format(sql.Identifier(c)) for c in table.order_key
        )
        event_key = sql.SQL(", ").join(
            sql.SQL("e.{}").format(sql.Identifier(c)) for c in table.order_key
        )
        self._claim = sql.SQL(
            """
            WITH claimable AS (
                SELECT e.id FROM {name} e
                 WHERE (e.state = 'pending'
                        OR (e.state = 'processing' AND e.claim_expires_at < now()))
                   AND e.available_at <= now()
                   AND NOT EXISTS (
                       SELECT 1 FROM {name} earlier
                        WHERE ({earlier_key}) = ({event_key}) AND earlier.id < e.id
                          AND earlier.state IN ('pending', 'processing'))
                 ORDER BY e.id
                 LIMIT %(limit)s
                   FOR UPDATE OF e SKIP LOCKED
            )
            UPDATE {name} e
               SET state = 'processing', claim_token = gen_random_uuid(),
                   claim_expires_at = now() + make_interval(secs => %(lease)s),
                   attempts = e.attempts + 1
              FROM claimable
             WHERE e.id = claimable.id
            RETURNING e.*
            """
        ).format(name=name, earlier_key=earlier_key, event_key=event_key)
        fence = sql.SQL("WHERE id = %(id)s AND claim_token = %(token)s AND state = 'processing'")
        self._finish = sql.SQL(
            "UPDATE {name} SET state = 'done', done_at = %(now)s, claim_token = NULL,"
            " claim_expires_at = NULL, last_error = NULL {fence} RETURNING id"
        ).format(name=name, fence=fence)
        # `give_back` 1 when nothing was tried (a breaker open): the claim's attempt returns.
        self._retry = sql.SQL(
            "UPDATE {name} SET state = 'pending', claim_token = NULL, claim_expires_at = NULL,"
            " available_at = now() + make_interval(secs => %(delay)s), last_error = %(error)s,"
            " attempts = attempts - %(give_back)s {fence}"
        ).format(name=name, fence=fence)
        self._fail = sql.SQL(
            "UPDATE {name} SET state = 'failed', done_at = %(now)s, claim_token = NULL,"
            " claim_expires_at = NULL, last_error = %(error)s {fence}"
        ).format(name=name, fence=fence)

    async def claim(self, limit: int) -> list[Event]:
        async with connection(self.pool) as conn:
            cur = await conn.execute(self._claim, {"limit": limit, "lease": self.lease_seconds})
            rows = await cur.fetchall()
        return [
            Event(int(r["id"]), r["claim_token"], int(r["attempts"]), dict(r))
            for r in sorted(rows, key=lambda r: int(r["id"]))
        ]

    async def finish(self, conn: Connection, event: Event) -> None:
        """In the transaction that wrote the event's effects; LostClaim rolls them back."""
        params = {"id": event.id, "token": event.claim_token, "now": self.clock.now()}
        cur = await conn.execute(self._finish, params)
        if await cur.fetchone() is None:
            raise LostClaim(f"{self.table.name} {event.id}")

    async def failed_attempt(self, event: Event, error: str, parked: float | None = None) -> str:
        """Back off and try again, or `failed` after the last attempt; the outcome. `parked`:
        nothing was tried (a breaker is open), so the try is given back and it waits that
        long."""
        params: dict[str, Any] = {"id": event.id, "token": event.claim_token, "error": error}
        async with connection(self.pool) as conn:
            if parked is not None:
                await conn.execute(self._retry, {**params, "delay": parked, "give_back": 1})
                return "parked"
            if event.attempts >= self.max_attempts:
                await conn.execute(self._fail, {**params, "now": self.clock.now()})
                return "failed"
            delay = backoff_delay(
                event.attempts, base=self.backoff_base, cap=self.backoff_cap, jitter=True
            )
            await conn.execute(self._retry, {**params, "delay": delay, "give_back": 0})
        return "retry"


async def consume(
    queue: EventQueue,
    handle: Callable[[Event], Awaitable[None]],
    stopping: asyncio.Event,
    *,
    batch: int = 16,
    poll_interval: float = 1.0,
) -> None:
    """Claim and handle events until `stopping`; each event's failure is its own."""
    while not stopping.is_set():
        try:
            events = await queue.claim(batch)
        except errors.BotedgeError as error:
            log.warning("%s: claim failed: %s", queue.table.name, error)
            events = []
        if events:
            await asyncio.gather(*(_one(queue, handle, event) for event in events))
        if len(events) < batch:
            await sleep_unless_stopped(stopping, poll_interval)


async def _one(queue: EventQueue, handle: Callable[[Event], Awaitable[None]], event: Event) -> None:
    try:
        await handle(event)
    except LostClaim:
        log.warning("%s %d: claim lost before commit; rolled back", queue.table.name, event.id)
    except Exception as error:
        description = f"{type(error).__name__}: {error}"[:1000]
        try:
            outcome = await queue.failed_attempt(event, description, parked_delay(error))
        except errors.BotedgeError as db_error:
            log.error("%s %d: could not record failure: %s", queue.table.name, event.id, db_error)
            return
        level = logging.ERROR if outcome == "failed" else logging.WARNING
        log.log(
            level,
            "%s %d attempt %d: %s (%s)",
            queue.table.name,
            event.id,
            event.attempts,
            description,
            outcome,
        )
