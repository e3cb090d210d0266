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
  a message with the pay link. The chat's owner and admins are never removed. A revoke of the
  owner's removal also stops the person's Stars renewal of the channel
  (`editUserStarSubscription`), or Telegram would charge them again and let them back in.
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
from botedge.billing_client import DAYS
from botedge.db import connection
from botedge.events import Event, EventQueue, EventTable
from botedge.ids import BotId
from botedge.telegram import BadRequest, BotApi
from botedge.words import SOURCE, Speech, Words, msg, pick, user
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
    # The language to write to the person in (`words.pick`).
    language: str = SOURCE

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
            language=pick(row["chosen_language"], row["language_code"], row["bot_language"]),
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
    AccessKind.CHECKOUT_DECLINED: msg(
        "access.checkout_declined",
        "Your payment for {title} did not go through, and nothing was charged. Press below to "
        "try again, with the same or another way to pay.",
    ),
    AccessKind.CHECKOUT_LAPSED: msg(
        "access.checkout_lapsed",
        "Your link to pay for {title} has expired unpaid. Press below for a new one.",
    ),
}
TRY_AGAIN = msg("access.try_again", "Try again", form="button")
RENEW = msg("access.renew", "Renew", form="button")
JOIN = msg("access.join", "Join {title}")
OPEN = msg(
    "access.open",
    "Payment received: your access to {title} is open. The link works once.",
    form="text",
)
WELCOME_BACK = msg(
    "access.welcome_back",
    "Welcome back! Payment received: your access to {title} is open again. The link works once.",
    form="text",
)
ASK = msg(
    "access.ask",
    "Payment received: your access to {title} is open. Ask to join with this link; your request "
    "is approved at once.",
    form="text",
)
GOES_ON = msg("access.goes_on", "Payment received: your access to {title} goes on.", form="text")
RUNS_TO = msg(
    "access.runs_to", "Payment received: your access to {title} now runs to {until}.", form="text"
)
HOURS = msg("hours", "{count} hour", "{count} hours")
STARS_RENEW = msg(
    "access.stars_renew",
    "Your Stars subscription to {title} renews on {ends}: Telegram takes the Stars then, and "
    "your access goes on. Nothing to do.",
    form="text",
)
ENDS_IN = msg(
    "access.ends_in",
    "Your access to {title} ends in {left}, on {ends}. Renew to stay.",
    form="text",
)
ENDS_IN_CANCELLED = msg(
    "access.ends_in_cancelled",
    "Your access to {title} ends in {left}, on {ends}. You cancelled its renewal, so no Stars "
    "are taken. Renew to stay.",
    form="text",
)
ENDED = msg(
    "access.ended",
    "Your subscription to {title} has ended. Renew within {days} to stay.",
    form="text",
)
ENDED_CANCELLED = msg(
    "access.ended_cancelled",
    "Your subscription to {title} has ended. You cancelled its renewal, so none is coming. Renew "
    "within {days} to stay.",
    form="text",
)
REMOVED = msg("access.removed", "Your access to {title} has ended.", form="text")


def step_for(event: AccessEvent, ctx: AccessContext, now: dt.datetime, say: Speech) -> Step:
    """What an access event comes to for this person now; None: nothing to send."""
    renew = renew_button(ctx, event.channel_id, say(RENEW))
    if event.kind is AccessKind.GRANT:
        if ctx.inside:
            # Already in the channel (a renewal, an imported member): no link to send.
            return None if ctx.cause == "grant" else Say(extended(ctx.title, event, say))
        if ctx.admission == "join_request":
            return InviteToAsk()
        return Invite(welcome=ctx.from_status == "expired")
    if event.kind is AccessKind.EXPIRY_NOTICE:
        found = notice(ctx, event, renew, say)
        return None if found is None else Say(found)
    if event.kind in CHECKOUT_ENDED:
        text = say(CHECKOUT_ENDED[event.kind], title=user(ctx.title))
        return Say({"text": text, **renew_button(ctx, event.channel_id, say(TRY_AGAIN))})
    if event.kind is AccessKind.REMINDER:
        return Say({**reminder(ctx, now, say), **renew})
    return Remove(renew)


def renew_button(ctx: AccessContext, channel_id: int, text: str) -> dict[str, Any]:
    """A button to `/start pay_<channel>` through the manager bot; nothing without its name."""
    if not ctx.bot_username:
        return {}
    url = f"https://t.me/{ctx.bot_username}?start=pay_{channel_id}"
    return {"reply_markup": {"inline_keyboard": [[{"text": text, "url": url}]]}}


def join_button(title: str, url: str, say: Speech) -> dict[str, Any]:
    label = say(JOIN, title=user(title))[:64]
    return {"reply_markup": {"inline_keyboard": [[{"text": label, "url": url}]]}}


def invite_message(title: str, url: str, welcome: bool, say: Speech) -> dict[str, Any]:
    text = say(WELCOME_BACK if welcome else OPEN, title=user(title))
    return {"text": text, **join_button(title, url, say)}


