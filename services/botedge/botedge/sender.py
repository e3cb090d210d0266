"""One sender per bot, under the lease `send:<bot>`, draining its outbox within Telegram's limits.

Replies go before broadcasts; each chat's messages strictly in order; four chats at once. Limits
are kept in memory: 25 messages a second per bot, about 1 a second per private chat (small
bursts), 20 a minute per group. A 429 pauses the whole bot for `retry_after`, in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import psycopg

from botedge import bot_store, errors, outbox_store, uploads
from botedge.buckets import Bucket
from botedge.db import connection
from botedge.ids import BotId
from botedge.leases import Lease
from botedge.marks import SentMarks
from botedge.metrics import SENDS
from botedge.outbox_store import OutboxRow
from botedge.pause import BotPause
from botedge.sendqueue import SendQueue
from botedge.telegram import (
    BadRequest,
    BotApi,
    CircuitOpen,
    Forbidden,
    ServerError,
    TelegramError,
    TooManyRequests,
    Unauthorized,
    unreachable,
)
from shared.backoff import backoff_delay
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Connection, Pool
from shared.lifecycle import sleep_unless_stopped, wait_any
from shared.tasks import retrieve

log = logging.getLogger("botedge.sender")
LANES = 4
# Rows per read, and how many a sender holds in memory before it stops reading more.
FETCH = 500
VIEW_LIMIT = 20_000
# How often a sender reads its whole queue again rather than only what is new.
FULL_READ_EVERY = 30.0
MAX_SEND_ATTEMPTS = 8
# How long in-flight sends get to finish when the sender stops.
LANE_GRACE = 5.0


@dataclass
class Limits:
    per_second: float = 25.0
    private_burst: float = 2.0
    private_rate: float = 1.0
    group_burst: float = 3.0
    group_per_minute: float = 20.0
    clock: Clock = SYSTEM_CLOCK
    overall: Bucket = field(init=False)
    chats: dict[int, Bucket] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.overall = Bucket(self.per_second, self.per_second, self.clock)

    def chat(self, chat_id: int) -> Bucket:
        bucket = self.chats.get(chat_id)
        if bucket is None:
            if chat_id < 0:
                bucket = Bucket(self.group_burst, self.group_per_minute / 60, self.clock)
            else:
                bucket = Bucket(self.private_burst, self.private_rate, self.clock)
            self.chats[chat_id] = bucket
        return bucket

    def chat_wait(self, chat_id: int, method: str) -> float:
        """How long the chat's own limit holds this call back (0 for a non-message)."""
        return self.chat(chat_id).wait_time() if is_message(method) else 0.0

    async def acquire(self, chat_id: int, method: str = "sendMessage") -> None:
        """Wait for a turn: every call spends the bot's overall rate; a message also spends its
        chat's (Telegram's per-chat limits are on messages, not on answering a callback,
        removing a member or making an invite link)."""
        chat = self.chat(chat_id) if is_message(method) else None
        while True:
            wait = max(self.overall.wait_time(), chat.wait_time() if chat else 0.0)
            if wait <= 0:
                self.overall.take()
                if chat is not None:
                    chat.take()
                return
            await self.clock.sleep(wait)


def is_message(method: str) -> bool:
    """A method that puts a message in a chat (or changes one): counted per chat."""
    return method.startswith(_MESSAGE_PREFIXES)


_MESSAGE_PREFIXES = ("send", "copyMessage", "forwardMessage", "editMessage")


class Retry(NamedTuple):
    """A row put back first in its chat, due again after `delay` seconds; `counted` when the
    attempt is recorded in the outbox."""

    delay: float
    counted: bool = False


NOT_SENT = Retry(0.0)
AFTER_ERROR = Retry(1.0)


# A record goes through the pool (with others, in one statement) when that answers within
# RECORD_POOL_WAIT; else it is tried again every RECORD_RETRY_CAP seconds at most, each time on
# a new connection that gives up after RECORD_CONNECT_TIMEOUT. So it lands within about half
# a second of the database's return, well inside PRESENCE_SECONDS, however long the pool takes.
RECORD_POOL_WAIT = 0.5
RECORD_RETRY_CAP = 0.5
RECORD_CONNECT_TIMEOUT = 2

