"""Channel access from billing: each `access_events` row done in Telegram, exactly once.

Through the channel's manager bot (`channels.manager_bot_id`):
- grant: a single-use invite link (`member_limit: 1`, valid `INVITE_LINK_HOURS`), made before
  the transaction that queues the message and finishes the event. A crash in between may make
  a second link, never send two: the message's outbox key is the event's.
- grant after `expired`: the same, welcoming them back. To someone `channel_members` shows
  inside already, no link: a renewal says how long access now runs, a grant says nothing.
- expiry_notice: "ends in N hours/days" with the pay link, before expiry; dropped when the
  membership was renewed since (its `expires_at` moved) or is no longer active.
- reminder: a message with the days of grace left and the pay link.
- A Stars subscription (`star_subscriptions`): while it renews, the notice says Telegram renews
  it and offers no pay link; once its renewal is cancelled, the notice and reminder say so.
- checkout_declined, checkout_lapsed: a checkout that did not pay (the gateway declined, or
  the invoice expired unpaid), with a button to try again.
- revoke: ban then unban (`only_if_banned`), which removes without barring a later return, then
  a message with the pay link. The chat's owner and admins are never removed.
No manager bot, missing rights or Telegram refusing: retried with backoff, then `failed` with
`last_error` for the owner.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from botedge import outbox_store, sqlq
from botedge.db import connection
from botedge.events import Event, EventQueue, EventTable
from botedge.ids import BotId
from botedge.telegram import BadRequest, BotApi
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool

log = logging.getLogger("botedge.access")
Q = sqlq.Q

ACCESS_EVENTS = EventTable("access_events", ("person_id", "channel_id"))
STAFF = frozenset({"creator", "administrator"})


class AccessKind(StrEnum):
    GRANT = "grant"
    REMINDER = "reminder"
    REVOKE = "revoke"
    EXPIRY_NOTICE = "expiry_notice"
    CHECKOUT_DECLINED = "checkout_declined"
    CHECKOUT_LAPSED = "checkout_lapsed"


@dataclass(frozen=True)
class AccessEvent:
    """An `access_events` row as billing wrote it."""

    id: int
    kind: AccessKind
    channel_id: int
    person_id: int
    membership_event_id: int | None
    # The period it is about: the membership's end when it was written, and for a notice how
    # long before it.
    expires_at: dt.datetime | None
    notice_hours: int | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> AccessEvent:
        notice = row.get("notice_hours")
        return cls(
            id=int(row["id"]),
            kind=AccessKind(row["kind"]),
            channel_id=int(row["channel_id"]),
            person_id=int(row["person_id"]),
            membership_event_id=row.get("membership_event_id"),
            expires_at=row.get("expires_at"),
            notice_hours=None if notice is None else int(notice),
        )


@dataclass(frozen=True)
class AccessContext:
    """What acting on it needs (`access_context`): the channel and its manager bot, the
    person, their membership as it stands now and the status the event's change came from."""

    telegram_chat_id: int
    title: str
    manager_bot_id: BotId | None
    bot_username: str | None
    admission: str
    join_request_link: str | None
    telegram_user_id: int
    grace_days: int
    membership_status: str | None
    membership_expires_at: dt.datetime | None
    from_status: str | None
    cause: str | None
    inside: bool
    star_renewal: str | None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> AccessContext:
        return cls(
            telegram_chat_id=int(row["telegram_chat_id"]),
            title=str(row["title"]) or "the channel",
            manager_bot_id=None
            if row["manager_bot_id"] is None
            else BotId(int(row["manager_bot_id"])),
            bot_username=row["bot_username"],
            admission=str(row["admission"]),
            join_request_link=row["join_request_link"],
            telegram_user_id=int(row["telegram_user_id"]),
            grace_days=int(row["grace_days"] or 0),
            membership_status=row["membership_status"],
            membership_expires_at=row["membership_expires_at"],
            from_status=row["from_status"],
            cause=row["cause"],
            inside=bool(row["inside"]),
            star_renewal=row["star_renewal"],
        )


# What doing an event takes in Telegram, decided without it (`step_for`).
@dataclass(frozen=True)
class Say:
    """A message, nothing asked of Telegram first."""

    message: dict[str, Any]


@dataclass(frozen=True)
class Invite:
    """A single-use invite link made, then sent; `welcome` back after an expiry."""

    welcome: bool


@dataclass(frozen=True)
class InviteToAsk:
    """The channel's join-request link sent: a request through it is approved at once."""


@dataclass(frozen=True)
class Remove:
    """Taken out (unless they run the chat), then told, with a button to renew."""

    renew: dict[str, Any]


Step = Say | Invite | InviteToAsk | Remove | None