def ask_message(title: str, url: str, say: Speech) -> dict[str, Any]:
    return {"text": say(ASK, title=user(title)), **join_button(title, url, say)}


def extended(title: str, event: AccessEvent, say: Speech) -> dict[str, Any]:
    if event.expires_at is None:
        return {"text": say(GOES_ON, title=user(title))}
    return {"text": say(RUNS_TO, title=user(title), until=say.moment(event.expires_at))}


def notice(
    ctx: AccessContext, event: AccessEvent, renew: dict[str, Any], say: Speech
) -> dict[str, Any] | None:
    """None when the membership was renewed (or ended) since the notice was written."""
    if (
        ctx.membership_status != "active"
        or ctx.membership_expires_at != event.expires_at
        or event.expires_at is None
    ):
        return None
    hours = int(event.notice_hours or 0)
    whole_days = hours % 24 == 0 and hours >= 24
    left = say(DAYS, hours // 24) if whole_days else say(HOURS, hours)
    ends, title = say.moment(event.expires_at), user(ctx.title)
    if ctx.star_renewal == "active":
        return {"text": say(STARS_RENEW, title=title, ends=ends)}
    ending = ENDS_IN_CANCELLED if ctx.star_renewal == "canceled" else ENDS_IN
    return {"text": say(ending, title=title, left=left, ends=ends), **renew}


def reminder(ctx: AccessContext, now: dt.datetime, say: Speech) -> dict[str, Any]:
    left = 0
    if ctx.membership_expires_at is not None:
        end = ctx.membership_expires_at + dt.timedelta(days=ctx.grace_days)
        left = max(0, math.ceil((end - now).total_seconds() / 86400))
    ended = ENDED_CANCELLED if ctx.star_renewal == "canceled" else ENDED
    return {"text": say(ended, title=user(ctx.title), days=say(DAYS, left))}


def removed_message(title: str, renew: dict[str, Any], say: Speech) -> dict[str, Any]:
    return {"text": say(REMOVED, title=user(title)), **renew}


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
        words: Words | None = None,
    ) -> None:
        self.pool = pool
        self.words = words or Words()
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
        say = self.words.speech(ctx.language, ctx.manager_bot_id)
        step = step_for(access, ctx, self.clock.now(), say)
        if step is None and access.kind is AccessKind.EXPIRY_NOTICE:
            log.info("access event %d: notice for a period that is over; dropped", access.id)
        message, link = await self._carry_out(step, token, ctx, access, say)
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
                    {"chat_id": user, **say.begun(message)},
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
        self, step: Step, token: str, ctx: AccessContext, access: AccessEvent, say: Speech
    ) -> tuple[dict[str, Any] | None, str | None]:
        """What Telegram is asked before the message: the message, and the single-use link
        made for it (kept with the membership)."""
        if isinstance(step, Say):
            return step.message, None
        if isinstance(step, Invite):
            url = await self._single_use_link(token, ctx.telegram_chat_id, access.id)
            return invite_message(ctx.title, url, step.welcome, say), url
        if isinstance(step, InviteToAsk):
            link = await self._join_request_link(token, ctx, access)
            return ask_message(ctx.title, link, say), None
        if isinstance(step, Remove):
            if ctx.cause == "removal" and ctx.star_renewal == "active":
                await self._stop_renewals(ctx, access)
            removed = await self._remove(token, ctx.telegram_chat_id, ctx.telegram_user_id)
            return (removed_message(ctx.title, step.renew, say) if removed else None), None
        return None, None

    async def _stop_renewals(self, ctx: AccessContext, access: AccessEvent) -> None:
        """The person's Stars subscriptions renewing the channel, cancelled in Telegram by the
        bot that sold each, then recorded (a retry finds them cancelled, or cancels again,
        which Telegram takes)."""
        async with connection(self.pool) as conn:
            cur = await conn.execute(
                Q["stars_to_stop"],
                {"person_id": access.person_id, "channel_id": access.channel_id},
            )
            renewing = await cur.fetchall()
        for row in renewing:
            token = self.tokens(int(row["bot_id"]))
            if token is None:
                raise AccessFailed(f"bot {row['bot_id']}, which sold the renewal, is not active")
            try:
                await self.api.call(
                    token,
                    "editUserStarSubscription",
                    {
                        "user_id": ctx.telegram_user_id,
                        "telegram_payment_charge_id": str(row["first_charge_id"]),
                        "is_canceled": True,
                    },
                )
            except BadRequest as error:
                # Telegram knows no such renewal: nothing to stop there; left as recorded.
                log.warning("renewal %d not cancelled: %s", row["id"], error.description)
                continue
            async with connection(self.pool) as conn:
                await conn.execute(
                    Q["cancel_star_subscription"], {"id": row["id"], "now": self.clock.now()}
                )

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
