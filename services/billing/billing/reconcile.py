"""Reconciliation of the ledger against its own history, and of the paid channels against
Telegram.

A membership's `expires_at` must be the replay of the changes that survive in its history
(payments not refunded, grants and trials, in the order applied) and its status no further on
than the clock puts that date (`transitions.reconciled`). The report lists every membership
that is not; `fix` writes, under the membership's lock and after reading it again, the
replayed state with a `reconcile` history row, and what Telegram must then do: a removal for
access now over, an invite for access back.

Channels: the Bot API cannot list a channel's members, so billing asks botedge about those
`channel_members` shows inside and those paying (`POST /internal/channels/{id}/members/check`,
`getChatMember` each, recorded). Someone inside who may not be (not paying, not whitelisted,
not running the chat) is an intruder, taken out as admission takes out a joiner
(`.../members/remove`); someone paying who is not inside gets a fresh invite (a `grant` access
event beside a `reconcile` history row that changes nothing). People never seen inside nor
paying are out of reach, and the report says how many were checked.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Any

import httpx

from billing import errors
from billing.gateways import STARS, STARS_CURRENCY
from billing.model import ChannelId, Delivery, Kind, Membership, MembershipKey, PersonId
from billing.sqlq import Q
from billing.store import (
    access_event,
    membership_event,
    one_row,
    record_delivery,
    survivors,
    write_membership,
)
from billing.transitions import Status, ended, reconciled, replay
from shared.breaker import Breakers
from shared.db import Connection
from shared.internal import InternalClient, Unreachable
from shared.settings import Secret


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
    history = survivors(row)
    found = reconciled(
        row["status"],
        row["expires_at"],
        replay(history),
        now,
        int(row["grace_days"]),
        removed=ended(history),
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


# People per call to botedge.
CHUNK = 500


class Unchecked(StrEnum):
    """Why a channel or a bot could not be checked this time."""

    REFUSED = "refused"
    """botedge refused to ask about it (its manager bot removed, say): asking again will not
    help until the owner changes something."""
    UNAVAILABLE = "unavailable"
    """botedge or Telegram did not answer: try again later."""


@dataclass(frozen=True)
class Skipped:
    reason: Unchecked
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"reason": self.reason.value, "detail": self.detail}


@dataclass(frozen=True)
class Payer:
    """A payer Telegram shows outside their channel, as our records have them."""

    telegram_user_id: int
    access_began_at: dt.datetime | None
    last_inside_at: dt.datetime | None
    invited_at: dt.datetime | None
    invited_by_reconcile: bool


def has_left(payer: Payer) -> bool:
    """Whether the payer was inside during their current access and is gone (a difference),
    rather than paid and invited but not joined yet (not one)."""
    if payer.last_inside_at is None:
        return False
    return payer.access_began_at is None or payer.last_inside_at >= payer.access_began_at


def invite_again(payer: Payer, now: dt.datetime, resend_after: dt.timedelta) -> bool:
    """Whether a fix sends the payer a fresh invite: one who left, once after leaving; one who
    has not joined yet, once, when their invite is `resend_after` old."""
    if has_left(payer):
        invited_since = (
            payer.invited_at is not None
            and payer.last_inside_at is not None
            and payer.invited_at > payer.last_inside_at
        )
        return not (payer.invited_by_reconcile and invited_since)
    if payer.invited_by_reconcile:
        return False
    return payer.invited_at is None or payer.invited_at <= now - resend_after


@dataclass(frozen=True)
class ChannelCheck:
    channel_id: int
    title: str
    checked: int
    # Telegram could not be asked about them this time.
    unreachable: list[int]
    intruders: list[int]
    # Paying, were inside during their access, and are gone: a difference.
    missing: list[int]
    # Paid and invited, not joined yet: not a difference.
    not_joined: list[int]
    # Those a fix sends a fresh invite (of the two lists above).
    invite: list[int]
    skipped: Skipped | None = None

    @property
    def differences(self) -> int:
        return len(self.intruders) + len(self.missing)

    def as_json(self) -> dict[str, Any]:
        return {
            "channel_id": self.channel_id,
            "title": self.title,
            "checked": self.checked,
            "unreachable": self.unreachable,
            "intruders": self.intruders,
            "missing": self.missing,
            "not_joined": self.not_joined,
            "invite": self.invite,
            "unchecked": None if self.skipped is None else self.skipped.as_json(),
        }


class Botedge:
    """botedge's internal endpoints for the channels' members."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        token: Secret,
        breakers: Breakers | None = None,
    ) -> None:
        self.calls = InternalClient("botedge", base_url, token, breakers, client)

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return await self._ask("POST", path, json=body)

    async def get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self._ask("GET", path, params=params)

    async def _ask(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            answer = await self.calls.request(method, path, timeout=120, **kwargs)
        except Unreachable as error:
            raise errors.BotedgeUnavailable(error.detail) from None
        if answer.status_code != 200:
            said = _detail(answer)
            if 400 <= answer.status_code < 500:
                raise errors.BotedgeRefused(f"botedge {path}: {answer.status_code} {said}")
            raise errors.BotedgeUnavailable(f"botedge {path}: {answer.status_code} {said}")
        found: dict[str, Any] = answer.json()
        return found


def _detail(answer: httpx.Response) -> str:
    """A problem answer's detail, else nothing."""
    try:
        body = answer.json()
    except ValueError:
        return ""
    return str(body.get("detail", ""))[:300] if isinstance(body, dict) else ""


def skipped(error: errors.BillingError) -> Skipped:
    reason = (
        Unchecked.REFUSED if isinstance(error, errors.BotedgeRefused) else Unchecked.UNAVAILABLE
    )
    return Skipped(reason, error.detail)


async def channels(
    conn: Connection, botedge: Botedge, now: dt.datetime, resend_after: dt.timedelta
) -> list[ChannelCheck]:
    """Each paid channel checked on its own: one that cannot be asked is listed with why, and
    the rest are checked."""
    cur = await conn.execute(Q["channel_people_to_check"])
    rows = await cur.fetchall()
    checks = []
    for row in rows:
        channel_id = int(row["channel_id"])
        asked = sorted(int(u) for u in row["user_ids"])
        paying = {int(u) for u in row["paying"]}
        members: list[dict[str, Any]] = []
        try:
            for start in range(0, len(asked), CHUNK):
                answer = await botedge.post(
                    f"/internal/channels/{channel_id}/members/check",
                    {"user_ids": asked[start : start + CHUNK]},
                )
                members.extend(answer["members"])
        except (errors.BotedgeRefused, errors.BotedgeUnavailable) as error:
            checks.append(
                ChannelCheck(channel_id, str(row["title"]), 0, [], [], [], [], [], skipped(error))
            )
            continue
        unreachable = [m["user_id"] for m in members if m["status"] is None]
        known = [m for m in members if m["status"] is not None]
        outside = [m["user_id"] for m in known if not m["is_member"] and m["user_id"] in paying]
        payers = await _payers(conn, channel_id, outside)
        checks.append(
            ChannelCheck(
                channel_id,
                str(row["title"]),
                len(members),
                unreachable,
                [m["user_id"] for m in known if m["is_member"] and not m["may_be_there"]],
                [p.telegram_user_id for p in payers if has_left(p)],
                [p.telegram_user_id for p in payers if not has_left(p)],
                [p.telegram_user_id for p in payers if invite_again(p, now, resend_after)],
            )
        )
    return checks


async def _payers(conn: Connection, channel_id: int, user_ids: list[int]) -> list[Payer]:
    if not user_ids:
        return []
    cur = await conn.execute(Q["payers_standing"], {"channel_id": channel_id, "user_ids": user_ids})
    found = {
        int(row["telegram_user_id"]): Payer(
            int(row["telegram_user_id"]),
            row["access_began_at"],
            row["last_inside_at"],
            row["invited_at"],
            bool(row["invited_by_reconcile"]),
        )
        for row in await cur.fetchall()
    }
    return [found[user] for user in sorted(found)]


async def fix_channel(
    conn: Connection, botedge: Botedge, check: ChannelCheck, now: dt.datetime
) -> None:
    """Intruders out through botedge; a fresh invite for each payer the check says is due one."""
    if check.skipped is not None:
        return
    if check.intruders:
        await botedge.post(
            f"/internal/channels/{check.channel_id}/members/remove",
            {"user_ids": check.intruders},
        )
    for user in check.invite:
        async with conn.transaction():
            cur = await conn.execute(Q["upsert_person"], {"telegram_user_id": user})
            person = PersonId(int((await one_row(cur))["id"]))
            key = MembershipKey(person, ChannelId(check.channel_id))
            await conn.execute(Q["lock_membership"], key.params())
            cur = await conn.execute(Q["membership"], key.params())
            row = await cur.fetchone()
            if row is None or row["membership_status"] not in ("active", "grace"):
                continue
            held = Membership(
                Status(row["membership_status"]),
                row["membership_expires_at"],
                int(row["membership_grace_days"]),
            )
            event_id = await membership_event(conn, key, held, held, now, cause="reconcile")
            await access_event(conn, "grant", key, event_id, held.expires_at, now)


# getStarTransactions' largest page, and how many pages a bot's history is read to.
PAGE = 100
PAGES = 1000


@dataclass(frozen=True)
class StarsCheck:
    bot_id: int
    # Telegram's incoming payments read for the window.
    checked: int
    # Paid in Telegram, not in our ledger: what applying them needs.
    missing_here: list[dict[str, Any]]
    # In our ledger, not in Telegram's list for the window (charge ids).
    missing_there: list[str]
    skipped: Skipped | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "bot_id": self.bot_id,
            "checked": self.checked,
            "missing_here": self.missing_here,
            "missing_there": self.missing_there,
            "unchecked": None if self.skipped is None else self.skipped.as_json(),
        }


