"""Claim and handle updates: each person's in order, different people in parallel.

N slots (default 32); a claim runs as soon as a quarter of them are free. One transaction per
update writes the person, the effects and the replies, and finishes the row by compare-and-set
on its claim token. A failure retries with exponential backoff and jitter, delaying only that
person; after the last attempt the update is dead and the person moves on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass

import psycopg

from botedge import sqlq
from botedge.handlers import Handler, Update
from botedge.metrics import HANDLING_SECONDS, UPDATES_HANDLED
from shared.backoff import backoff_delay
from shared.db import Pool
from shared.lifecycle import sleep_unless_stopped
from shared.listen import Notifier
from shared.logging import request_id

log = logging.getLogger("botedge.worker")
Q = sqlq.Q


@dataclass(frozen=True)
class WorkerConfig:
    slots: int = 32
    lock_seconds: float = 60.0
    max_attempts: int = 5
    poll_interval: float = 1.0
    backoff_base: float = 1.0
    backoff_cap: float = 300.0


class LostClaim(Exception):
    """Our claim was taken over (lease ran out); whatever we wrote is rolled back."""


class UpdateWorker:
    def __init__(
        self,
        pool: Pool,
        handler: Handler,
        notifier: Notifier,
        wakeup: asyncio.Event,
        config: WorkerConfig,
        holder: str = "",
    ) -> None:
        self.pool = pool
        self.holder = holder
        self.handler = handler
        self.notifier = notifier
        self.wakeup = wakeup
        self.config = config
        self.in_flight: set[asyncio.Task[None]] = set()
        self._slot_freed = asyncio.Event()

    async def claim(self, limit: int) -> list[Update]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                Q["claim_updates"],
                {"limit": limit, "lock_seconds": self.config.lock_seconds, "holder": self.holder},
            )
            return [Update.from_row(row) for row in await cur.fetchall()]

    async def run(self, stopping: asyncio.Event) -> None:
        slots = self.config.slots
        quarter = max(1, slots // 4)
        while not stopping.is_set():
            free = slots - len(self.in_flight)
            claimed: list[Update] = []
            if free >= quarter:
                try:
                    claimed = await self.claim(free)
                except psycopg.errors.UniqueViolation:
                    # Two claims raced for one person; the unique index kept them apart.
                    await asyncio.sleep(0.01)
                    continue
                except (psycopg.Error, OSError) as error:
                    log.warning("claim failed: %s", error)
                    await sleep_unless_stopped(stopping, self.config.poll_interval)
                    continue
                for update in claimed:
                    task = asyncio.get_running_loop().create_task(self.handle(update))
                    self.in_flight.add(task)
                    task.add_done_callback(self._done)
            if claimed and len(claimed) == free:
                # Possibly more waiting: claim again once a quarter of the slots are free.
                await self._wait(stopping, for_slot=True)
            elif not claimed:
                await self._wait(stopping, for_slot=bool(self.in_flight))
        await self.drain()

    async def drain(self) -> None:
        if self.in_flight:
            await asyncio.gather(*self.in_flight, return_exceptions=True)

    def _done(self, task: asyncio.Task[None]) -> None:
        self.in_flight.discard(task)
        self._slot_freed.set()

    async def _wait(self, stopping: asyncio.Event, *, for_slot: bool) -> None:
        waits = [
            asyncio.ensure_future(self.wakeup.wait()),
            asyncio.ensure_future(stopping.wait()),
        ]
        if for_slot:
            waits.append(asyncio.ensure_future(self._slot_freed.wait()))
        try:
            await asyncio.wait(
                waits, timeout=self.config.poll_interval, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in waits:
                waiter.cancel()
        self.wakeup.clear()
        self._slot_freed.clear()

    async def handle(self, update: Update) -> None:
        token = request_id.set(f"update-{update.bot_id}-{update.update_id}")
        started = time.perf_counter()
        outcome = "done"
        try:
            budget = self.config.lock_seconds * 0.8
            prepared = await asyncio.wait_for(self.handler.prepare(update), budget)
            replies = 0
            async with self.pool.connection() as conn, conn.transaction():
                for n, reply in enumerate(await self.handler.apply(conn, update, prepared)):
                    await conn.execute(
                        Q["insert_outbox"],
                        {
                            "bot_id": update.bot_id,
                            "chat_id": reply.chat_id,
                            "method": reply.method,
                            "payload": json.dumps(reply.payload),
                            "priority": 0,
                            "dedupe_key": f"inbox:{update.id}:{n}",
                        },
                    )
                    replies += 1
                cur = await conn.execute(Q["finish_update"], update.claim)
                if cur.rowcount != 1:
                    raise LostClaim
            if replies:
                self.notifier.announce("outbox", str(update.bot_id))
        except LostClaim:
            outcome = "lost"
            log.warning("update %d: claim lost before commit; rolled back", update.id)
        except Exception as error:
            outcome = await self._fail(update, error)
        finally:
            HANDLING_SECONDS.observe(time.perf_counter() - started)
            UPDATES_HANDLED.labels(outcome).inc()
            request_id.reset(token)

    async def _fail(self, update: Update, error: BaseException) -> str:
        description = f"{type(error).__name__}: {error}"[:1000]
        last = update.attempt >= self.config.max_attempts
        params = {**update.claim, "error": description}
        try:
            async with self.pool.connection() as conn:
                if last:
                    await conn.execute(Q["bury_update"], params)
                else:
                    delay = backoff_delay(
                        update.attempt,
                        base=self.config.backoff_base,
                        cap=self.config.backoff_cap,
                        jitter=True,
                    )
                    await conn.execute(Q["retry_update"], {**params, "delay": delay})
        except (psycopg.Error, OSError) as db_error:
            # The claim runs out and the update comes back: nothing is lost.
            log.error("update %d: could not record failure: %s", update.id, db_error)
            return "error"
        if last:
            log.error(
                "update %d dead after %d attempts: %s", update.id, update.attempt, description
            )
            return "dead"
        log.warning("update %d attempt %d failed: %s", update.id, update.attempt, description)
        return "retry"
