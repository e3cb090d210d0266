"""Telegram's "retry after N seconds" for one bot, honoured by every caller with its token.

Shared by the bot's sender and poller in a process, and kept on the bot's row (`paused_until`),
so that another worker, or this one after a restart, keeps the same quiet.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import psycopg
import psycopg_pool

from botedge import sqlq
from shared.db import Pool
from shared.lifecycle import sleep_unless_stopped

log = logging.getLogger("botedge.pause")
Q = sqlq.Q

Clock = Callable[[], float]


class BotPause:
    def __init__(self, pool: Pool, bot_id: int, clock: Clock = time.monotonic) -> None:
        self.pool = pool
        self.bot_id = bot_id
        self.clock = clock
        self.until = 0.0

    def left(self) -> float:
        return max(0.0, self.until - self.clock())

    async def load(self) -> None:
        """Take over a pause another process (or an earlier run) recorded."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(Q["bot_pause_left"], {"bot_id": self.bot_id})
            row = await cur.fetchone()
        if row is not None and row["left"] > 0:
            self.until = max(self.until, self.clock() + float(row["left"]))
            log.info("bot %d: quiet for %.1f s more, as recorded", self.bot_id, self.left())

    async def extend(self, seconds: float) -> None:
        self.until = max(self.until, self.clock() + seconds)
        log.warning("bot %d: Telegram asked for %.1f s of quiet", self.bot_id, seconds)
        try:
            async with self.pool.connection(timeout=5) as conn:
                await conn.execute(Q["pause_bot"], {"bot_id": self.bot_id, "seconds": seconds})
        except (psycopg.Error, psycopg_pool.PoolTimeout, OSError) as error:
            # This process still honours it; only a restart inside the window would not.
            log.warning("bot %d: could not record the pause: %s", self.bot_id, error)

    async def wait(self, stopping: asyncio.Event | None = None) -> None:
        """Until the pause is over (or `stopping` is set)."""
        while (left := self.left()) > 0:
            if stopping is None:
                await asyncio.sleep(left)
            else:
                await sleep_unless_stopped(stopping, left)
                if stopping.is_set():
                    return
