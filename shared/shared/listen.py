"""LISTEN/NOTIFY wake-ups. A hint only: whoever waits also polls, so a lost one costs latency.

`Notifier` gathers announcements for up to 5 ms and sends them in one
`SELECT pg_notify(...), pg_notify(...)`, after the caller's commit. `Listener` keeps one
autocommit LISTEN connection per process, reconnecting after failures, sets the waiting
`asyncio.Event`s and hands payloads to subscribers (told, too, when it reconnects).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import LiteralString

import psycopg
from psycopg import sql

from shared.backoff import backoff_delay
from shared.db import Connection, Pool, connect
from shared.tasks import retrieve

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
            self._flush.add_done_callback(retrieve(log, "sending notifications"))

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

    def __init__(
        self,
        database_url: str,
        channels: tuple[LiteralString, ...],
        *,
        check_every: float = 30.0,
        check_timeout: float = 5.0,
    ) -> None:
        self.database_url = database_url
        self.channels = channels
        # A connection that only listens never notices a dead peer: after this long without a
        # notification it is asked `SELECT 1`, and replaced when no answer comes in time.
        self.check_every = check_every
        self.check_timeout = check_timeout
        self.events: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.payload_events: dict[tuple[str, str], asyncio.Event] = defaultdict(asyncio.Event)
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._subscribers: dict[str, list[Callable[[str], None]]] = defaultdict(list)
        self._reconnect_hooks: list[Callable[[], None]] = []

    def event(self, channel: str, payload: str | None = None) -> asyncio.Event:
        if payload is None:
            return self.events[channel]
        return self.payload_events[(channel, payload)]

    def subscribe(self, channel: str, on_payload: Callable[[str], None]) -> None:
        """Call `on_payload` with the payload of every notification on `channel`."""
        if channel not in self.channels:
            raise ValueError(f"{channel!r} is not among the channels listened to")
        self._subscribers[channel].append(on_payload)

    def on_reconnect(self, hook: Callable[[], None]) -> None:
        """Call `hook` each time the LISTEN connection is made anew: what was announced while
        it was down is lost, so state kept from notifications must be started over."""
        self._reconnect_hooks.append(hook)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                await self._listen()
            except asyncio.CancelledError:
                raise
            except (psycopg.Error, OSError, TimeoutError) as error:
                self.connected.clear()
                failures += 1
                delay = backoff_delay(failures, base=0.5, cap=10.0)
                reason = str(error) or type(error).__name__
                log.warning("LISTEN connection lost (%s); reconnecting in %.1f s", reason, delay)
                await asyncio.sleep(delay)
            else:
                failures = 0

    async def _listen(self) -> None:
        conn = await connect(self.database_url, autocommit=True)
        try:
            for channel in self.channels:
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            self.connected.set()
            # Wake everyone once: anything announced while we were away is picked up.
            self._wake_all()
            for hook in self._reconnect_hooks:
                self._call(hook)
            while True:
                async for note in conn.notifies(timeout=self.check_every):
                    self.events[note.channel].set()
                    # Only a payload someone waits for: payloads are unbounded (chat:user).
                    waiting = self.payload_events.get((note.channel, note.payload))
                    if waiting is not None:
                        waiting.set()
                    for on_payload in self._subscribers.get(note.channel, ()):
                        self._call(on_payload, note.payload)
                await self._check(conn)
        finally:
            await conn.close()

    async def _check(self, conn: Connection) -> None:
        """`SELECT 1`, or TimeoutError when no answer comes in time."""
        check = asyncio.ensure_future(conn.execute("SELECT 1"))
        done, _ = await asyncio.wait({check}, timeout=self.check_timeout)
        if check in done:
            check.result()
            return
        # Drop the socket first: cancelling a query in flight would make psycopg try to cancel
        # it on the server, which cannot answer either.
        conn.pgconn.finish()
        check.cancel()
        with contextlib.suppress(asyncio.CancelledError, psycopg.Error):
            await check
        raise TimeoutError(f"no answer to SELECT 1 in {self.check_timeout:.0f} s")

    @staticmethod
    def _call(callback: Callable[..., None], *args: str) -> None:
        try:
            callback(*args)
        except Exception:
            log.exception("a LISTEN callback failed")

    def _wake_all(self) -> None:
        for event in (*self.events.values(), *self.payload_events.values()):
            event.set()
