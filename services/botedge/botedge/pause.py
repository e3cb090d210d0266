"""Telegram's "retry after N seconds" for one bot, honoured by every caller with its token.

Shared by the bot's sender and poller in a process, and kept on the bot's row (`paused_until`),
so that another worker, or this one after a restart, keeps the same quiet.
"""

from __future__ import annotations

import asyncio
import logging

from botedge import bot_store, errors
from botedge.db import connection
from botedge.ids import BotId
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool
from shared.lifecycle import sleep_unless_stopped

log = logging.getLogger("botedge.pause")


class BotPause:
    def __init__(self, pool: Pool, bot_id: BotId, clock: Clock = SYSTEM_CLOCK) -> None:
        self.pool = pool
        self.bot_id = bot_id
        self.clock = clock
        self.until = 0.0

    def left(self) -> float:
        return max(0.0, self.until - self.clock.monotonic())

    async def load(self) -> None:
        """Take over a pause another process (or an earlier run) recorded."""
        try:
            async with connection(self.pool) as conn:
                left = await bot_store.pause_left(conn, self.bot_id)
        except errors.BotedgeError as error:
            # Telegram will say so again if we call inside it.
            log.warning("bot %d: could not read a recorded pause: %s", self.bot_id, error)
            return
        if left > 0:
            self.until = max(self.until, self.clock.monotonic() + left)
            log.info("bot %d: quiet for %.1f s more, as recorded", self.bot_id, self.left())

    async def extend(self, seconds: float) -> None:
        self.until = max(self.until, self.clock.monotonic() + seconds)
        log.warning("bot %d: Telegram asked for %.1f s of quiet", self.bot_id, seconds)
        try:
            async with connection(self.pool, timeout=5) as conn:
                await bot_store.pause_bot(conn, self.bot_id, seconds)
        except errors.BotedgeError as error:
            # This process still honours it; only a restart inside the window would not.
            log.warning("bot %d: could not record the pause: %s", self.bot_id, error)

    async def wait(self, stopping: asyncio.Event | None = None) -> None:
        """Until the pause is over (or `stopping` is set)."""
        while (left := self.left()) > 0:
            if stopping is None:
                await self.clock.sleep(left)
            else:
                await sleep_unless_stopped(stopping, left)
                if stopping.is_set():
                    return
