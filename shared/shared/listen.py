"""LISTEN/NOTIFY wake-ups. A hint only: whoever waits also polls, so a lost one costs latency.

`Notifier` gathers announcements for up to 5 ms and sends them in one
`SELECT pg_notify(...), pg_notify(...)`, after the caller's commit. `Listener` keeps one
autocommit LISTEN connection per process, reconnecting after failures, and sets the waiting
`asyncio.Event`s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from typing import LiteralString

import psycopg
from psycopg import sql

from shared.db import Pool, connect

log = logging.getLogger("shared.listen")

GATHER_SECONDS = 0.005


class Notifier:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool
        self._pending: set[tuple[str, str]] = set()
        self._flush: asyncio.Task[None] | None = None

    def announce(self, channel: str, payload: str = "") -> None:
        """Queue a notification; call only after the transaction that it announces committed."""
        self._pending.add((channel, payload))
        if self._flush is None or self._flush.done():
            self._flush = asyncio.get_running_loop().create_task(self._send_soon())

    async def _send_soon(self) -> None:
        await asyncio.sleep(GATHER_SECONDS)
        batch, self._pending = self._pending, set()
        if not batch:
            return
        calls = sql.SQL(", ").join(
            sql.SQL("pg_notify({}, {})").format(sql.Literal(c), sql.Literal(p)) for c, p in batch
        )
        try:
            async with self.pool.connection() as conn:
                await conn.execute(sql.SQL("SELECT {}").format(calls))
        except (psycopg.Error, OSError) as error:
            # Polling is the guarantee; a lost wake-up only costs latency.
            log.warning("could not send %d notifications: %s", len(batch), error)

    async def close(self) -> None:
        if self._flush is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._flush


class Listener:
    """Sets `event(channel)` whenever a notification on that channel arrives."""

    def __init__(self, database_url: str, channels: tuple[LiteralString, ...]) -> None:
        self.database_url = database_url
        self.channels = channels
        self.events: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.payload_events: dict[tuple[str, str], asyncio.Event] = defaultdict(asyncio.Event)
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def event(self, channel: str, payload: str | None = None) -> asyncio.Event:
        if payload is None:
            return self.events[channel]
        return self.payload_events[(channel, payload)]

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        delay = 0.5
        while True:
            try:
                conn = await connect(self.database_url, autocommit=True)
                async with conn:
                    for channel in self.channels:
                        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    self.connected.set()
                    delay = 0.5
                    # Wake everyone once: anything announced while we were away is picked up.
                    self._wake_all()
                    async for note in conn.notifies():
                        self.events[note.channel].set()
                        self.payload_events[(note.channel, note.payload)].set()
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, OSError) as error:
                self.connected.clear()
                log.warning("LISTEN connection lost (%s); reconnecting in %.1f s", error, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)

    def _wake_all(self) -> None:
        for event in (*self.events.values(), *self.payload_events.values()):
            event.set()
