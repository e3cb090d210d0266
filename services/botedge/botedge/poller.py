"""Long polling for bots in polling mode: one poller per bot, under the lease `poll:<bot>`.

The offset moves only in the transaction that stored the batch, so a crash after getUpdates and
before the commit gets the same updates again (and the inbox key drops the repeats).

An offset is not trusted blindly: after a week with no updates Telegram numbers the next one at
random, possibly below the stored offset, where `getUpdates(offset)` would confirm it unseen.
A poller whose bot has been quiet that long asks once without an offset (the earliest updates
Telegram holds), and a batch with ids below the offset starts the offset over from that batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
from typing import Any, Protocol

from botedge import bot_store, errors, inbox_store
from botedge.db import connection
from botedge.ids import BotId
from botedge.leases import Lease
from botedge.metrics import IGNORED_KINDS, POLLED_UPDATES
from botedge.pause import BotPause
from botedge.telegram import BotApi, Conflict, TelegramError, TooManyRequests, Unauthorized
from botedge.updates import ALLOWED_UPDATES, Incoming, MalformedUpdate, other_kind, parse
from shared.backoff import backoff_delay
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool
from shared.lifecycle import sleep_unless_stopped
from shared.listen import Notifier

log = logging.getLogger("botedge.poller")

BACKOFF_START = 5.0
BACKOFF_CAP = 300.0


class PreCheckout(Protocol):
    """What answers a `pre_checkout_query` before it is stored (`stars.PreCheckout`)."""

    async def answer(self, token: str, incoming: Incoming) -> None: ...


class Poller:
    def __init__(
        self,
        pool: Pool,
        api: BotApi,
        notifier: Notifier,
        bot_id: BotId,
        token: str,
        offset: int,
        lease: Lease,
        pause: BotPause,
        poll_timeout: int = 20,
        clock: Clock = SYSTEM_CLOCK,
        pre_checkout: PreCheckout | None = None,
    ) -> None:
        self.pool = pool
        self.api = api
        self.notifier = notifier
        self.bot_id = bot_id
        self.token = token
        self.offset = offset
        self.lease = lease
        self.poll_timeout = poll_timeout
        self.pause = pause
        self.clock = clock
        self.pre_checkout = pre_checkout
        self.failures = 0
        # Ask without an offset until a batch arrives (see the module's docstring).
        self.restart = False

    async def run(self, stopping: asyncio.Event) -> bool:
        """Poll while the lease is ours; True when it ended on a token Telegram refused (no
        poll again until the owner gives the bot another)."""
        await self.pause.load()
        try:
            async with connection(self.pool) as conn:
                self.offset, self.restart = await inbox_store.poll_start(
                    conn, self.bot_id, self.clock.now()
                )
        except errors.BotedgeError as error:
            log.warning("bot %d: could not read the poll offset: %s", self.bot_id, error)
        if self.restart:
            log.warning(
                "bot %d: no update for a week; asking Telegram without offset %d",
                self.bot_id,
                self.offset,
            )
        while not stopping.is_set():
            await self.pause.wait(stopping)
            if stopping.is_set():
                return False
            try:
                if not await self.lease.take_or_renew():
                    return False
            except errors.BotedgeError as error:
                # Still ours until it runs out.
                log.warning("bot %d: could not renew the poll lease: %s", self.bot_id, error)
                if not self.lease.held:
                    return False
            try:
                updates = await self._get_updates(stopping)
                if updates is None:
                    return False
            except TooManyRequests as error:
                await self.pause.extend(error.retry_after or 1.0)
                continue
            except (Conflict, Unauthorized) as error:
                await self._record(error, invalid=isinstance(error, Unauthorized))
                if isinstance(error, Unauthorized):
                    return True
                await self._back_off(stopping)
                continue
            except TelegramError as error:
                await self._record(error)
                await self._back_off(stopping)
                continue
            self.failures = 0
            if isinstance(updates, list) and updates:
                try:
                    await self.store(updates)
                except errors.BotedgeError as error:
                    # The offset did not move: the same updates come again.
                    log.warning("bot %d: could not store polled updates: %s", self.bot_id, error)
                    await self._back_off(stopping)
        return False

    async def _get_updates(self, stopping: asyncio.Event) -> Any:
        """One long poll, abandoned at once on stop (None): nothing is confirmed until the
        offset moves, so Telegram hands the same updates out again."""
        call = asyncio.ensure_future(
            self.api.call(
                self.token,
                "getUpdates",
                {
                    **({} if self.restart else {"offset": self.offset}),
                    "timeout": self.poll_timeout,
                    "allowed_updates": ALLOWED_UPDATES,
                },
                timeout=self.poll_timeout + 10,
            )
        )
        stop = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait({call, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not call.done():
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError, TelegramError):
                await call
            return None
        return call.result()

    async def store(self, updates: list[object]) -> None:
        ids = [
            u["update_id"]
            for u in updates
            if isinstance(u, dict) and isinstance(u.get("update_id"), int)
        ]
        restart = self.restart or any(i < self.offset for i in ids)
        if restart and not self.restart:
            log.warning(
                "bot %d: Telegram's update ids started over (%d, below offset %d)",
                self.bot_id,
                min(ids),
                self.offset,
            )
        highest = -1 if restart else self.offset - 1
        stored = 0
        parsed: list[Incoming] = []
        for raw in updates:
            try:
                parsed.append(parse(raw))
            except MalformedUpdate as error:
                log.warning("bot %d: dropped a malformed polled update: %s", self.bot_id, error)
                if isinstance(raw, dict) and isinstance(raw.get("update_id"), int):
                    highest = max(highest, raw["update_id"])
        if self.pre_checkout is not None:
            # Telegram's 10 s would not wait for the person's queue: answered here, then kept.
            checker = self.pre_checkout
            await asyncio.gather(
                *(
                    checker.answer(self.token, incoming)
                    for incoming in parsed
                    if incoming.kind == "pre_checkout_query"
                )
            )
        async with connection(self.pool) as conn, conn.transaction():
            for incoming in parsed:
                highest = max(highest, incoming.update_id)
                if incoming.kind is None:
                    IGNORED_KINDS.labels(other_kind(incoming.payload)).inc()
                    continue
                stored += await inbox_store.insert_update(conn, self.bot_id, incoming)
            await inbox_store.advance_poll_offset(
                conn, self.bot_id, highest + 1, self.clock.now(), restart=restart
            )
        self.offset = highest + 1
        self.restart = False
        POLLED_UPDATES.inc(stored)
        if stored:
            self.notifier.announce("inbox", str(self.bot_id))

    @property
    def backoff(self) -> float:
        return backoff_delay(self.failures + 1, base=BACKOFF_START, cap=BACKOFF_CAP)

    async def _record(self, error: TelegramError, *, invalid: bool = False) -> None:
        now = self.clock.now()
        until = now + dt.timedelta(seconds=self.backoff)
        description = f"{error.code}: {error.description}"
        log.warning(
            "bot %d: getUpdates failed (%s); backing off %.0f s",
            self.bot_id,
            description,
            self.backoff,
        )
        try:
            async with connection(self.pool) as conn:
                if invalid:
                    await bot_store.mark_token_invalid(conn, self.bot_id, description, now)
                else:
                    await bot_store.record_bot_error(conn, self.bot_id, description, now, until)
        except errors.BotedgeError as db_error:
            log.warning("bot %d: could not record the error: %s", self.bot_id, db_error)

    async def _back_off(self, stopping: asyncio.Event) -> None:
        await sleep_unless_stopped(stopping, self.backoff)
        self.failures += 1