def _incoming(transaction: dict[str, Any]) -> dict[str, Any] | None:
    """A person's payment to the bot, as applying it needs; None for anything else."""
    source = transaction.get("source")
    if not isinstance(source, dict) or source.get("type") != "user":
        return None
    if source.get("transaction_type") not in (None, "invoice_payment"):
        return None
    user = source.get("user")
    user = user if isinstance(user, dict) else {}
    return {
        "charge_id": str(transaction.get("id")),
        "user_id": user.get("id"),
        "payload": source.get("invoice_payload"),
        "amount": transaction.get("amount"),
        "date": transaction.get("date"),
        "subscription": source.get("subscription_period") is not None,
    }


async def stars(
    conn: Connection, botedge: Botedge, since: dt.datetime | None = None
) -> list[StarsCheck]:
    """Each active bot's Star payments in Telegram against ours, both ways, for the window."""
    cur = await conn.execute(Q["star_bots"])
    checks = []
    for (bot_id,) in [(int(row["id"]),) for row in await cur.fetchall()]:
        theirs: list[dict[str, Any]] = []
        try:
            for page in range(PAGES):
                answer = await botedge.get(
                    f"/internal/bots/{bot_id}/star-transactions",
                    {"offset": page * PAGE, "limit": PAGE},
                )
                listed = answer["transactions"]
                theirs.extend(p for t in listed if (p := _incoming(t)) is not None)
                if len(listed) < PAGE:
                    break
        except (errors.BotedgeRefused, errors.BotedgeUnavailable) as error:
            checks.append(StarsCheck(bot_id, 0, [], [], skipped(error)))
            continue
        floor = 0 if since is None else int(since.timestamp())
        theirs = [t for t in theirs if int(t["date"] or 0) >= floor]
        cur = await conn.execute(Q["our_star_payments"], {"bot_id": bot_id})
        ours = {str(row["charge_id"]): row["paid_at"] for row in await cur.fetchall()}
        seen = {t["charge_id"] for t in theirs}
        # A charge id is Telegram's, one per payment: known through any bot, it is ours.
        cur = await conn.execute(Q["star_charge_known"], {"charge_ids": sorted(seen)})
        known = {str(row["charge_id"]) for row in await cur.fetchall()}
        checks.append(
            StarsCheck(
                bot_id,
                len(theirs),
                [t for t in theirs if t["charge_id"] not in known],
                sorted(
                    charge
                    for charge, paid_at in ours.items()
                    if charge not in seen and (since is None or paid_at >= since)
                ),
            )
        )
    return checks


async def fix_stars(conn: Connection, check: StarsCheck, now: dt.datetime) -> int:
    """Each payment Telegram has and we do not, through the path every payment takes (its
    key makes a later delivery of the same charge a duplicate); how many were applied."""
    applied = 0
    for paid in check.missing_here:
        if not isinstance(paid["amount"], int) or not isinstance(paid["payload"], str):
            continue
        delivery = Delivery(
            gateway=STARS.name,
            kind=Kind.PAYMENT,
            event_type="reconcile",
            payload=paid,
            order_reference=paid["payload"],
            external_payment_id=paid["charge_id"],
            amount_minor=Decimal(paid["amount"]),
            currency=STARS_CURRENCY,
            paid_at=dt.datetime.fromtimestamp(int(paid["date"]), dt.UTC),
            renewal=bool(paid["subscription"]),
        )
        outcome = await record_delivery(conn, delivery, now)
        applied += outcome.applied
    return applied
