"""SQL of the inbox: intake (webhook and polling), the claim and its outcomes, dead updates,
pruning and the gauges. Functions take a connection from `botedge.db.connection(pool)`."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import AsyncCursor
from psycopg.types.json import Jsonb

from botedge import sqlq
from botedge.ids import BotId
from botedge.outbox_store import OutboxRow, Reply, queue_reply
from botedge.updates import InboxRow, Incoming
from shared.db import Connection, pipelined_transaction

Q = sqlq.Q


# -- intake -------------------------------------------------------------------------------


async def insert_update(conn: Connection, bot_id: BotId, incoming: Incoming) -> bool:
    """True when the update is new; False for a redelivery."""
    cur = await conn.execute(
        Q["insert_update"],
        {
            "bot_id": bot_id,
            "update_id": incoming.update_id,
            "chat_key": incoming.chat_key,
            "kind": incoming.kind,
            "payload": incoming.as_json(),
        },
    )
    return cur.rowcount == 1


async def poll_start(conn: Connection, bot_id: BotId, now: dt.datetime) -> tuple[int, bool]:
    """The stored offset, and whether it is stale (no update for a week)."""
    cur = await conn.execute(Q["poll_start"], {"bot_id": bot_id, "now": now})
    row = await cur.fetchone()
    return (0, False) if row is None else (int(row["poll_offset"]), bool(row["stale"]))


async def advance_poll_offset(
    conn: Connection, bot_id: BotId, offset: int, now: dt.datetime, *, restart: bool = False
) -> None:
    """In the transaction that stored the batch: the offset moves only past committed updates;
    `restart` sets it even below the stored one (Telegram's numbering started over)."""
    params = {"bot_id": bot_id, "offset": offset, "restart": restart, "now": now}
    await conn.execute(Q["advance_poll_offset"], params)


# -- the claim ----------------------------------------------------------------------------


# How long a fresh update of a bot another worker sends for is left to that worker.
AFFINITY_SECONDS = 0.5


async def claim(
    conn: Connection,
    limit: int,
    lock_seconds: float,
    holder: str,
    own: list[int] | None = None,
    affinity: float = AFFINITY_SECONDS,
) -> list[InboxRow] | None:
    """Up to `limit` updates, each the head of its person's queue: the bots in `own` first,
    another worker's bots' left to it for `affinity` seconds (0: arrival order, any bot's).
    None when another claim raced us for a person (the unique index `inbox_one_in_hand` kept
    the two apart): claim again at once."""
    params = {
        "limit": limit,
        "lock_seconds": lock_seconds,
        "holder": holder,
        "own": own or [],
        "fresh": affinity,
    }
    try:
        # One round trip: BEGIN, the plan's pin, the claim and COMMIT.
        async with pipelined_transaction(conn):
            await conn.execute(Q["claim_plan"])
            cur = await conn.execute(Q["claim_updates"], params)
        rows = await cur.fetchall()
    except psycopg.errors.UniqueViolation:
        return None
    return [InboxRow.from_row(row) for row in rows]


# The SQLSTATE of a finish whose claim was taken over.
CLAIM_LOST = "GH001"


def claim_lost(error: BaseException) -> bool:
    """Whether a failed transaction failed because its claim was taken over."""
    cause = error.__cause__ if isinstance(error.__cause__, psycopg.Error) else error
    return isinstance(cause, psycopg.Error) and cause.sqlstate == CLAIM_LOST


@dataclass(frozen=True)
class Finished:
    """A finish sent; what it found is known once the transaction has committed (in pipeline
    mode the answer comes back with COMMIT's, in the same round trip)."""

    cursor: AsyncCursor[dict[str, Any]]
    replies: Sequence[Reply]

    async def read(self) -> tuple[list[OutboxRow], list[int], bool]:
        """The replies queued by this finish as outbox rows, due now; the unsent rows queued
        before them for the same chats; whether the person has another update waiting. A reply
        already in the outbox under its key is left out: whoever queued it announced it.
        Called after COMMIT, the answer is in hand and this does not wait on the connection."""
        found = await self.cursor.fetchone()
        if found is None:
            return [], [], False
        queued = [
            OutboxRow(
                int(row_id),
                self.replies[n].chat_id,
                self.replies[n].method,
                self.replies[n].payload,
                0,
            )
            for row_id, n in zip(found["ids"], found["places"], strict=True)
        ]
        return queued, [int(i) for i in found["earlier"]], bool(found["more"])


# A finish that records no person (bot_store.person_params gives the other).
NO_PERSON: dict[str, Any] = dict.fromkeys(
    ("telegram_user_id", "username", "first_name", "last_name", "language_code", "counted", "at")
) | {"met": False, "started": False}


async def finish(
    conn: Connection,
    row: InboxRow,
    now: dt.datetime,
    replies: Sequence[Reply] = (),
    person: dict[str, Any] | None = None,
) -> Finished:
    """Compare-and-set on the claim, queueing `replies` in the outbox in the same statement,
    each once under `inbox:<id>:<n>`, and writing the statistics event each stands for; with
    `person` (`bot_store.person_params`), recording the update's person as well, to whom an
    event without a person belongs. When the claim was taken over the statement fails
    (`claim_lost`), in pipeline mode when the transaction commits, and it all rolls back."""
    queued = [
        {
            "chat_id": reply.chat_id,
            "method": reply.method,
            "payload": reply.payload,
            "dedupe_key": f"inbox:{row.id}:{n}",
        }
        for n, reply in enumerate(replies)
    ]
    events = [
        {
            "at": reply.counted.at.isoformat(),
            "kind": reply.counted.kind,
            "person_id": reply.counted.person_id,
            "content_id": reply.counted.content_id,
        }
        for reply in replies
        if reply.counted is not None
    ]
    cursor = await conn.execute(
        Q["finish_with_replies"],
        {
            **row.claim,
            **(person or NO_PERSON),
            "now": now,
            "replies": Jsonb(queued),
            "events": Jsonb(events),
            "bot_id": row.bot_id,
            "chats": sorted({reply.chat_id for reply in replies}),
        },
    )
    return Finished(cursor, replies)


async def retry(
    conn: Connection,
    row: InboxRow,
    error: str,
    delay: float,
    *,
    parked: bool = False,
    notice: str | None = None,
) -> bool:
    """Back to waiting for `delay` seconds; `parked`: nothing was tried, so no try is spent.
    With a `notice`, the person is told it in the same transaction, once per update under
    `waiting:<id>`; True when that queued a message now."""
    params = {**row.claim, "error": error, "delay": delay, "give_back": int(parked)}
    if notice is None or row.told_waiting:
        # The usual retry (a parked one many times a second in an outage): one statement.
        await conn.execute(Q["retry_update"], params)
        return False
    async with conn.transaction():
        payload = {"chat_id": row.chat_key, "text": notice}
        cur = await conn.execute(
            Q["tell_waiting"],
            {**row.claim, "payload": Jsonb(payload), "dedupe_key": f"waiting:{row.id}"},
        )
        await conn.execute(Q["retry_update"], params)
    return cur.rowcount == 1


async def bury(
    conn: Connection, row: InboxRow, error: str, now: dt.datetime, *, notice: str | None = None
) -> bool:
    """Dead. With a `notice`, the person is told it in the same transaction, once under
    `gave-up:<id>`; True when that queued a message."""
    async with conn.transaction():
        cur = await conn.execute(Q["bury_update"], {**row.claim, "error": error, "now": now})
        if notice is None or cur.rowcount != 1:
            return False
        payload = {"chat_id": row.chat_key, "text": notice}
        await queue_reply(
            conn, row.bot_id, row.chat_key, "sendMessage", payload, f"gave-up:{row.id}"
        )
    return True


# -- dead updates, pruning, gauges --------------------------------------------------------


async def dead_updates(conn: Connection, limit: int = 100) -> list[dict[str, Any]]:
    cur = await conn.execute(Q["dead_updates"], {"limit": limit})
    return [dict(row) for row in await cur.fetchall()]


async def replay(conn: Connection, inbox_id: int) -> int | None:
    """Put a dead update back in line; its bot id, or None when it is not dead."""
    cur = await conn.execute(Q["replay_update"], {"id": inbox_id})
    row = await cur.fetchone()
    return int(row["bot_id"]) if row else None


async def prune(conn: Connection, days: int, now: dt.datetime) -> int:
    return (await conn.execute(Q["prune_inbox"], {"days": days, "now": now})).rowcount


@dataclass(frozen=True)
class QueueGauge:
    bot_id: BotId
    depth: int
    oldest_age: float


async def queue_gauges(conn: Connection) -> list[QueueGauge]:
    cur = await conn.execute(Q["queue_gauges"])
    return [
        QueueGauge(BotId(int(r["bot_id"])), int(r["depth"]), float(r["oldest_age"]))
        for r in await cur.fetchall()
    ]


async def dead_counts(conn: Connection) -> dict[int, int]:
    cur = await conn.execute(Q["dead_count"])
    return {int(r["bot_id"]): int(r["dead"]) for r in await cur.fetchall()}


async def give_back(conn: Connection, claims: dict[int, uuid.UUID]) -> int:
    """Each claim, fenced by its token, claimable again now; how many were still ours."""
    cur = await conn.execute(
        Q["give_back_claims"],
        {"ids": list(claims), "tokens": [claims[i] for i in claims]},
    )
    return len(await cur.fetchall())
