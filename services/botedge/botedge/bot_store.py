"""SQL about bots and the people and chats they meet: bots, leases, pauses, people, channels.

Every function takes a connection from `botedge.db.connection(pool)`.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass
from typing import Any

from botedge import errors, sqlq
from botedge.ids import BotId, PersonId
from shared.db import Connection
from shared.secretbox import SecretBox

Q = sqlq.Q

# Accounts Telegram puts in `from` that are not people: the service account that forwards
# channel posts to linked groups, the stand-in for anonymous group admins, and the stand-in for
# messages sent on behalf of a channel.
NOT_PEOPLE = frozenset({777000, 1087968824, 136817688})


async def _one(conn: Connection, name: str, params: dict[str, Any]) -> dict[str, Any] | None:
    cur = await conn.execute(Q[name], params)
    row = await cur.fetchone()
    return dict(row) if row is not None else None


# -- bots ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BotRecord:
    id: BotId
    telegram_bot_id: int
    username: str
    token: str
    mode: str
    poll_offset: int


@dataclass(frozen=True)
class WebhookBot:
    status: str
    webhook_secret_encrypted: str
    # Opened only to answer a pre-checkout query at intake.
    token_encrypted: str


async def webhook_bot(conn: Connection, bot_id: BotId) -> WebhookBot | None:
    row = await _one(conn, "bot_for_webhook", {"bot_id": bot_id})
    if row is None:
        return None
    return WebhookBot(
        str(row["status"]), str(row["webhook_secret_encrypted"]), str(row["token_encrypted"])
    )


async def active_bots(conn: Connection, box: SecretBox) -> list[BotRecord]:
    cur = await conn.execute(Q["active_bots"])
    return [
        BotRecord(
            id=BotId(int(row["id"])),
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
) -> tuple[BotId, str]:
    """Store (or update) a bot whose token getMe accepted, paused until `activate_bot`; returns
    its id and webhook secret."""
    webhook_secret = secrets.token_urlsafe(32)
    row = await _one(
        conn,
        "insert_bot",
        {
            "telegram_bot_id": int(me["id"]),
            "username": str(me.get("username") or ""),
            "token_encrypted": box.seal(token),
            "webhook_secret_encrypted": box.seal(webhook_secret),
            "mode": mode,
        },
    )
    if row is None:
        raise errors.StoreError("insert_bot returned no row")
    return BotId(int(row["id"])), webhook_secret


@dataclass(frozen=True)
class BotToPoint:
    """A bot as pointing its updates here (or stopping them) needs it."""

    id: BotId
    mode: str
    status: str
    token_encrypted: str
    webhook_secret_encrypted: str

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> BotToPoint:
        return cls(
            BotId(int(row["id"])),
            str(row["mode"]),
            str(row["status"]),
            str(row["token_encrypted"]),
            str(row["webhook_secret_encrypted"]),
        )


@dataclass(frozen=True)
class BotState:
    """A bot as the owner's change left it: the api's answer."""

    id: BotId
    telegram_bot_id: int
    username: str
    mode: str
    status: str

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> BotState:
        return cls(
            BotId(int(row["id"])),
            int(row["telegram_bot_id"]),
            str(row["username"]),
            str(row["mode"]),
            str(row["status"]),
        )


async def bot_to_point(conn: Connection, bot_id: BotId) -> BotToPoint | None:
    row = await _one(conn, "bot_to_point", {"bot_id": bot_id})
    return None if row is None else BotToPoint.from_row(row)


async def change_bot(
    conn: Connection, change: str, bot_id: BotId, now: dt.datetime | None = None
) -> BotState | None:
    """`owner_pause_bot`, `owner_resume_bot` or `owner_remove_bot`: the bot as it is after,
    or None if that change does not apply to it."""
    row = await _one(conn, change, {"bot_id": bot_id, "now": now})
    return None if row is None else BotState.from_row(row)


async def set_webhook_url(conn: Connection, bot_id: BotId, url: str | None) -> None:
    await conn.execute(Q["set_webhook_url"], {"bot_id": bot_id, "url": url})


async def bots_to_repoint(conn: Connection, base: str) -> list[BotToPoint]:
    cur = await conn.execute(Q["bots_to_repoint"], {"base": base})
    return [BotToPoint.from_row(row) for row in await cur.fetchall()]


async def activate_bot(conn: Connection, bot_id: BotId) -> None:
    await conn.execute(Q["activate_bot"], {"bot_id": bot_id})


async def record_bot_error(
    conn: Connection,
    bot_id: BotId,
    error: str,
    now: dt.datetime,
    backoff_until: dt.datetime | None = None,
) -> None:
    params = {"bot_id": bot_id, "error": error, "now": now, "backoff_until": backoff_until}
    await conn.execute(Q["record_bot_error"], params)


async def mark_token_invalid(conn: Connection, bot_id: BotId, error: str, now: dt.datetime) -> None:
    await conn.execute(Q["mark_token_invalid"], {"bot_id": bot_id, "error": error, "now": now})


async def pause_left(conn: Connection, bot_id: BotId) -> float:
    row = await _one(conn, "bot_pause_left", {"bot_id": bot_id})
    return float(row["left"]) if row is not None else 0.0


async def mark_telegram_failing(conn: Connection, bot_id: BotId, since: dt.datetime) -> None:
    await conn.execute(Q["mark_telegram_failing"], {"bot_id": bot_id, "since": since})


async def clear_telegram_failing(conn: Connection, bot_id: BotId) -> None:
    await conn.execute(Q["clear_telegram_failing"], {"bot_id": bot_id})


async def pause_bot(conn: Connection, bot_id: BotId, seconds: float) -> None:
    await conn.execute(Q["pause_bot"], {"bot_id": bot_id, "seconds": seconds})


# -- leases -------------------------------------------------------------------------------


async def take_lease(conn: Connection, name: str, holder: str, ttl: float) -> bool | None:
    """None when another holder's lease still runs; else whether we took it just now."""
    row = await _one(conn, "take_lease", {"name": name, "holder": holder, "ttl": ttl})
    return None if row is None else bool(row["taken"])


