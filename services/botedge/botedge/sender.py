"""One sender per bot, under the lease `send:<bot>`, draining its outbox within Telegram's limits.

Replies go before broadcasts; each chat's messages strictly in order; four chats at once. Limits
are kept in memory: 25 messages a second per bot, about 1 a second per private chat (small
bursts), 20 a minute per group. A 429 pauses the whole bot for `retry_after`, in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from botedge import bot_store, errors, outbox_store, uploads
from botedge.buckets import Bucket
from botedge.db import connection
from botedge.leases import Lease
from botedge.metrics import SENDS
from botedge.outbox_store import OutboxRow
from botedge.pause import BotPause
from botedge.telegram import (
    BadRequest,
    BotApi,
    Forbidden,
    ServerError,
    TelegramError,
    TooManyRequests,
    Unauthorized,
)
from shared.backoff import backoff_delay
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool
from shared.lifecycle import sleep_unless_stopped

log = logging.getLogger("botedge.sender")
LANES = 4
FETCH = 500
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


class Sender:
    def __init__(
        self,
        pool: Pool,
        api: BotApi,
        bot_id: int,
        token: str,
        lease: Lease,
        wakeup: asyncio.Event,
        pause: BotPause,
        limits: Limits | None = None,
        poll_interval: float = 1.0,
        lanes: int = LANES,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.pool = pool
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
        self.busy: set[int] = set()
        self.lane_ended: dict[int, float] = {}
        self.lanes: set[asyncio.Task[None]] = set()
        self.invalid = False

    # -- main loop ------------------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        """Send while the lease is ours; returns when it is lost, on stop, or on a bad token."""
        self.stopping = stopping
        renewer = asyncio.get_running_loop().create_task(self._renew(stopping))
        try:
            await self.pause.load()
            if not await self._check_token(stopping):
                return
            while not stopping.is_set() and self.lease.held and not self.invalid:
                try:
                    launched = await self._launch_lanes()
                except errors.BotedgeError as error:
                    log.warning("bot %d: could not read the outbox: %s", self.bot_id, error)
                    launched = False
                if not launched:
                    await self._wait(stopping)
        except Unauthorized as error:
            await self._token_invalid(error)
        finally:
            # Lanes stop before their next send; one mid-call finishes and records what
            # Telegram answered, so the next holder does not send it again.
            self.closing = True
            if self.lanes:
                await asyncio.wait(list(self.lanes), timeout=LANE_GRACE)
            renewer.cancel()
            for lane in list(self.lanes):
                lane.cancel()
            await asyncio.gather(renewer, *self.lanes, return_exceptions=True)

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
                delay = backoff_delay(failures, base=1.0, cap=60.0)
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
        """Until a lane ends, a wake-up, a stop, or the poll interval."""
        waiters = [
            asyncio.ensure_future(self.wakeup.wait()),
            asyncio.ensure_future(stopping.wait()),
        ]
        try:
            await asyncio.wait(
                [*self.lanes, *waiters],
                timeout=self.poll_interval,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            for waiter in waiters:
                waiter.cancel()
        # Whatever woke us, the next step reads the outbox afresh.
        self.wakeup.clear()

    async def _launch_lanes(self) -> bool:
        free = self.lane_count - len(self.lanes)
        if free <= 0:
            return False
        await self.pause.wait(self.stopping)
        fetched_at = self.clock.monotonic()
        if len(self.lane_ended) > 10_000:
            self.lane_ended = {c: t for c, t in self.lane_ended.items() if t > fetched_at - 60}
        async with connection(self.pool) as conn:
            rows = await outbox_store.pending(conn, self.bot_id, FETCH)
        by_chat: OrderedDict[int, list[OutboxRow]] = OrderedDict()
        for row in rows:
            by_chat.setdefault(row.chat_id, []).append(row)
        now = self.clock.now()
        launched = False
        for chat_id, chat_rows in by_chat.items():
            if free <= 0:
                break
            # A chat whose first row is still waiting for a retry waits whole: order holds.
            if chat_id in self.busy or chat_rows[0].available_at > now:
                continue
            # Rows read before this chat's last lane ended may since have been sent.
            if self.lane_ended.get(chat_id, 0.0) >= fetched_at:
                continue
            self.busy.add(chat_id)
            lane = asyncio.get_running_loop().create_task(self._lane(chat_id, chat_rows))
            self.lanes.add(lane)
            lane.add_done_callback(self.lanes.discard)
            free -= 1
            launched = True
        return launched

    async def _lane(self, chat_id: int, rows: list[OutboxRow]) -> None:
        try:
            for row in rows:
                if not await self._send(row):
                    return
        except Exception:
            log.exception("bot %d: sending to a chat failed", self.bot_id)
        finally:
            self.lane_ended[chat_id] = self.clock.monotonic()
            self.busy.discard(chat_id)

    async def _send(self, row: OutboxRow) -> bool:
        """Send one row; True to go on with the chat's next row."""
        await self.limits.acquire(row.chat_id, row.method)
        await self.pause.wait(self.stopping)
        if self.closing or self.stopping.is_set() or not self.lease.held or self.invalid:
            return False
        try:
            params, files = uploads.split(row.payload)
        except uploads.BadUpload as error:
            SENDS.labels("400").inc()
            await self._record(row, outbox_store.mark_failed, str(error))
            return True
        try:
            result = await self.api.call(self.token, row.method, params, files=files or None)
        except TooManyRequests as error:
            SENDS.labels("429").inc()
            await self.pause.extend(error.retry_after or 1.0)
            return False
        except Unauthorized as error:
            await self._token_invalid(error)
            return False
        except Forbidden as error:
            SENDS.labels("403").inc()
            await self._record(row, outbox_store.mark_failed, error.description)
            if row.chat_id > 0:
                with contextlib.suppress(errors.BotedgeError):
                    async with connection(self.pool) as conn:
                        await bot_store.set_blocked(conn, self.bot_id, row.chat_id, True)
            return True
        except BadRequest as error:
            SENDS.labels("400").inc()
            if error.not_modified:
                await self._record(row, outbox_store.mark_sent, None)
            else:
                await self._record(row, outbox_store.mark_failed, error.description)
            return True
        except (ServerError, TelegramError) as error:
            SENDS.labels("5xx").inc()
            if row.attempts + 1 >= MAX_SEND_ATTEMPTS:
                await self._record(row, outbox_store.mark_failed, error.description)
                return True
            delay = backoff_delay(row.attempts + 1, base=0.5, cap=60.0)
            await self._record(row, outbox_store.postpone, delay, error.description)
            return False
        SENDS.labels("sent").inc()
        message_id = result.get("message_id") if isinstance(result, dict) else None
        await self._record(row, outbox_store.mark_sent, message_id)
        return True

    async def _record(
        self, row: OutboxRow, outcome: Callable[..., Awaitable[None]], *args: Any
    ) -> None:
        """Record what Telegram answered, whatever it takes: until it is recorded the row looks
        unsent, and the next lane (or the next holder) would send it again. The lane waits
        here, and takes nothing else, until the database answers."""
        failures = 0
        while True:
            try:
                async with connection(self.pool, timeout=5) as conn:
                    await outcome(conn, row.id, *args)
                if failures:
                    log.info(
                        "bot %d: recorded send %d after %d tries", self.bot_id, row.id, failures + 1
                    )
                return
            except errors.BotedgeError as error:
                failures += 1
                delay = backoff_delay(failures, base=0.1, cap=5.0)
                log.warning(
                    "bot %d: could not record send %d (%s); retrying in %.1f s",
                    self.bot_id,
                    row.id,
                    error,
                    delay,
                )
                await self.clock.sleep(delay)

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
                    conn, self.bot_id, f"{error.code}: {error.description}"
                )
        except errors.BotedgeError as db_error:
            # The next getMe (this worker's or another's) finds the token dead again.
            log.warning("bot %d: could not mark the token invalid: %s", self.bot_id, db_error)
