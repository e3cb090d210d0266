"""Reconciliation of the ledger: each membership against the replay of its own history.

A membership's `expires_at` must be the replay of the changes that survive in its history
(payments not refunded, grants and trials, in the order applied) and its status no further on
than the clock puts that date (`transitions.reconciled`). The report lists every membership
that is not; `fix` writes, under the membership's lock and after reading it again, the
replayed state with a `reconcile` history row, and what Telegram must then do: a removal for
access now over, an invite for access back.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from billing.model import ChannelId, Membership, MembershipKey, PersonId
from billing.sqlq import Q
from billing.store import access_event, membership_event, survivors, write_membership
from billing.transitions import Status, reconciled, replay
from shared.db import Connection


@dataclass(frozen=True)
class Difference:
    person_id: int
    channel_id: int
    telegram_user_id: int
    title: str
    status: Status
    expires_at: dt.datetime
    expected_status: Status
    expected_expires_at: dt.datetime

    def as_json(self) -> dict[str, Any]:
        return {
            "person_id": self.person_id,
            "channel_id": self.channel_id,
            "telegram_user_id": self.telegram_user_id,
            "title": self.title,
            "status": self.status.value,
            "expires_at": self.expires_at.isoformat(),
            "expected_status": self.expected_status.value,
            "expected_expires_at": self.expected_expires_at.isoformat(),
        }


def _difference(row: Any, now: dt.datetime) -> Difference | None:
    found = reconciled(
        row["status"], row["expires_at"], replay(survivors(row)), now, int(row["grace_days"])
    )
    if found is None:
        return None
    status, expires_at = found
    return Difference(
        int(row["person_id"]),
        int(row["channel_id"]),
        int(row["telegram_user_id"]),
        str(row["title"]),
        Status(row["status"]),
        row["expires_at"],
        status,
        expires_at,
    )


async def ledger(
    conn: Connection, now: dt.datetime, since: dt.datetime | None = None
) -> tuple[int, list[Difference]]:
    """How many memberships were checked, and those that differ from their history."""
    cur = await conn.execute(
        Q["ledger_to_check"], {"since": since, "person_id": None, "channel_ids": None}
    )
    rows = await cur.fetchall()
    found = [_difference(row, now) for row in rows]
    return len(rows), [d for d in found if d is not None]


async def fix(conn: Connection, difference: Difference, now: dt.datetime) -> Difference | None:
    """The membership set to its history's state under its lock, when it still differs (a
    payment may have moved it since the report); what was fixed."""
    key = MembershipKey(PersonId(difference.person_id), ChannelId(difference.channel_id))
    async with conn.transaction():
        await conn.execute(Q["lock_membership"], key.params())
        cur = await conn.execute(
            Q["ledger_to_check"],
            {"since": None, "person_id": key.person_id, "channel_ids": [key.channel_id]},
        )
        row = await cur.fetchone()
        found = None if row is None else _difference(row, now)
        if row is None or found is None:
            return None
        grace = int(row["grace_days"])
        before = Membership(found.status, found.expires_at, grace)
        after = Membership(
            found.expected_status,
            found.expected_expires_at,
            grace,
            tuple(row["reminder_hours"] or ()),
        )
        await write_membership(conn, key, after, now)
        event_id = await membership_event(conn, key, before, after, now, cause="reconcile")
        if after.status is Status.EXPIRED and before.status is not Status.EXPIRED:
            await access_event(conn, "revoke", key, event_id, after.expires_at, now)
        elif after.status is not Status.EXPIRED and before.status is Status.EXPIRED:
            await access_event(conn, "grant", key, event_id, after.expires_at, now)
        elif after.status is Status.GRACE and before.status is Status.ACTIVE:
            await access_event(conn, "reminder", key, event_id, after.expires_at, now)
        return found
