"""SQL of the outbox: replies queued in an update's transaction, what a sender reads, what it
records after each call, pruning and the gauge. Functions take a connection from
`botedge.db.connection(pool)`."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from botedge import sqlq
from botedge.ids import BotId, ChatId
from botedge.stats import Counted
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Connection

Q = sqlq.Q


@dataclass(frozen=True)
class Reply:
    """A Bot API call an update's handling decided on; queued in that update's transaction."""

    chat_id: ChatId
    method: str
    payload: dict[str, Any]
    counted: Counted | None = None


@dataclass(frozen=True)
class OutboxRow:
    id: int
    chat_id: int
    method: str
    payload: dict[str, Any]
    attempts: int
    priority: int = 0
    # When it may be sent, on the reader's monotonic clock.
    due: float = 0.0
    broadcast_id: int | None = None


@dataclass(frozen=True)
class Page:
    """Rows of one read and the snapshot it saw."""

    snapshot: str
    rows: list[OutboxRow]


async def queue_reply(
    conn: Connection, bot_id: BotId, chat_id: int, method: str, payload: dict[str, Any], key: str
) -> None:
    """A Bot API call to make, once: `key` names what produced it."""
    await conn.execute(
        Q["insert_outbox"],
        {
            "bot_id": bot_id,
            "chat_id": chat_id,
            "method": method,
            "payload": json.dumps(payload),
            "priority": 0,
            "dedupe_key": key,
        },
    )


async def pending(
    conn: Connection,
    bot_id: BotId,
    limit: int,
    *,
    since: str | None = None,
    after: tuple[int, int] = (-1, 0),
    clock: Clock = SYSTEM_CLOCK,
) -> Page:
    """Unsent rows in (priority, id) order after `after`: all of them, or only those not
    visible in the snapshot `since` of an earlier read."""
    params = {"bot_id": bot_id, "limit": limit, "after_priority": after[0], "after_id": after[1]}
    if since is None:
        cur = await conn.execute(Q["pending_outbox"], params)
    else:
        cur = await conn.execute(Q["new_outbox"], {**params, "since": since})
    found = await cur.fetchall()
    read_at = clock.monotonic()
    return Page(
        str(found[0]["snapshot"]),
        [
            OutboxRow(
                int(row["id"]),
                int(row["chat_id"]),
                str(row["method"]),
                dict(row["payload"]),
                int(row["attempts"]),
                int(row["priority"]),
                read_at + float(row["wait"]),
                row["broadcast_id"],
            )
            for row in found
            if row["id"] is not None
        ],
    )


async def mark_sent_many(
    conn: Connection, sent: list[tuple[int, int | None]], now: dt.datetime
) -> None:
    """Rows sent, each with Telegram's message id: one statement for all."""
    await conn.execute(
        Q["mark_sent_many"],
        {"ids": [row_id for row_id, _ in sent], "message_ids": [m for _, m in sent], "now": now},
    )


async def mark_failed(conn: Connection, row_id: int, error: str) -> None:
    await conn.execute(Q["mark_failed"], {"id": row_id, "error": error})


async def mark_refused(
    conn: Connection, row_id: int, error: str, blocked: bool, now: dt.datetime
) -> None:
    """Failed, and its person marked blocked (or, when not `blocked`, unreachable)."""
    params = {"id": row_id, "error": error, "blocked": blocked, "now": now}
    await conn.execute(Q["mark_refused"], params)


async def postpone(conn: Connection, row_id: int, delay: float, error: str) -> None:
    await conn.execute(Q["postpone_send"], {"id": row_id, "delay": delay, "error": error})


async def move_chat(conn: Connection, old_chat_id: int, new_chat_id: int) -> None:
    await conn.execute(Q["move_pending_sends"], {"old": old_chat_id, "new": new_chat_id})


async def prune(conn: Connection, days: int, now: dt.datetime) -> int:
    return (await conn.execute(Q["prune_outbox"], {"days": days, "now": now})).rowcount


async def depths(conn: Connection) -> dict[int, int]:
    cur = await conn.execute(Q["outbox_gauges"])
    return {int(r["bot_id"]): int(r["depth"]) for r in await cur.fetchall()}