# Records of sends Telegram took, still being written (perhaps after their sender stopped),
# by bot: the bot's next sender in this process reads the outbox only once they are written.
RECORDING: dict[int, set[asyncio.Future[None]]] = {}


class Sender:
    def __init__(
        self,
        pool: Pool,
        api: BotApi,
        bot_id: BotId,
        token: str,
        lease: Lease,
        wakeup: asyncio.Event,
        pause: BotPause,
        limits: Limits | None = None,
        poll_interval: float = 1.0,
        lanes: int = LANES,
        clock: Clock = SYSTEM_CLOCK,
        marks: SentMarks | None = None,
    ) -> None:
        self.pool = pool
        self.marks = marks or SentMarks(pool, clock)
        self.clock = clock
        self.api = api
        self.bot_id = bot_id
        self.token = token
        self.lease = lease
        self.wakeup = wakeup
        self.limits = limits or Limits()
        self.poll_interval = poll_interval
        self.lane_count = lanes
        self.pause = pause
        self.closing = False
        self.stopping = asyncio.Event()
        self.lanes: set[asyncio.Task[None]] = set()
        # The lanes between a call's start and its outcome's record.
        self.on_the_wire: set[asyncio.Task[Any]] = set()
        self.invalid = False
        # What the bot's row says of Telegram failing for it; None at start, not known, so the
        # first send that goes through clears a mark an earlier holder left.
        self.failing_marked: bool | None = None
        self.queue = SendQueue(self.limits.chat_wait, clock)
        # Set when the queue may have a row for a lane: rows read, a chat done, closing.
        self.changed = asyncio.Event()
        # The snapshot of the last complete read (None: read everything), the (priority, id)
        # a read stopped after when it filled a page, and the snapshot its first page saw.
        self.since: str | None = None
        self.after: tuple[int, int] | None = None
        self.reading_since: str | None = None
        self.reading_all: set[int] = set()
        self.full_read_at = 0.0

    # -- main loop ------------------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        """Send while the lease is ours; returns when it is lost, on stop, or on a bad token."""
        self.stopping = stopping
        loop = asyncio.get_running_loop()
        renewer = loop.create_task(self._renew(stopping))
        renewer.add_done_callback(retrieve(log, f"bot {self.bot_id}: the send lease's renewal"))
        try:
            await self._after_earlier_records()
            await self.pause.load()
            if not await self._check_token(stopping):
                return
            for _ in range(self.lane_count):
                lane = loop.create_task(self._lane())
                self.lanes.add(lane)
                lane.add_done_callback(self.lanes.discard)
                lane.add_done_callback(retrieve(log, f"bot {self.bot_id}: a send lane"))
            while self._sending():
                more = False
                try:
                    more = await self._read()
                except errors.BotedgeError as error:
                    log.warning("bot %d: could not read the outbox: %s", self.bot_id, error)
                if not more:
                    await self._wait(stopping)
        except Unauthorized as error:
            await self._token_invalid(error)
        finally:
            # Lanes stop before their next send; one mid-call finishes and records what
            # Telegram answered, so the next holder does not send it again. One waiting for
            # its turn (the rate limits, a pause) is stopped where it waits.
            self.closing = True
            self.changed.set()
            for lane in self.lanes - self.on_the_wire:
                lane.cancel()
            if self.lanes:
                await asyncio.wait(list(self.lanes), timeout=LANE_GRACE)
            renewer.cancel()
            for lane in list(self.lanes):
                lane.cancel()
            await asyncio.gather(renewer, *self.lanes, return_exceptions=True)

    async def _after_earlier_records(self) -> None:
        """Until the records an earlier sender of this bot left writing (the database was away
        when Telegram answered) are written: before then their rows look unsent, and reading
        the outbox would send them again."""
        while (writing := RECORDING.get(self.bot_id)) and self._sending():
            await asyncio.wait(set(writing), timeout=0.5)

    def hand_over(self) -> None:
        """Stop as on a stop signal, for another worker to take the bot: no new send starts,
        one mid-call finishes and is recorded, then `run` returns."""
        self.closing = True
        self.changed.set()
        self.wakeup.set()

    def _sending(self) -> bool:
        if not self.closing and not self.lease.held:
            # Not trusted even for a moment (the database away): this sender is over, its lanes
            # with it. A renewal that comes back later must not find the loop reading with no
            # lane left to send; the next sender starts once the lease is ours again.
            self.closing = True
            self.changed.set()
        return not self.closing and not self.stopping.is_set() and not self.invalid

    async def _read(self) -> bool:
        """Bring the in-memory queue up to date with one page; True when more pages wait.

        Normally only what committed since the last read; every FULL_READ_EVERY seconds all of
        it, which also drops rows finished or moved elsewhere."""
        if len(self.queue) >= VIEW_LIMIT:
            return False
        now = self.clock.monotonic()
        if self.after is None and now >= self.full_read_at:
            self.since = None
            self.reading_all = set()
            self.full_read_at = now + FULL_READ_EVERY
        self.queue.begin_read()
        async with connection(self.pool) as conn:
            page = await outbox_store.pending(
                conn,
                self.bot_id,
                FETCH,
                since=self.since,
                after=self.after or (-1, 0),
                clock=self.clock,
            )
        if self.after is None:
            self.reading_since = page.snapshot
        if self.since is None:
            self.reading_all.update(row.id for row in page.rows)
        if self.queue.add(page.rows):
            self.changed.set()
        if len(page.rows) == FETCH:
            last = page.rows[-1]
            self.after = (last.priority, last.id)
            return True
        if self.since is None:
            self.queue.keep_only(self.reading_all)
            self.reading_all = set()
        self.since, self.after = self.reading_since, None
        return False

    def offer(self, rows: list[OutboxRow], earlier: list[int]) -> bool:
        """Rows this worker has just committed to the outbox, handed over without a read or a
        wake-up. Taken only when this sender is sending, has finished a read of the whole
        queue and is not in another, and holds every row in `earlier` (the unsent rows queued
        before these for the same chats, perhaps by another worker): otherwise a read could
        bring an older row of a chat after a newer one was sent. False: the caller announces
        them instead."""
        if not self._sending() or self.since is None:
            return False
        if any(row_id not in self.queue for row_id in earlier):
            return False
        if self.queue.add(rows):
            self.changed.set()
        return True

    async def _check_token(self, stopping: asyncio.Event) -> bool:
        """getMe before the first send, like any call: quiet when told, back off on failures.
        False when the sender should stop (stop asked, lease gone)."""
        failures = 0
        while not stopping.is_set() and self.lease.held:
            await self.pause.wait(stopping)
            if stopping.is_set():
                return False
            try:
                await self.api.call(self.token, "getMe")
                return True
            except TooManyRequests as error:
                await self.pause.extend(error.retry_after or 1.0)
            except Unauthorized:
                raise
            except TelegramError as error:
                failures += 1
                delay = max(backoff_delay(failures, base=1.0, cap=60.0), error.retry_after or 0)
                log.warning(
                    "bot %d: getMe failed (%s); trying again in %.1f s",
                    self.bot_id,
                    error.description or error.code,
                    delay,
                )
                await sleep_unless_stopped(stopping, delay)
        return False

    async def _renew(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            await asyncio.sleep(self.lease.renew_every)
            try:
                if not await self.lease.take_or_renew():
                    log.warning("bot %d: send lease lost; stopping at once", self.bot_id)
                    return
            except errors.BotedgeError as error:
                # Still ours until it runs out; sends stop by themselves if it does.
                log.warning("bot %d: could not renew send lease (%s)", self.bot_id, error)

    async def _wait(self, stopping: asyncio.Event) -> None:
        """Until a wake-up, a stop, or the poll interval."""
        await wait_any(self.poll_interval, self.wakeup, stopping)
        self.wakeup.clear()

    async def _lane(self) -> None:
        """Send the first row of whichever chat is ready, one at a time, until the sender stops."""
        while self._sending():
            item = self.queue.take()
            if not isinstance(item, OutboxRow):
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), item)
                continue
            retry: Retry | None = AFTER_ERROR
            try:
                retry = await self._send(item)
            except Exception:
                log.exception("bot %d: sending to a chat failed", self.bot_id)
            finally:
                if retry is None:
                    self.queue.finish(item)
                else:
                    self.queue.put_back(item, retry.delay, counted=retry.counted)
                self.changed.set()

    async def _send(self, row: OutboxRow) -> Retry | None:
        """Send one row. None when its outcome is recorded and the chat goes on; a `Retry`
        when the row stays first in its chat."""
        await self.limits.acquire(row.chat_id, row.method)
        await self.pause.wait(self.stopping)
        # Telegram failing for this bot: the lanes wait here, the rows stay in the outbox.
        while (closed := self.api.closed_for(self.token)) and self._sending():
            await self._mark_failing(True)
            await sleep_unless_stopped(self.stopping, closed)
        if not self._sending():
            return NOT_SENT
        lane = asyncio.current_task()
        if lane is not None:
            self.on_the_wire.add(lane)
        try:
            return await self._call(row)
        finally:
            self.on_the_wire.discard(lane)

    async def _call(self, row: OutboxRow) -> Retry | None:
        """The call to Telegram and the record of what it answered."""
        try:
            params, files = uploads.split(row.payload)
        except uploads.BadUpload as error:
            SENDS.labels("400").inc()
            await self._record(row, outbox_store.mark_failed, str(error))
            return None
        try:
            result = await self.api.call(self.token, row.method, params, files=files or None)
        except TooManyRequests as error:
            SENDS.labels("429").inc()
            await self.pause.extend(error.retry_after or 1.0)
            return NOT_SENT
        except CircuitOpen as error:
            # Not called: parked, not a try.
            SENDS.labels("parked").inc()
            return Retry(error.retry_after or 0.5, counted=False)
        except Unauthorized as error:
            await self._token_invalid(error)
            return NOT_SENT
        except Forbidden as error:
            SENDS.labels("403").inc()
            blocked = not unreachable(error.description)
            await self._record(
                row, outbox_store.mark_refused, error.description, blocked, self.clock.now()
            )
            return None
        except BadRequest as error:
            SENDS.labels("400").inc()
            if error.not_modified:
                await self._record_sent(row, None)
            elif unreachable(error.description):
                await self._record(
                    row, outbox_store.mark_refused, error.description, False, self.clock.now()
                )
            else:
                await self._record(row, outbox_store.mark_failed, error.description)
            return None
        except (ServerError, TelegramError) as error:
            SENDS.labels("5xx").inc()
            if row.attempts + 1 >= MAX_SEND_ATTEMPTS:
                await self._record(row, outbox_store.mark_failed, error.description)
                return None
            delay = backoff_delay(row.attempts + 1, base=0.5, cap=60.0)
            await self._record(row, outbox_store.postpone, delay, error.description)
            return Retry(delay, counted=True)
        SENDS.labels("sent").inc()
        await self._mark_failing(False)
        message_id = result.get("message_id") if isinstance(result, dict) else None
        await self._record_sent(row, message_id)
        return None

    async def _mark_failing(self, failing: bool) -> None:
        """Say on the bot's row that Telegram is failing for it (its breaker opened), or no
        longer: for the panel's dashboard. Best effort: the next change tries again."""
        if self.failing_marked == failing:
            return
        self.failing_marked = failing
        since = self.api.breaker(self.token).opened_at or self.clock.now()
        try:
            async with connection(self.pool, timeout=5) as conn:
                if failing:
                    await bot_store.mark_telegram_failing(conn, self.bot_id, since)
                else:
                    await bot_store.clear_telegram_failing(conn, self.bot_id)
        except errors.BotedgeError as error:
            self.failing_marked = None
            log.warning(
                "bot %d: could not record Telegram failing=%s: %s", self.bot_id, failing, error
            )

    def drop_broadcast(self, broadcast_id: int) -> None:
        """A cancelled broadcast's rows leave the queue (one in flight still finishes)."""
        if self.queue.drop(lambda row: row.broadcast_id == broadcast_id):
            self.changed.set()

    async def _record_sent(self, row: OutboxRow, message_id: int | None) -> None:
        async def alone(conn: Connection) -> None:
            await outbox_store.mark_sent_many(conn, [(row.id, message_id)], self.clock.now())

        await self._until_recorded(row, lambda: self.marks.mark(row.id, message_id), alone)

    async def _record(
        self, row: OutboxRow, outcome: Callable[..., Awaitable[None]], *args: Any
    ) -> None:
        async def write() -> None:
            async with connection(self.pool, timeout=5) as conn:
                await outcome(conn, row.id, *args)

        async def alone(conn: Connection) -> None:
            await outcome(conn, row.id, *args)

        await self._until_recorded(row, write, alone)

    async def _until_recorded(
        self,
        row: OutboxRow,
        write: Callable[[], Awaitable[None]],
        alone: Callable[[Connection], Awaitable[None]],
    ) -> None:
        """Record what Telegram answered, whatever it takes: until it is recorded the row looks
        unsent, and the next lane (or the next holder) would send it again. The lane waits
        here, and takes nothing else, until the database answers. The record goes on when the
        sender stops meanwhile (its lease no longer trusted while the database is away): it is
        written as soon as the database answers, ahead of another holder's read."""
        recording = asyncio.ensure_future(self._write_until_done(row, write, alone))
        writing = RECORDING.setdefault(self.bot_id, set())
        writing.add(recording)
        recording.add_done_callback(writing.discard)
        recording.add_done_callback(retrieve(log, f"bot {self.bot_id}: recording send {row.id}"))
        await asyncio.shield(recording)

    async def _write_until_done(
        self,
        row: OutboxRow,
        write: Callable[[], Awaitable[None]],
        alone: Callable[[Connection], Awaitable[None]],
    ) -> None:
        """`write` through the pool; when that fails or waits (the database away), `alone`
        again and again on a connection of its own: after the database is back the pool's
        reconnection backs off for seconds (1, 2, 4 s), and a write waiting on it for a
        connection waits as long, longer than the PRESENCE_SECONDS after which another worker
        may judge this one gone and read the row as unsent."""
        failures = 0
        while True:
            try:
                if failures == 0:
                    await asyncio.wait_for(write(), RECORD_POOL_WAIT)
                else:
                    await self._write_alone(alone)
                if failures:
                    log.info(
                        "bot %d: recorded send %d after %d tries", self.bot_id, row.id, failures + 1
                    )
                return
            except (errors.BotedgeError, psycopg.Error, OSError, TimeoutError) as error:
                failures += 1
                delay = backoff_delay(failures, base=0.1, cap=RECORD_RETRY_CAP)
                log.warning(
                    "bot %d: could not record send %d (%s); retrying in %.1f s",
                    self.bot_id,
                    row.id,
                    error,
                    delay,
                )
                await self.clock.sleep(delay)

    async def _write_alone(self, alone: Callable[[Connection], Awaitable[None]]) -> None:
        conninfo, settings = self.pool.conninfo, self.pool.kwargs
        # shared.db.create_pool gives both as values, not as functions.
        if not isinstance(conninfo, str) or not isinstance(settings, dict):
            raise TypeError("the pool's connection settings are not plain values")
        kwargs = {**settings, "connect_timeout": RECORD_CONNECT_TIMEOUT}
        conn = await Connection.connect(conninfo, **kwargs)
        async with conn:
            await alone(conn)

    async def _token_invalid(self, error: TelegramError) -> None:
        self.invalid = True
        log.error(
            "bot %d: token rejected by Telegram (%s); sender stopped",
            self.bot_id,
            error.description,
        )
        try:
            async with connection(self.pool) as conn:
                await bot_store.mark_token_invalid(
                    conn, self.bot_id, f"{error.code}: {error.description}", self.clock.now()
                )
        except errors.BotedgeError as db_error:
            # The next getMe (this worker's or another's) finds the token dead again.
            log.warning("bot %d: could not mark the token invalid: %s", self.bot_id, db_error)