# What a checkout that did not pay tells the person, by the notice's kind.
CHECKOUT_ENDED = {
    AccessKind.CHECKOUT_DECLINED: "Your payment for {title} did not go through, and nothing was"
    " charged. Press below to try again, with the same or another way to pay.",
    AccessKind.CHECKOUT_LAPSED: "Your link to pay for {title} has expired unpaid. Press below"
    " for a new one.",
}


def step_for(event: AccessEvent, ctx: AccessContext, now: dt.datetime) -> Step:
    """What an access event comes to for this person now; None: nothing to send."""
    renew = renew_button(ctx, event.channel_id)
    if event.kind is AccessKind.GRANT:
        if ctx.inside:
            # Already in the channel (a renewal, an imported member): no link to send.
            return None if ctx.cause == "grant" else Say(extended(ctx.title, event))
        if ctx.admission == "join_request":
            return InviteToAsk()
        return Invite(welcome=ctx.from_status == "expired")
    if event.kind is AccessKind.EXPIRY_NOTICE:
        found = notice(ctx, event, renew)
        return None if found is None else Say(found)
    if event.kind in CHECKOUT_ENDED:
        text = CHECKOUT_ENDED[event.kind].format(title=ctx.title)
        return Say({"text": text, **renew_button(ctx, event.channel_id, "Try again")})
    if event.kind is AccessKind.REMINDER:
        return Say({**reminder(ctx, now), **renew})
    return Remove(renew)


def renew_button(ctx: AccessContext, channel_id: int, text: str = "Renew") -> dict[str, Any]:
    """A button to `/start pay_<channel>` through the manager bot; nothing without its name."""
    if not ctx.bot_username:
        return {}
    url = f"https://t.me/{ctx.bot_username}?start=pay_{channel_id}"
    return {"reply_markup": {"inline_keyboard": [[{"text": text, "url": url}]]}}


def _utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def join_button(title: str, url: str) -> dict[str, Any]:
    return {"reply_markup": {"inline_keyboard": [[{"text": f"Join {title}"[:64], "url": url}]]}}


def invite_message(title: str, url: str, welcome: bool) -> dict[str, Any]:
    text = f"Payment received: your access to {title} is open. The link works once."
    if welcome:
        text = (
            f"Welcome back! Payment received: your access to {title} is open again. "
            "The link works once."
        )
    return {"text": text, **join_button(title, url)}


def ask_message(title: str, url: str) -> dict[str, Any]:
    text = (
        f"Payment received: your access to {title} is open. Ask to join with this "
        "link; your request is approved at once."
    )
    return {"text": text, **join_button(title, url)}


def extended(title: str, event: AccessEvent) -> dict[str, Any]:
    if event.expires_at is None:
        return {"text": f"Payment received: your access to {title} goes on."}
    return {
        "text": f"Payment received: your access to {title} now runs to {_utc(event.expires_at)}."
    }


def notice(ctx: AccessContext, event: AccessEvent, renew: dict[str, Any]) -> dict[str, Any] | None:
    """None when the membership was renewed (or ended) since the notice was written."""
    if (
        ctx.membership_status != "active"
        or ctx.membership_expires_at != event.expires_at
        or event.expires_at is None
    ):
        return None
    hours = int(event.notice_hours or 0)
    left = f"{hours // 24} days" if hours % 24 == 0 and hours >= 48 else f"{hours} hours"
    if hours == 24:
        left = "1 day"
    ends = _utc(event.expires_at)
    if ctx.star_renewal == "active":
        return {
            "text": f"Your Stars subscription to {ctx.title} renews on {ends}: Telegram takes "
            "the Stars then, and your access goes on. Nothing to do."
        }
    cancelled = ""
    if ctx.star_renewal == "canceled":
        cancelled = " You cancelled its renewal, so no Stars are taken."
    return {
        "text": f"Your access to {ctx.title} ends in {left}, on {ends}.{cancelled} Renew to stay.",
        **renew,
    }


def reminder(ctx: AccessContext, now: dt.datetime) -> dict[str, Any]:
    left = 0
    if ctx.membership_expires_at is not None:
        end = ctx.membership_expires_at + dt.timedelta(days=ctx.grace_days)
        left = max(0, math.ceil((end - now).total_seconds() / 86400))
    days = "1 day" if left == 1 else f"{left} days"
    cancelled = ""
    if ctx.star_renewal == "canceled":
        cancelled = " You cancelled its renewal, so none is coming."
    return {
        "text": f"Your subscription to {ctx.title} has ended.{cancelled} Renew within {days} "
        "to stay."
    }


def removed_message(title: str, renew: dict[str, Any]) -> dict[str, Any]:
    return {"text": f"Your access to {title} has ended.", **renew}


class AccessFailed(Exception):
    """Nothing to do it with yet (no manager bot, the bot not loaded): try again later."""


