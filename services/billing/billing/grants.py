"""Access without a payment, each under the membership's advisory lock as a payment is: an
owner's grant (until a date), a channel's free trial (once a person), an access code's days
(guesses counted, so codes cannot be tried at speed); and its end by the owner (a removal)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from psycopg.rows import DictRow

from billing import errors
from billing.model import ChannelId, Membership, MembershipKey, PersonId
from billing.store import (
    Q,
    access_event,
    membership,
    membership_event,
    one_row,
    write_membership,
)
from billing.transitions import Status, extend, grant, next_status, remove
from shared.db import Connection


async def grant_access(
    conn: Connection,
    telegram_user_id: int,
    channel_id: int,
    until: dt.datetime,
    reason: str,
    now: dt.datetime,
) -> tuple[bool, Membership] | None:
    """Access until `until` without a payment, under the membership's lock: whether it changed
    anything, and the membership after. None when the channel is not paid. A grant that would
    not move `expires_at` is only recorded in the history (once), so importing a list twice
    grants once."""
    async with conn.transaction():
        cur = await conn.execute(Q["grant_channel"], {"channel_id": channel_id})
        channel = await cur.fetchone()
        if channel is None:
            return None
        key = await _locked_key(conn, telegram_user_id, channel_id)
        before = await membership(conn, key)
        return await _granted(conn, key, channel, before, until, "grant", reason, now)


async def remove_member(
    conn: Connection,
    telegram_user_id: int,
    channel_id: int,
    request_key: str,
    reason: str,
    now: dt.datetime,
) -> tuple[bool, Membership]:
    """The membership ended now by the owner, under its lock: expired with no grace, paid time
    cut to now, a `removal` event carrying the request key and a `revoke` access event that
    takes the person out of the channel. Whether it changed anything, and the membership after.
    The same key again finds its event and changes nothing (a retry never undoes a payment made
    since); a key used for another membership is `KeyReused`; `UnknownMembership` when there is
    none. A removal of someone already out is recorded, so their history says who ended it."""
    async with conn.transaction():
        cur = await conn.execute(Q["person_of"], {"telegram_user_id": telegram_user_id})
        person = await cur.fetchone()
        if person is None:
            raise errors.UnknownMembership("no membership of that person in that channel")
        key = MembershipKey(PersonId(int(person["id"])), ChannelId(channel_id))
        await conn.execute(Q["lock_membership"], key.params())
        before = await membership(conn, key)
        if before is None:
            raise errors.UnknownMembership("no membership of that person in that channel")
        cur = await conn.execute(Q["removal_recorded"], {"request_key": request_key})
        used = await cur.fetchone()
        if used is not None:
            if (used["person_id"], used["channel_id"]) != (key.person_id, key.channel_id):
                raise errors.KeyReused(
                    "that request key removed someone else", field="request_key", code="taken"
                )
            return False, before
        after = Membership(
            Status.EXPIRED, remove(before.expires_at, now), before.grace_days, before.reminder_hours
        )
        await write_membership(conn, key, after, now)
        event_id = await membership_event(
            conn,
            key,
            before,
            after,
            now,
            cause="removal",
            until=now,
            reason=reason,
            request_key=request_key,
        )
        if before.status is Status.EXPIRED:
            return False, after
        await access_event(conn, "revoke", key, event_id, after.expires_at, now)
        return True, after


async def take_trial(
    conn: Connection, telegram_user_id: int, channel_id: int, plan_id: int, now: dt.datetime
) -> Membership:
    """The channel's free trial for the person, under the membership's lock: access for the
    trial plan's days, with its own membership event (`trial`) and a `grant` access event.
    `UnknownPlan` when it is not a trial on sale in that paid channel; `TrialRefused`, nothing
    written, when the person had it before (the key of `trials`) or had a membership there."""
    async with conn.transaction():
        cur = await conn.execute(Q["trial_plan"], {"channel_id": channel_id, "plan_id": plan_id})
        plan = await cur.fetchone()
        if plan is None:
            raise errors.UnknownPlan("no free trial by that id on sale in that paid channel")
        key = await _locked_key(conn, telegram_user_id, channel_id)
        cur = await conn.execute(
            Q["insert_trial"], {**key.params(), "plan_id": plan_id, "now": now}
        )
        if await cur.fetchone() is None:
            raise errors.TrialRefused("you have had this channel's free trial already")
        before = await membership(conn, key)
        if before is not None:
            raise errors.TrialRefused("the free trial is for people new to this channel")
        until = now + dt.timedelta(days=int(plan["period_days"]))
        _, after = await _granted(conn, key, plan, None, until, "trial", str(plan["name"]), now)
        return after


# Wrong codes a person may send in `GUESS_WINDOW` before the next must wait.
GUESSES = 5
GUESS_WINDOW = dt.timedelta(minutes=10)


@dataclass(frozen=True)
class Redeemed:
    channel_id: int
    title: str
    days: int
    membership: Membership


async def redeem_code(
    conn: Connection, telegram_user_id: int, code: str, now: dt.datetime
) -> Redeemed:
    """An access code's days for the person, through the grants path (reason `access_code`),
    extending from the end of what they have. `TooManyGuesses` after `GUESSES` wrong codes in
    `GUESS_WINDOW`; `CodeRefused`, nothing granted, for a code that is unknown, off, expired,
    used up, or used by them before. An unknown code counts as a guess."""
    async with conn.transaction():
        cur = await conn.execute(
            Q["code_misses"], {"telegram_user_id": telegram_user_id, "since": now - GUESS_WINDOW}
        )
        misses = await one_row(cur)
        if int(misses["count"]) >= GUESSES:
            wait = misses["oldest"] + GUESS_WINDOW - now
            raise errors.TooManyGuesses(
                "too many wrong codes; try again later",
                retry_after=max(1, int(wait.total_seconds()) + 1),
            )
        cur = await conn.execute(Q["access_code_for_update"], {"code": code.strip().upper()})
        row = await cur.fetchone()
        live = row is not None and (row["expires_at"] is None or row["expires_at"] > now)
        if row is not None and live:
            cur = await conn.execute(Q["code_uses"], {"code_id": row["id"]})
            live = int((await one_row(cur))["uses"]) < int(row["max_uses"])
        if row is not None and live:
            key = await _locked_key(conn, telegram_user_id, int(row["channel_id"]))
            cur = await conn.execute(
                Q["insert_code_use"], {"code_id": row["id"], **key.params(), "now": now}
            )
            if await cur.fetchone() is None:
                raise errors.CodeRefused(
                    "you have used this code already", field="code", code="taken"
                )
            before = await membership(conn, key)
            until = extend(before.expires_at if before else None, now, int(row["days"]))
            _, after = await _granted(conn, key, row, before, until, "grant", "access_code", now)
            return Redeemed(int(row["channel_id"]), str(row["title"]), int(row["days"]), after)
    if row is None:
        async with conn.transaction():
            await conn.execute(
                Q["insert_code_miss"],
                {"telegram_user_id": telegram_user_id, "since": now - GUESS_WINDOW, "now": now},
            )
    raise errors.CodeRefused("the code is unknown, used up or expired")


async def _locked_key(conn: Connection, telegram_user_id: int, channel_id: int) -> MembershipKey:
    """The person's membership key in the channel (the person recorded if new), its advisory
    lock taken."""
    cur = await conn.execute(Q["upsert_person"], {"telegram_user_id": telegram_user_id})
    key = MembershipKey(PersonId(int((await one_row(cur))["id"])), ChannelId(channel_id))
    await conn.execute(Q["lock_membership"], key.params())
    return key


async def _granted(
    conn: Connection,
    key: MembershipKey,
    channel: DictRow,
    before: Membership | None,
    until: dt.datetime,
    cause: str,
    reason: str,
    now: dt.datetime,
) -> tuple[bool, Membership]:
    """Access until `until` (or as long as it ran already) written under the lock: the
    membership, its event of `cause` and a `grant` access event; nothing when it moves
    nothing. `channel` gives the grace days and reminder hours."""
    expires_at = grant(before.expires_at if before else None, until)
    status = next_status(Status.ACTIVE, expires_at, now, int(channel["grace_days"]))
    if before is not None and (before.expires_at, before.status) == (expires_at, status):
        # Nothing moves now, but the grant is history: should a payment it lies within be
        # refunded, the replay still gives its days. The same grant again writes nothing.
        cur = await conn.execute(
            Q["grant_recorded"], {**key.params(), "cause": cause, "until": until}
        )
        if await cur.fetchone() is None:
            await membership_event(
                conn, key, before, before, now, cause=cause, until=until, reason=reason
            )
        return False, before
    reminders = tuple(channel["reminder_hours"] or ())
    after = Membership(status, expires_at, int(channel["grace_days"]), reminders)
    await write_membership(conn, key, after, now)
    event_id = await membership_event(
        conn, key, before, after, now, cause=cause, until=until, reason=reason
    )
    await access_event(conn, "grant", key, event_id, after.expires_at, now)
    return True, after