async def release_lease(conn: Connection, name: str, holder: str) -> None:
    await conn.execute(Q["release_lease"], {"name": name, "holder": holder})


async def workers_gone(conn: Connection, window: float) -> list[str]:
    """Holders whose presence ran out within the last `window` seconds."""
    cur = await conn.execute(Q["workers_gone"], {"window": window})
    return [str(row["holder"]) for row in await cur.fetchall()]


async def leases_of_the_gone(conn: Connection, gone: list[str]) -> list[str]:
    """The running leases those holders still hold."""
    cur = await conn.execute(Q["leases_of_the_gone"], {"gone": gone})
    return [str(row["name"]) for row in await cur.fetchall()]


async def end_claims_of_the_gone(conn: Connection, gone: list[str]) -> int:
    """Ends those holders' claims on updates; how many."""
    cur = await conn.execute(Q["end_claims_of_the_gone"], {"gone": gone})
    return len(await cur.fetchall())


async def live_workers(conn: Connection) -> int:
    row = await _one(conn, "live_workers", {})
    return int(row["workers"]) if row else 0


# -- people and chats ---------------------------------------------------------------------


def person_params(
    bot_id: BotId,
    user: Any,
    at: dt.datetime,
    *,
    met: bool = True,
    started: bool = False,
    counted: str | None = None,
) -> dict[str, Any] | None:
    """What `record_person` (or a finish that records the person) upserts for a `from`; None
    when it is no person (a bot, Telegram's own accounts, no id)."""
    if not isinstance(user, dict) or user.get("is_bot") or not isinstance(user.get("id"), int):
        return None
    if user["id"] in NOT_PEOPLE:
        return None
    return {
        "telegram_user_id": user["id"],
        "username": user.get("username"),
        "first_name": str(user.get("first_name") or ""),
        "last_name": user.get("last_name"),
        "language_code": user.get("language_code"),
        "bot_id": bot_id,
        "met": met,
        "started": met and started,
        "counted": counted,
        "at": at,
    }


