"""A sender's view of its bot's outbox, in memory: which chat may send next, in O(log n).

Each chat's rows wait in (priority, id) order; only a chat's first row is ever a candidate, so a
chat's messages go one after another. A chat is *ready* when nothing of it is in flight, its
first row is due and its own rate limit allows a message. Among ready chats the one whose first
row has the lowest (priority, id) goes first: replies before broadcasts, older before newer.
Chats not yet ready wait in a second heap ordered by when they will be, so finding the next one
never scans the backlog.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from botedge.outbox_store import OutboxRow
from shared.clock import SYSTEM_CLOCK, Clock


@dataclass
class _Chat:
    rows: list[OutboxRow]
    busy: bool = False
    # Bumped whenever the chat is scheduled anew; heap entries with an older one are stale.
    version: int = 0


class SendQueue:
    def __init__(self, chat_wait: Callable[[int, str], float], clock: Clock = SYSTEM_CLOCK) -> None:
        """`chat_wait(chat_id, method)` is how long the chat's own limit holds a call back."""
        self.chat_wait = chat_wait
        self.clock = clock
        self.chats: dict[int, _Chat] = {}
        self.where: dict[int, int] = {}  # row id -> chat id, for every row held
        self.ready: list[tuple[int, int, int, int]] = []  # (priority, id, chat, version)
        self.waiting: list[tuple[float, int, int]] = []  # (monotonic ready time, chat, version)
        # Rows finished since the current read began: its snapshot may predate their record,
        # and adding them again would send them twice.
        self.finished_in_read: set[int] = set()

    def __len__(self) -> int:
        return len(self.where)

    def __contains__(self, row_id: int) -> bool:
        return row_id in self.where

    def begin_read(self) -> None:
        """Call before each read of the outbox is sent."""
        self.finished_in_read = set()

    def add(self, rows: Iterable[OutboxRow]) -> int:
        """Take rows read from the outbox or just queued; a row already held and not in flight
        is replaced (it may have moved to another chat), one finished since the read began is
        left out. Returns how many were new."""
        touched: set[int] = set()
        new = 0
        for row in rows:
            if row.id in self.finished_in_read:
                continue
            old_chat = self.where.get(row.id)
            if old_chat is not None:
                chat = self.chats[old_chat]
                if chat.busy and chat.rows[0].id == row.id:
                    continue  # in flight: what it sent is about to be recorded
                chat.rows = [r for r in chat.rows if r.id != row.id]
                touched.add(old_chat)
            else:
                new += 1
            chat = self.chats.setdefault(row.chat_id, _Chat([]))
            # Never ahead of a row in flight: `finish` takes the first row as the one sent.
            bisect.insort(chat.rows, row, lo=1 if chat.busy else 0, key=_order)
            self.where[row.id] = row.chat_id
            touched.add(row.chat_id)
        for chat_id in touched:
            self._schedule(chat_id)
        return new

    def keep_only(self, pending: set[int]) -> None:
        """After a full read: drop rows no longer pending (sent or cancelled elsewhere)."""
        self.drop(lambda row: row.id not in pending)

    def drop(self, unwanted: Callable[[OutboxRow], bool]) -> int:
        """Drop the rows `unwanted` picks (a cancelled broadcast's), except one in flight; how
        many went."""
        dropped = 0
        for chat_id in list(self.chats):
            chat = self.chats[chat_id]
            keep = [
                row
                for n, row in enumerate(chat.rows)
                if not unwanted(row) or (n == 0 and chat.busy)
            ]
            if len(keep) == len(chat.rows):
                continue
            kept = {row.id for row in keep}
            for row in chat.rows:
                if row.id not in kept:
                    del self.where[row.id]
                    dropped += 1
            chat.rows = keep
            self._schedule(chat_id)
        return dropped

    def take(self) -> OutboxRow | float | None:
        """The first row of the best ready chat, now marked in flight; else the seconds until a
        chat is ready, or None when nothing is queued."""
        now = self.clock.monotonic()
        while self.waiting and self.waiting[0][0] <= now:
            _, chat_id, version = heapq.heappop(self.waiting)
            self._schedule(chat_id, version)
        while self.ready:
            _, _, chat_id, version = heapq.heappop(self.ready)
            chat = self.chats.get(chat_id)
            if chat is None or chat.version != version or chat.busy or not chat.rows:
                continue
            chat.busy = True
            chat.version += 1
            return chat.rows[0]
        while self.waiting:
            at, chat_id, version = self.waiting[0]
            chat = self.chats.get(chat_id)
            if chat is not None and chat.version == version:
                return max(0.0, at - now)
            heapq.heappop(self.waiting)
        return None

    def finish(self, row: OutboxRow) -> None:
        """The row is recorded (sent or failed): its chat goes on with the next."""
        chat = self.chats[row.chat_id]
        chat.rows.pop(0)
        del self.where[row.id]
        self.finished_in_read.add(row.id)
        chat.busy = False
        self._schedule(row.chat_id)

    def put_back(self, row: OutboxRow, delay: float = 0.0, *, counted: bool = False) -> None:
        """The row stays first in its chat, due again after `delay`; `counted` when the
        attempt was recorded in the outbox."""
        chat = self.chats[row.chat_id]
        chat.rows[0] = replace(
            row,
            attempts=row.attempts + (1 if counted else 0),
            due=max(row.due, self.clock.monotonic() + delay),
        )
        chat.busy = False
        self._schedule(row.chat_id)

    def _schedule(self, chat_id: int, version: int | None = None) -> None:
        chat = self.chats.get(chat_id)
        if chat is None or (version is not None and version != chat.version):
            return
        if not chat.rows:
            if not chat.busy:
                del self.chats[chat_id]
            return
        if chat.busy:
            return
        chat.version += 1
        head = chat.rows[0]
        now = self.clock.monotonic()
        at = max(head.due, now + self.chat_wait(chat_id, head.method))
        if at <= now:
            heapq.heappush(self.ready, (head.priority, head.id, chat_id, chat.version))
        else:
            heapq.heappush(self.waiting, (at, chat_id, chat.version))


def _order(row: OutboxRow) -> tuple[int, int]:
    return (row.priority, row.id)