class Access:
    def __init__(
        self,
        pool: Pool,
        api: BotApi,
        tokens: Callable[[int], str | None],
        queue: EventQueue,
        *,
        invite_hours: float = 24.0,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.pool = pool
        self.api = api
        self.tokens = tokens
        self.queue = queue
        self.invite_hours = invite_hours
        self.clock = clock

    async def handle(self, event: Event) -> None:
        access = AccessEvent.from_row(event.row)
        ctx = await self._context(access)
        if ctx.manager_bot_id is None:
            raise AccessFailed("the channel has no manager bot")
        token = self.tokens(ctx.manager_bot_id)
        if token is None:
            raise AccessFailed(f"manager bot {ctx.manager_bot_id} is not active")
        step = step_for(access, ctx, self.clock.now())
        if step is None and access.kind is AccessKind.EXPIRY_NOTICE:
            log.info("access event %d: notice for a period that is over; dropped", access.id)
        message, link = await self._carry_out(step, token, ctx, access)
        user = ctx.telegram_user_id
        async with connection(self.pool) as conn, conn.transaction():
            if link is not None:
                await conn.execute(
                    Q["keep_access_link"],
                    {
                        "channel_id": access.channel_id,
                        "person_id": access.person_id,
                        "link": link,
                        "now": self.clock.now(),
                    },
                )
            if message is not None:
                await outbox_store.queue_reply(
                    conn,
                    ctx.manager_bot_id,
                    user,
                    "sendMessage",
                    {"chat_id": user, **message},
                    key=f"access:{event.id}",
                )
            await self.queue.finish(conn, event)

    async def _context(self, access: AccessEvent) -> AccessContext:
        async with connection(self.pool) as conn:
            cur = await conn.execute(
                Q["access_context"],
                {
                    "channel_id": access.channel_id,
                    "person_id": access.person_id,
                    "membership_event_id": access.membership_event_id,
                },
            )
            row = await cur.fetchone()
        if row is None:
            raise AccessFailed("the channel or the person is gone")
        return AccessContext.from_row(row)

    async def _carry_out(
        self, step: Step, token: str, ctx: AccessContext, access: AccessEvent
    ) -> tuple[dict[str, Any] | None, str | None]:
        """What Telegram is asked before the message: the message, and the single-use link
        made for it (kept with the membership)."""
        if isinstance(step, Say):
            return step.message, None
        if isinstance(step, Invite):
            url = await self._single_use_link(token, ctx.telegram_chat_id, access.id)
            return invite_message(ctx.title, url, step.welcome), url
        if isinstance(step, InviteToAsk):
            return ask_message(ctx.title, await self._join_request_link(token, ctx, access)), None
        if isinstance(step, Remove):
            removed = await self._remove(token, ctx.telegram_chat_id, ctx.telegram_user_id)
            return (removed_message(ctx.title, step.renew) if removed else None), None
        return None, None

    async def _single_use_link(self, token: str, chat: int, event_id: int) -> str:
        expire = self.clock.now() + dt.timedelta(hours=self.invite_hours)
        link = await self.api.call(
            token,
            "createChatInviteLink",
            {
                "chat_id": chat,
                "member_limit": 1,
                "expire_date": int(expire.timestamp()),
                "name": f"access {event_id}"[:32],
            },
        )
        return str(link["invite_link"])

    async def _join_request_link(self, token: str, ctx: AccessContext, access: AccessEvent) -> str:
        """The channel's one join-request link, made once and kept on the channel."""
        if ctx.join_request_link:
            return ctx.join_request_link
        made = await self.api.call(
            token,
            "createChatInviteLink",
            {
                "chat_id": ctx.telegram_chat_id,
                "creates_join_request": True,
                "name": "Gatehouse members",
            },
        )
        async with connection(self.pool) as conn:
            cur = await conn.execute(
                Q["keep_join_request_link"],
                {"channel_id": access.channel_id, "link": str(made["invite_link"])},
            )
            kept = await cur.fetchone()
        return str(kept["join_request_link"] if kept else made["invite_link"])

    async def _remove(self, token: str, chat: int, user: int) -> bool:
        """Ban then unban (`only_if_banned`): out, free to come back. False for those who run
        the chat, who are never removed."""
        try:
            member = await self.api.call(token, "getChatMember", {"chat_id": chat, "user_id": user})
        except BadRequest as error:
            if "user not found" not in error.description.lower():
                raise
            member = {"status": "left"}
        if isinstance(member, dict) and member.get("status") in STAFF:
            log.info("not removing %d from %d: they run the chat", user, chat)
            return False
        await self.api.call(token, "banChatMember", {"chat_id": chat, "user_id": user})
        await self.api.call(
            token, "unbanChatMember", {"chat_id": chat, "user_id": user, "only_if_banned": True}
        )
        return True