async def record_person(
    conn: Connection,
    bot_id: BotId,
    user: Any,
    at: dt.datetime,
    *,
    met: bool = True,
    started: bool = False,
    counted: str | None = None,
) -> PersonId | None:
    """Upsert the person behind a `from` and, with `met`, note that this bot met them (a
    channel member seen in `chat_member` is not a visitor of the bot) at `at`; their id.
    `counted` names a statistics event of theirs at that moment, written by the same
    statement. `started`: the update came from the person's private chat with the bot, so it
    may write to them."""
    params = person_params(bot_id, user, at, met=met, started=started, counted=counted)
    if params is None:
        return None
    row = await _one(conn, "upsert_person", params)
    return None if row is None else PersonId(int(row["id"]))


async def set_blocked(
    conn: Connection, bot_id: BotId, user_id: int, blocked: bool, now: dt.datetime
) -> None:
    params = {"bot_id": bot_id, "user_id": user_id, "blocked": blocked, "now": now}
    await conn.execute(Q["set_blocked"], params)


async def move_channel(conn: Connection, old_chat_id: int, new_chat_id: int) -> None:
    await conn.execute(Q["move_channel"], {"old": old_chat_id, "new": new_chat_id})


# -- channels -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rights:
    status: str
    is_admin: bool
    can_invite_users: bool
    can_restrict_members: bool
    error: str | None
    # The chat's admins by Telegram id; None when not asked (the list kept stays).
    admins: tuple[int, ...] | None = None

    @classmethod
    def of(cls, member: dict[str, Any]) -> Rights:
        status = str(member.get("status") or "unknown")
        creator = status == "creator"
        return cls(
            status=status,
            is_admin=status in ("creator", "administrator"),
            can_invite_users=creator or member.get("can_invite_users") is True,
            can_restrict_members=creator or member.get("can_restrict_members") is True,
            error=None,
        )


async def bot_token(conn: Connection, box: SecretBox, bot_id: BotId) -> tuple[int, str]:
    cur = await conn.execute(Q["bot_token"], {"bot_id": bot_id})
    row = await cur.fetchone()
    if row is None:
        raise errors.UnknownBot(f"no active bot {bot_id}")
    return int(row["telegram_bot_id"]), box.open(row["token_encrypted"])


@dataclass(frozen=True)
class ChannelFacts:
    """Telegram's side of a channel, as stored."""

    id: int
    telegram_chat_id: int
    title: str
    username: str | None
    chat_type: str | None


async def save_channel(
    conn: Connection, bot_id: BotId, info: dict[str, Any], rights: Rights, now: dt.datetime
) -> ChannelFacts:
    cur = await conn.execute(
        Q["upsert_channel_facts"],
        {
            "chat_id": int(info["id"]),
            "title": str(info.get("title") or ""),
            "username": info.get("username"),
            "chat_type": info.get("type"),
        },
    )
    channel = await cur.fetchone()
    if channel is None:
        raise errors.StoreError("the channel row was not written")
    await record_rights(conn, bot_id, int(channel["id"]), rights, now)
    return ChannelFacts(
        int(channel["id"]),
        int(channel["telegram_chat_id"]),
        str(channel["title"]),
        channel["username"],
        channel["chat_type"],
    )


async def record_rights(
    conn: Connection, bot_id: BotId, channel_id: int, rights: Rights, now: dt.datetime
) -> None:
    await conn.execute(
        Q["upsert_bot_channel"],
        {
            "bot_id": bot_id,
            "channel_id": channel_id,
            "status": rights.status,
            "is_admin": rights.is_admin,
            "can_invite_users": rights.can_invite_users,
            "can_restrict_members": rights.can_restrict_members,
            "now": now,
            "error": rights.error,
            "admins": list(rights.admins) if rights.admins is not None else None,
        },
    )
