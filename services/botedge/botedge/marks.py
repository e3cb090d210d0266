"""Sends recorded as sent together (group commit): each lane waits for its own row's record,
and one statement records every row marked while the previous statement ran. Shared by a
worker's senders, so that bots sending at once share the round trips."""

from __future__ import annotations

import asyncio
import logging

from botedge import errors, outbox_store
from botedge.db import connection
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool
from shared.tasks import retrieve

log = logging.getLogger("botedge.marks")


class SentMarks:
    def __init__(self, pool: Pool, clock: Clock = SYSTEM_CLOCK) -> None:
        self.pool = pool
        self.clock = clock
        self._waiting: list[tuple[int, int | None, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def mark(self, row_id: int, message_id: int | None) -> None:
        """Returns once the row is recorded sent; raises `BotedgeError` when the statement
        failed (the caller tries again)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._waiting.append((row_id, message_id, done))
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._write())
            self._writer.add_done_callback(retrieve(log, "marking sends recorded"))
        await done

    async def _write(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            try:
                async with connection(self.pool, timeout=5) as conn:
                    sent = [(r, m) for r, m, _ in batch]
                    await outbox_store.mark_sent_many(conn, sent, self.clock.now())
            except BaseException as error:
                # Every waiter hears of it, stopping included: none is left hanging.
                failure = (
                    error if isinstance(error, errors.BotedgeError) else asyncio.CancelledError()
                )
                for _, _, done in batch:
                    if not done.done():
                        done.set_exception(failure)
                if not isinstance(error, errors.BotedgeError):
                    raise
            else:
                for _, _, done in batch:
                    if not done.done():
                        done.set_result(None)
