"""Who gets into a paid channel: join requests answered by payment, intruders removed.

- `chat_join_request` (keyed by the requester, so their updates stay in order): a person with
  an active or grace membership, or on the channel's whitelist, is approved; anyone else gets a
  private message through `user_chat_id` with the pay link (it works only while the request is
  pending) and then the request is declined.
- `/link` ("send my link again"): for each paid channel this bot manages where the person has
  an active or grace membership and is not inside yet, the link sent last is revoked and a
  fresh single-use one sent (the join-request link for `join_request` channels).
- A `chat_member` join to a paid channel, seen by its manager bot, by someone who is not an
  admin (by the join's status, or on the list getChatAdministrators gave when the bot's rights
  were last checked), not entitled and not whitelisted is removed (ban, then unban
  `only_if_banned`) and, when the bot may write to them, told how to pay.

Every Telegram call is a queued reply in the update's transaction, in the person's lane, so a
message goes out before the decline that would make it undeliverable. Bans and approvals are
not messages: they count against the bot's overall rate only.
"""

from __future__ import annotations

import datetime as dt
import html
from dataclasses import dataclass
from typing import Any

from botedge import sqlq
from botedge.db import connection
from botedge.ids import ChatId
from botedge.outbox_store import Reply
from botedge.routing import Context, Routes, Visit
from botedge.standing import FOR_PAYING, pay_message, standing
from botedge.telegram import BadRequest, ServerError, TooManyRequests, retry_later
from botedge.updates import InboxRow
from botedge.words import isolate, msg, user
from shared.clock import SYSTEM_CLOCK, Clock
from shared.db import Connection, Pool

Q = sqlq.Q


NO_ACCESS = msg(
    "link.no_access",
    "You have no paid access through this bot. Open a channel's pay link to join one.",
)
ALREADY_IN = msg("link.already_in", "You are already in {title}.")
LINK_ONCE = msg(
    "link.once", "Your link to {title}: it works once, and the one sent before no longer does."
)
LINK_ASK = msg(
    "link.ask", "Your link to {title}: ask to join, and your request is approved at once."
)
JOIN = msg("link.join", "Join {title}")


class Admission:
    """The feature: join requests and `/link`. (Intruders are seen in the gate's
    `chat_member` route.)"""

    def __init__(self, pool: Pool, invite_hours: float = 24.0, clock: Clock = SYSTEM_CLOCK) -> None:
        self.pool = pool
        self.invite_hours = invite_hours
        self.clock = clock

    def register(self, routes: Routes) -> None:
        routes.kinds["chat_join_request"] = JoinRequest()
        routes.commands["/link"] = ResendLinks(self)


@dataclass(frozen=True)
class Resent:
    channel_id: int
    person_id: int
    title: str
    link: str | None
    single_use: bool


class ResendLinks:
    """`/link`: the Telegram calls (revoke, create) in `prepare`; the record and the message
    in the transaction. A retried update may leave an extra unused link, never a usable one
    the member was not sent."""

    def __init__(self, feature: Admission) -> None:
        self.feature = feature

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> list[Resent]:
        user = update.sender_id
        async with connection(self.feature.pool) as conn:
            cur = await conn.execute(
                Q["links_to_resend"], {"bot_id": update.bot_id, "user_id": user}
            )
            rows = [dict(row) for row in await cur.fetchall()]
        resent = []
        for row in rows:
            title = str(row["title"]) or "the channel"
            base = (int(row["channel_id"]), int(row["person_id"]), title)
            if row["inside"]:
                resent.append(Resent(*base, None, False))
            elif row["admission"] == "join_request" and row["join_request_link"]:
                resent.append(Resent(*base, str(row["join_request_link"]), False))
            else:
                link = await self._fresh(ctx, int(row["telegram_chat_id"]), row["last_link"])
                resent.append(Resent(*base, link, True))
        return resent

    async def _fresh(self, ctx: Context, chat: int, last: str | None) -> str:
        expire = self.feature.clock.now() + dt.timedelta(hours=self.feature.invite_hours)
        try:
            if last:
                try:
                    await ctx.api.call(
                        ctx.token, "revokeChatInviteLink", {"chat_id": chat, "invite_link": last}
                    )
                except BadRequest:
                    pass  # already expired, used up or unknown: nothing left to revoke
            made = await ctx.api.call(
                ctx.token,
                "createChatInviteLink",
                {"chat_id": chat, "member_limit": 1, "expire_date": int(expire.timestamp())},
            )
        except (ServerError, TooManyRequests) as error:
            raise retry_later("invite link", error) from None
        return str(made["invite_link"])

    async def apply(self, conn: Connection, visit: Visit, resent: list[Resent]) -> list[Reply]:
        chat_id, say = visit.update.chat_key, visit.say
        if not resent:
            return [Reply(chat_id, "sendMessage", {"chat_id": chat_id, "text": say(NO_ACCESS)})]
        replies = []
        for one in resent:
            if one.link is None:
                text, markup = say(ALREADY_IN, title=user(one.title)), None
            else:
                if one.single_use:
                    await conn.execute(
                        Q["keep_access_link"],
                        {
                            "channel_id": one.channel_id,
                            "person_id": one.person_id,
                            "link": one.link,
                            "now": visit.now,
                        },
                    )
                text = say(LINK_ONCE if one.single_use else LINK_ASK, title=user(one.title))
                label = say(JOIN, title=user(one.title))[:64]
                markup = {"inline_keyboard": [[{"text": label, "url": one.link}]]}
            payload: dict[str, Any] = {"chat_id": chat_id, "text": text}
            if markup:
                payload["reply_markup"] = markup
            replies.append(Reply(chat_id, "sendMessage", payload))
        return replies


class JoinRequest:
    """`chat_join_request`: decided from the database alone."""

    reads_telegram = False

    async def prepare(self, ctx: Context, update: InboxRow, arg: str) -> None:
        return None

    async def apply(self, conn: Connection, visit: Visit, prepared: None) -> list[Reply]:
        body = visit.update.body
        chat = (body.get("chat") or {}).get("id")
        user = (body.get("from") or {}).get("id")
        if not isinstance(chat, int) or not isinstance(user, int):
            return []
        found = await standing(conn, visit.update.bot_id, chat, user)
        if found is None or not found.is_paid:
            # Not ours to decide: the owner answers requests to other chats.
            return []
        if found.manager_bot_id not in (None, visit.update.bot_id):
            # Another admin bot of the channel got it too: its manager answers, once.
            return []
        target = {"chat_id": chat, "user_id": user}
        if found.entitled:
            return [Reply(ChatId(user), "approveChatJoinRequest", target)]
        write_to = body.get("user_chat_id")
        replies = []
        if isinstance(write_to, int):
            title = isolate(html.escape(found.title, quote=False))
            text = visit.say(FOR_PAYING, title=title)
            replies.append(pay_message(write_to, found, text, visit.say))
        replies.append(Reply(ChatId(user), "declineChatJoinRequest", target))
        return replies
