"""SQL of the outbox: replies queued in an update's transaction, what a sender reads, what it
records after each call, pruning and the gauge. Functions take a connection from
`botedge.db.connection(pool)`."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from botedge import sqlq
from shared.db import Connection

Q = sqlq.Q


@dataclass(frozen=True)
class OutboxRow:
    id: int
    chat_id: int
    method: str
    payload: dict[str, Any]
    attempts: int
    available_at: dt.datetime


async def queue_reply(
    conn: Connection, bot_id: int, chat_id: int, method: str, payload: dict[str, Any], key: str
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


async def pending(conn: Connection, bot_id: int, limit: int) -> list[OutboxRow]:
    cur = await conn.execute(Q["pending_outbox"], {"bot_id": bot_id, "limit": limit})
    return [
        OutboxRow(
            int(row["id"]),
            int(row["chat_id"]),
            str(row["method"]),
            dict(row["payload"]),
            int(row["attempts"]),
            row["available_at"],
        )
        for row in await cur.fetchall()
    ]


async def mark_sent(conn: Connection, row_id: int, message_id: int | None) -> None:
    await conn.execute(Q["mark_sent"], {"id": row_id, "message_id": message_id})


async def mark_failed(conn: Connection, row_id: int, error: str) -> None:
    await conn.execute(Q["mark_failed"], {"id": row_id, "error": error})


async def postpone(conn: Connection, row_id: int, delay: float, error: str) -> None:
    await conn.execute(Q["postpone_send"], {"id": row_id, "delay": delay, "error": error})


async def move_chat(conn: Connection, old_chat_id: int, new_chat_id: int) -> None:
    await conn.execute(Q["move_pending_sends"], {"old": old_chat_id, "new": new_chat_id})


async def prune(conn: Connection, days: int) -> int:
    return (await conn.execute(Q["prune_outbox"], {"days": days})).rowcount


async def depths(conn: Connection) -> dict[int, int]:
    cur = await conn.execute(Q["outbox_gauges"])
    return {int(r["bot_id"]): int(r["depth"]) for r in await cur.fetchall()}
