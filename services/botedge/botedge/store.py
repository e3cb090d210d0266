"""Bot edge database work that is not the claim loop: bots, intake, dead updates."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from botedge import sqlq
from botedge.updates import Incoming
from shared.db import Connection
from shared.secretbox import SecretBox

Q = sqlq.Q


@dataclass(frozen=True)
class BotRecord:
    id: int
    telegram_bot_id: int
    username: str
    token: str
    mode: str
    poll_offset: int


async def insert_update(conn: Connection, bot_id: int, incoming: Incoming) -> bool:
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


async def active_bots(conn: Connection, box: SecretBox) -> list[BotRecord]:
    cur = await conn.execute(Q["active_bots"])
    return [
        BotRecord(
            id=int(row["id"]),
            telegram_bot_id=int(row["telegram_bot_id"]),
            username=str(row["username"]),
            token=box.open(row["token_encrypted"]),
            mode=str(row["mode"]),
            poll_offset=int(row["poll_offset"]),
        )
        for row in await cur.fetchall()
    ]


async def save_bot(
    conn: Connection, box: SecretBox, me: dict[str, Any], token: str, mode: str
) -> tuple[int, str]:
    """Store (or update) a bot whose token getMe accepted; returns its id and webhook secret."""
    webhook_secret = secrets.token_urlsafe(32)
    cur = await conn.execute(
        Q["insert_bot"],
        {
            "telegram_bot_id": int(me["id"]),
            "username": str(me.get("username") or ""),
            "token_encrypted": box.seal(token),
            "webhook_secret_encrypted": box.seal(webhook_secret),
            "mode": mode,
        },
    )
    row = await cur.fetchone()
    if row is None:
        raise RuntimeError("insert_bot returned no row")
    return int(row["id"]), webhook_secret


async def record_bot_error(conn: Connection, bot_id: int, error: str) -> None:
    await conn.execute(
        Q["record_bot_error"], {"bot_id": bot_id, "error": error, "backoff_until": None}
    )


async def activate_bot(conn: Connection, bot_id: int) -> None:
    await conn.execute(Q["activate_bot"], {"bot_id": bot_id})


async def dead_updates(conn: Connection, limit: int = 100) -> list[dict[str, Any]]:
    cur = await conn.execute(Q["dead_updates"], {"limit": limit})
    return [dict(row) for row in await cur.fetchall()]


async def replay(conn: Connection, inbox_id: int) -> int | None:
    """Put a dead update back in line; its bot id, or None when it is not dead."""
    cur = await conn.execute(Q["replay_update"], {"id": inbox_id})
    row = await cur.fetchone()
    return int(row["bot_id"]) if row else None


async def prune(conn: Connection, days: int) -> tuple[int, int]:
    """Delete handled updates and finished sends older than `days`; how many of each."""
    async with conn.transaction():
        inbox = (await conn.execute(Q["prune_inbox"], {"days": days})).rowcount
        outbox = (await conn.execute(Q["prune_outbox"], {"days": days})).rowcount
    return inbox, outbox
