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
from typing import Any

from botedge import outbox_store, sqlq
from botedge.db import connection
from botedge.events import Event, EventQueue, EventTable
from botedge.telegram import BadRequest, BotApi
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Pool

log = logging.getLogger("botedge.access")
Q = sqlq.Q

ACCESS_EVENTS = EventTable("access_events", ("person_id", "channel_id"))
STAFF = frozenset({"creator", "administrator"})


def _renew_button(context: dict[str, Any], channel_id: int, text: str = "Renew") -> dict[str, Any]:
    """A button to `/start pay_<channel>` through the manager bot; nothing without its name."""
    username = context.get("bot_username")
    if not username:
        return {}
    url = f"https://t.me/{username}?start=pay_{channel_id}"
    return {"reply_markup": {"inline_keyboard": [[{"text": text, "url": url}]]}}


# What a checkout that did not pay tells the person, by the notice's kind.
CHECKOUT_ENDED = {
    "checkout_declined": "Your payment for {title} did not go through, and nothing was charged."
    " Press below to try again, with the same or another way to pay.",
    "checkout_lapsed": "Your link to pay for {title} has expired unpaid. Press below for a new"
    " one.",
}


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
        row = event.row
        async with connection(self.pool) as conn:
            cur = await conn.execute(
                Q["access_context"],
                {
                    "channel_id": row["channel_id"],
                    "person_id": row["person_id"],
                    "membership_event_id": row["membership_event_id"],
                },
            )
            context = await cur.fetchone()
        if context is None:
            raise AccessFailed("the channel or the person is gone")
        bot_id = context["manager_bot_id"]
        if bot_id is None:
            raise AccessFailed("the channel has no manager bot")
        token = self.tokens(int(bot_id))
        if token is None:
            raise AccessFailed(f"manager bot {bot_id} is not active")
        chat = int(context["telegram_chat_id"])
        user = int(context["telegram_user_id"])
        title = str(context["title"]) or "the channel"
        kind = row["kind"]
        renew = _renew_button(context, int(row["channel_id"]))
        message: dict[str, Any] | None
        if kind == "grant" and context["inside"]:
            # Already in the channel (a renewal, an imported member): no link to send.
            message = None if context["cause"] == "grant" else self._extended(title, row)
        elif kind == "grant":
            welcome = context["from_status"] == "expired"
            if context["admission"] == "join_request":
                message = await self._join_request_grant(token, chat, title, context, row)
            else:
                message = await self._grant(token, chat, title, event, welcome)
        elif kind == "expiry_notice":
            message = self._notice(title, context, row, renew)
        elif kind in CHECKOUT_ENDED:
            message = {
                "text": CHECKOUT_ENDED[kind].format(title=title),
                **_renew_button(context, int(row["channel_id"]), "Try again"),
            }
        elif kind == "reminder":
            message = {**self._reminder(title, context), **renew}
        else:
            message = await self._revoke(token, chat, user, title)
            if message is not None:
                message = {**message, **renew}
        async with connection(self.pool) as conn, conn.transaction():
            if message is not None and kind == "grant" and "link" in message:
                await conn.execute(
                    Q["keep_access_link"],
                    {
                        "channel_id": row["channel_id"],
                        "person_id": row["person_id"],
                        "link": message.pop("link"),
                        "now": self.clock.now(),
                    },
                )
            if message is not None:
                await outbox_store.queue_reply(
                    conn,
                    int(bot_id),
                    user,
                    "sendMessage",
                    {"chat_id": user, **message},
                    key=f"access:{event.id}",
                )
            await self.queue.finish(conn, event)

    async def _grant(
        self, token: str, chat: int, title: str, event: Event, welcome: bool
    ) -> dict[str, Any]:
        expire = self.clock.now() + dt.timedelta(hours=self.invite_hours)
        link = await self.api.call(
            token,
            "createChatInviteLink",
            {
                "chat_id": chat,
                "member_limit": 1,
                "expire_date": int(expire.timestamp()),
                "name": f"access {event.id}"[:32],
            },
        )
        url = str(link["invite_link"])
        text = f"Payment received: your access to {title} is open. The link works once."
        if welcome:
            text = (
                f"Welcome back! Payment received: your access to {title} is open again. "
                "The link works once."
            )
        return {
            "link": url,
            "text": text,
            "reply_markup": {"inline_keyboard": [[{"text": f"Join {title}"[:64], "url": url}]]},
        }

    async def _join_request_grant(
        self,
        token: str,
        chat: int,
        title: str,
        context: dict[str, Any],
        row: dict[str, Any],
    ) -> dict[str, Any]:
        """The channel's one join-request link (made once, kept on the channel): a request
        through it from a payer is approved at once."""
        url = context["join_request_link"]
        if not url:
            made = await self.api.call(
                token,
                "createChatInviteLink",
                {"chat_id": chat, "creates_join_request": True, "name": "Gatehouse members"},
            )
            async with connection(self.pool) as conn:
                cur = await conn.execute(
                    Q["keep_join_request_link"],
                    {"channel_id": row["channel_id"], "link": str(made["invite_link"])},
                )
                kept = await cur.fetchone()
            url = kept["join_request_link"] if kept else made["invite_link"]
        return {
            "text": (
                f"Payment received: your access to {title} is open. Ask to join with this "
                "link; your request is approved at once."
            ),
            "reply_markup": {"inline_keyboard": [[{"text": f"Join {title}"[:64], "url": url}]]},
        }

    def _extended(self, title: str, row: dict[str, Any]) -> dict[str, Any]:
        ends = row["expires_at"].astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        return {"text": f"Payment received: your access to {title} now runs to {ends}."}

    def _notice(
        self,
        title: str,
        context: dict[str, Any],
        row: dict[str, Any],
        renew: dict[str, Any],
    ) -> dict[str, Any] | None:
        """None when the membership was renewed (or ended) since the notice was written."""
        if (
            context["membership_status"] != "active"
            or context["membership_expires_at"] != (row["expires_at"])
        ):
            log.info("access event %d: notice for a period that is over; dropped", row["id"])
            return None
        hours = int(row["notice_hours"])
        left = f"{hours // 24} days" if hours % 24 == 0 and hours >= 48 else f"{hours} hours"
        if hours == 24:
            left = "1 day"
        ends = row["expires_at"].astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        if context["star_renewal"] == "active":
            return {
                "text": f"Your Stars subscription to {title} renews on {ends}: Telegram takes "
                "the Stars then, and your access goes on. Nothing to do."
            }
        cancelled = ""
        if context["star_renewal"] == "canceled":
            cancelled = " You cancelled its renewal, so no Stars are taken."
        return {
            "text": f"Your access to {title} ends in {left}, on {ends}.{cancelled} Renew to stay.",
            **renew,
        }

    def _reminder(self, title: str, context: dict[str, Any]) -> dict[str, Any]:
        ends = context["membership_expires_at"]
        grace = int(context["grace_days"] or 0)
        left = 0
        if ends is not None:
            seconds = (ends + dt.timedelta(days=grace) - self.clock.now()).total_seconds()
            left = max(0, math.ceil(seconds / 86400))
        days = "1 day" if left == 1 else f"{left} days"
        cancelled = ""
        if context["star_renewal"] == "canceled":
            cancelled = " You cancelled its renewal, so none is coming."
        return {
            "text": f"Your subscription to {title} has ended.{cancelled} Renew within {days} "
            "to stay."
        }

    async def _revoke(self, token: str, chat: int, user: int, title: str) -> dict[str, Any] | None:
        try:
            member = await self.api.call(token, "getChatMember", {"chat_id": chat, "user_id": user})
        except BadRequest as error:
            if "user not found" not in error.description.lower():
                raise
            member = {"status": "left"}
        if isinstance(member, dict) and member.get("status") in STAFF:
            log.info("not removing %d from %d: they run the chat", user, chat)
            return None
        await self.api.call(token, "banChatMember", {"chat_id": chat, "user_id": user})
        await self.api.call(
            token, "unbanChatMember", {"chat_id": chat, "user_id": user, "only_if_banned": True}
        )
        return {"text": f"Your access to {title} has ended."}
